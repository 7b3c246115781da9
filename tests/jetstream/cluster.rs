//! A 3-node JetStream cluster of real `nats-server` processes on loopback ports, its data in a
//! temporary directory; every node is killed when the `Cluster` is dropped.
//!
//! A node's ports are chosen here and written into its configuration, so a port must stay free
//! from its choice until the node binds it. Ports the kernel hands out for `bind(0)` and
//! outgoing connections (its ephemeral range) do not: a route connection of another cluster
//! took one once, the node could not listen for routes and exited, and the cluster never had
//! the three peers a replicated stream needs. So ports are picked below that range, never
//! twice by this process, and checked free; and a cluster whose nodes are not all ready (their
//! log says so, their process runs) is started again on other ports.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

use std::sync::Arc;

use annals::Store;
use annals::replication::{Follower, FollowerOptions, ReplicatedLog, connect};

/// One node: its ports, its configuration file and, while it runs, its process.
struct Node {
    client_port: u16,
    config: PathBuf,
    log: PathBuf,
    /// Whether it is routed to other nodes (a cluster's, not `single`'s).
    routed: bool,
    process: Option<Child>,
}

/// The cluster; see the module docs.
pub struct Cluster {
    nodes: Vec<Node>,
    dir: tempfile::TempDir,
}

/// Ports this process handed out, never handed out again.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// The ports picked from: below Linux's default ephemeral range (32768–60999), above the
/// well-known and most registered ones.
const PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A loopback port nothing listens on now, that no outgoing connection can take (see the
/// module docs), and that this process never handed out before.
pub fn free_port() -> u16 {
    let mut handed_out = HANDED_OUT.lock().expect("the ports handed out");
    // Where to start looking: apart for processes running at once, the same for no two.
    let seed = std::process::id() as u64
        ^ u64::from(
            std::time::UNIX_EPOCH
                .elapsed()
                .map_or(0, |t| t.subsec_nanos()),
        );
    let span = u64::from(PORTS.end - PORTS.start);
    for step in 0..span {
        let port = PORTS.start + ((seed.wrapping_mul(2_654_435_761) + step) % span) as u16;
        if handed_out.contains(&port) || TcpListener::bind(("127.0.0.1", port)).is_err() {
            continue;
        }
        handed_out.insert(port);
        return port;
    }
    panic!("no free loopback port in {PORTS:?}");
}

/// How long a node may take to say it is ready.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(20);
/// Clusters started before one whose nodes are all ready is given up.
const STARTS_MAX: usize = 5;

impl Cluster {
    /// Starts `size` nodes routed to each other, and waits until each is ready; on other
    /// ports, again, when one is not.
    pub fn start(size: usize) -> Cluster {
        Cluster::started(|| Cluster::configure(size))
    }

    /// A cluster `configure` sets up, started; configured and started again (on other ports)
    /// while one of its nodes is not ready.
    fn started(configure: impl Fn() -> Cluster) -> Cluster {
        let mut failures = Vec::new();
        for _ in 0..STARTS_MAX {
            let mut cluster = configure();
            match (0..cluster.nodes.len()).try_for_each(|index| cluster.try_restart(index)) {
                Ok(()) => return cluster,
                Err(failure) => failures.push(failure),
            }
        }
        panic!("no cluster came up: {failures:#?}");
    }

    /// `size` nodes' ports and configurations, none of them started.
    fn configure(size: usize) -> Cluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ports: Vec<(u16, u16)> = (0..size).map(|_| (free_port(), free_port())).collect();
        let routes: Vec<String> = ports
            .iter()
            .map(|(_, route)| format!("nats-route://127.0.0.1:{route}"))
            .collect();
        // A name of its own: a node of another cluster reached by mistake is not taken in.
        let name = format!("annals-{}", ports[0].0);
        let mut nodes = Vec::new();
        for (index, (client_port, route_port)) in ports.iter().enumerate() {
            let store = dir.path().join(format!("n{index}"));
            let config = dir.path().join(format!("n{index}.conf"));
            let text = format!(
                "server_name: n{index}\nlisten: 127.0.0.1:{client_port}\n\
                 jetstream {{ store_dir: {store:?} }}\n\
                 cluster {{\n  name: {name}\n  listen: 127.0.0.1:{route_port}\n  routes: [{}]\n}}\n",
                routes.join(", ")
            );
            std::fs::write(&config, text).expect("the node's configuration");
            nodes.push(Node {
                client_port: *client_port,
                config,
                log: dir.path().join(format!("n{index}.log")),
                routed: true,
                process: None,
            });
        }
        Cluster { nodes, dir }
    }

    /// One JetStream server that is not clustered (the example in docs/replication.md), with
    /// `settings` added to its configuration (e.g. `max_payload: 8MB`).
    pub fn single(settings: &str) -> Cluster {
        Cluster::started(|| Cluster::configure_single(settings))
    }

    /// `single`'s port and configuration, not started.
    fn configure_single(settings: &str) -> Cluster {
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
            routed: false,
            process: None,
        }];
        Cluster { nodes, dir }
    }

    /// The folder holding every node's configuration, log and JetStream data.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
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

    /// Starts node `index` (again), on its ports and data, and waits until it is ready.
    pub fn restart(&mut self, index: usize) {
        if let Err(failure) = self.try_restart(index) {
            panic!("{failure}");
        }
    }

    /// Starts node `index` and waits until its log says it is ready (every listener bound),
    /// or says why it is not: its process ended, or [`READY_WAIT`] passed.
    fn try_restart(&mut self, index: usize) -> Result<(), String> {
        let node = &mut self.nodes[index];
        let log = std::fs::File::create(&node.log).expect("the node's log file");
        let process = Command::new("nats-server")
            .arg("-c")
            .arg(&node.config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("nats-server on the PATH (apt-get install nats-server)");
        let process = node.process.insert(process);
        let started = std::time::Instant::now();
        // Polled, not timed: the node is ready when its log says so.
        loop {
            let text = std::fs::read_to_string(&node.log).unwrap_or_default();
            // A clustered node says it is ready before it binds its route port (and exits when
            // it cannot), so a node of a cluster is ready once it listens for routes too.
            let clustered = node.routed;
            if text.contains("Server is ready")
                && (!clustered || text.contains("Listening for route connections"))
            {
                return Ok(());
            }
            let ended = process.try_wait().expect("the node's status");
            if ended.is_some() || started.elapsed() > READY_WAIT {
                let _ = process.kill();
                let _ = process.wait();
                node.process = None;
                let why = ended.map_or("it was not ready in time".to_owned(), |status| {
                    status.to_string()
                });
                return Err(format!("nats-server n{index} ({why}) logged:\n{text}"));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
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

/// A follower of `log` into `store`, with the default options.
pub fn follower(
    store: &Arc<Store>,
    jetstream: async_nats::jetstream::Context,
    log: &ReplicatedLog,
) -> Follower {
    Follower::new(
        Arc::clone(store),
        jetstream,
        log.clone(),
        FollowerOptions::default(),
    )
    .expect("a follower")
}
