//! A 3-node JetStream cluster of real `nats-server` processes on loopback ports, its data in a
//! temporary directory; every node is killed when the `Cluster` is dropped.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use annals::replication::{ReplicatedLog, connect};

/// One node: its ports, its configuration file and, while it runs, its process.
struct Node {
    client_port: u16,
    config: PathBuf,
    log: PathBuf,
    process: Option<Child>,
}

/// The cluster; see the module docs.
pub struct Cluster {
    nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

/// A port nothing listens on now (the OS's pick for a listener at once closed).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("its address").port()
}

impl Cluster {
    /// Starts `size` nodes routed to each other, and waits until each takes connections.
    pub fn start(size: usize) -> Cluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ports: Vec<(u16, u16)> = (0..size).map(|_| (free_port(), free_port())).collect();
        let routes: Vec<String> = ports
            .iter()
            .map(|(_, route)| format!("nats-route://127.0.0.1:{route}"))
            .collect();
        let mut nodes = Vec::new();
        for (index, (client_port, route_port)) in ports.iter().enumerate() {
            let store = dir.path().join(format!("n{index}"));
            let config = dir.path().join(format!("n{index}.conf"));
            let text = format!(
                "server_name: n{index}\nlisten: 127.0.0.1:{client_port}\n\
                 jetstream {{ store_dir: {store:?} }}\n\
                 cluster {{\n  name: annals\n  listen: 127.0.0.1:{route_port}\n  routes: [{}]\n}}\n",
                routes.join(", ")
            );
            std::fs::write(&config, text).expect("the node's configuration");
            nodes.push(Node {
                client_port: *client_port,
                config,
                log: dir.path().join(format!("n{index}.log")),
                process: None,
            });
        }
        let mut cluster = Cluster { nodes, _dir: dir };
        for index in 0..size {
            cluster.restart(index);
        }
        cluster
    }

    /// One JetStream server that is not clustered (the example in docs/replication.md), with
    /// `settings` added to its configuration (e.g. `max_payload: 8MB`).
    pub fn single(settings: &str) -> Cluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let client_port = free_port();
        let store = dir.path().join("n0");
        let config = dir.path().join("n0.conf");
        let text = format!(
            "server_name: n0\nlisten: 127.0.0.1:{client_port}\n\
             jetstream {{ store_dir: {store:?} }}\n{settings}\n"
        );
        std::fs::write(&config, text).expect("the server's configuration");
        let nodes = vec![Node {
            client_port,
            config,
            log: dir.path().join("n0.log"),
            process: None,
        }];
        let mut cluster = Cluster { nodes, _dir: dir };
        cluster.restart(0);
        cluster
    }

    /// Every node's client URL, comma-separated.
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(|node| format!("nats://127.0.0.1:{}", node.client_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Kills node `index` with SIGKILL (`Child::kill`) and reaps it.
    pub fn kill(&mut self, index: usize) {
        if let Some(mut process) = self.nodes[index].process.take() {
            process.kill().expect("SIGKILL to the node");
            process.wait().expect("the killed node reaped");
        }
    }

    /// Starts node `index` (again), on its ports and data, and waits until it takes
    /// connections.
    pub fn restart(&mut self, index: usize) {
        let node = &mut self.nodes[index];
        let log = std::fs::File::create(&node.log).expect("the node's log file");
        let process = Command::new("nats-server")
            .arg("-c")
            .arg(&node.config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("nats-server on the PATH (apt-get install nats-server)");
        node.process = Some(process);
        let address = format!("127.0.0.1:{}", node.client_port);
        // Polled, not timed: the node is up when it accepts a connection.
        for _ in 0..1_000 {
            if TcpStream::connect(&address).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("nats-server n{index} never listened on {address}");
    }

    /// Connects to the cluster and waits until JetStream can hold a replicated stream.
    pub async fn jetstream(&self) -> async_nats::jetstream::Context {
        connect(&self.urls())
            .await
            .expect("a connection to the cluster")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for index in 0..self.nodes.len() {
            self.kill(index);
        }
    }
}

/// A log on a subject of the test's own.
pub fn log(name: &str) -> ReplicatedLog {
    ReplicatedLog::new(format!("annals.{name}")).expect("a valid subject")
}
