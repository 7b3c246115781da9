//! What a follower does with messages no annals host publishes, and how `replicate` and
//! `follow` say what they wait for: each case against a real `nats-server`, the hostile
//! message published directly with async-nats, the commands run as processes.

use annals::testing::setup::ExpectDone;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use annals::replication::wire::{FRAME_VERSION, Frame, stored_bytes};
use annals::replication::{Follower, FollowerOptions, ReplicatedLog, ReplicationError, connect};
use annals::{ExpectedVersion, NewEvent, Position, Record, Store, StoreOptions, log::Limits};
use async_nats::jetstream::context::Publish;
use async_nats::jetstream::{self, stream};

use crate::cluster::Cluster;

/// How long a process may take to do what the test waits for before the test fails: it
/// bounds a failure (a process that hangs), never a success.
const DEADLINE: Duration = Duration::from_secs(120);
/// The pause between two looks at a running process.
const POLL: Duration = Duration::from_millis(50);
/// The sound records published before the hostile message.
const SOUND: u64 = 3;

fn annals() -> Command {
    Command::new(crate::ANNALS)
}

/// Kills the process when the test fails half-way.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

impl Running {
    /// Starts `annals <args>` with its standard error into `stderr`.
    fn start(args: &[&str], stderr: &Path) -> Running {
        let child = annals()
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(stderr).expect("a file for its standard error"))
            .spawn()
            .expect("start the annals binary");
        Running(child)
    }

    /// Waits for it to exit on its own.
    fn exited(&mut self, what: &str) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().expect("the process's state") {
                return status;
            }
            assert!(started.elapsed() < DEADLINE, "{what} never exited");
            std::thread::sleep(POLL);
        }
    }

    /// Waits until its standard error (in `stderr`) has a line containing `line`.
    fn said(&mut self, stderr: &Path, line: &str) -> String {
        let started = Instant::now();
        loop {
            let said = std::fs::read_to_string(stderr).unwrap_or_default();
            if said.lines().any(|said| said.contains(line)) {
                return said;
            }
            if let Some(status) = self.0.try_wait().expect("the process's state") {
                panic!("it exited ({status}) without saying {line:?}: {said}");
            }
            assert!(
                started.elapsed() < DEADLINE,
                "it never said {line:?}: {said}"
            );
            std::thread::sleep(POLL);
        }
    }

    /// Sends SIGTERM and waits for it to exit.
    fn terminate(&mut self) -> ExitStatus {
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.0.id().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success());
        self.0.wait().expect("the process reaped")
    }
}

/// A writer's log under limits wider than the defaults: `SOUND` small records, then the one
/// `last` makes (at position `SOUND`), which a store of default limits may refuse.
fn writer_records(dir: &Path, last: NewEvent) -> Vec<Record> {
    let options = StoreOptions {
        limits: Limits {
            payload_bytes_max: 4 << 20,
            kind_bytes_max: 256,
            ..Limits::default()
        },
        create: true,
        ..StoreOptions::default()
    };
    let store = Store::open_with(dir.join("writer.redb"), options).expect("the writer's log");
    for i in 0..SOUND {
        let event = NewEvent::new("job.done", 1_000 + i, vec![b'a'; 10]);
        store
            .append("jobs", ExpectedVersion::Any, &[event])
            .expect("a sound record")
            .expect_done();
    }
    store
        .append("jobs", ExpectedVersion::Any, &[last])
        .expect("the writer takes it under its own limits")
        .expect_done();
    (0..=SOUND)
        .map(|p| {
            store
                .snapshot()
                .unwrap()
                .get(Position(p))
                .unwrap()
                .expect("a record")
        })
        .collect()
}

/// One record framed as a publisher frames it, and its message id.
fn framed(record: &Record) -> (Vec<u8>, String) {
    let frame = Frame::new(record.position, &stored_bytes(record).unwrap(), record.hash)
        .expect("a record that fits a message");
    let id = frame.message_id();
    (frame.into_bytes(), id)
}

/// One record framed by hand, whatever its size.
fn framed_by_hand(record: &Record) -> Vec<u8> {
    let stored = stored_bytes(record).unwrap();
    let mut bytes = vec![FRAME_VERSION];
    bytes.extend_from_slice(&record.position.0.to_le_bytes());
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&u32::try_from(stored.len()).unwrap().to_le_bytes());
    bytes.extend_from_slice(&stored);
    bytes
}

/// Publishes `payload` on `subject`, with `id` as its `Nats-Msg-Id` if given, and waits for
/// the stream to store it.
async fn publish(js: &jetstream::Context, subject: &str, payload: Vec<u8>, id: Option<String>) {
    let mut message = Publish::build().payload(payload.into());
    if let Some(id) = id {
        message = message.message_id(id);
    }
    js.send_publish(subject.to_owned(), message)
        .await
        .expect("the publish sent")
        .await
        .expect("the stream stores it");
}

/// A log's stream on one server, holding the first `SOUND` of `records` as a publisher
/// would have published them.
async fn stream_with_sound_records(
    server: &Cluster,
    subject: &str,
    records: &[Record],
) -> jetstream::Context {
    let js = connect(&server.urls()).await.expect("a connection");
    let log = ReplicatedLog::new(subject).unwrap().with_replicas(1);
    let _ = log.prepare(&js).await.expect("the stream");
    for record in &records[..SOUND as usize] {
        let (payload, id) = framed(record);
        publish(&js, subject, payload, Some(id)).await;
    }
    js
}

/// Runs `annals follow` into a new log until it stops on its own; it must refuse (exit 1)
/// saying `because`, and keep the sound records and nothing of the hostile message.
fn follow_refuses(server: &Cluster, dir: &Path, subject: &str, records: &[Record], because: &str) {
    let replica = dir.join("replica.redb");
    let stderr = dir.join("follow.err");
    let mut follow = Running::start(
        &["follow", &server.urls(), subject, replica.to_str().unwrap()],
        &stderr,
    );
    let status = follow.exited("follow, given a hostile message");
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(status.code(), Some(1), "follow said: {said}");
    let message = format!("message {} is refused, nothing of it kept", SOUND + 1);
    assert!(said.contains(&message), "follow said: {said}");
    assert!(said.contains(because), "follow said: {said}");
    assert!(
        said.contains(replica.to_str().unwrap()),
        "follow said: {said}"
    );
    let replica = Store::open_read_only(&replica).unwrap();
    let head = replica.snapshot().unwrap().head().unwrap();
    assert_eq!(head.next, Position(SOUND), "the follower kept part of it");
    assert_eq!(head.hash, records[SOUND as usize - 1].hash);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_refuses_a_message_over_the_wire_limit_and_keeps_nothing_of_it() {
    // The server takes messages up to 8 MiB: the follower's own limit must hold.
    let server = Cluster::single("max_payload: 8MB");
    let dir = tempfile::tempdir().unwrap();
    let huge = NewEvent::new("job.done", 2_000, vec![b'x'; 2 << 20]);
    let records = writer_records(dir.path(), huge);
    let subject = "annals.huge";
    let js = stream_with_sound_records(&server, subject, &records).await;
    let last = &records[SOUND as usize];
    let id = annals::replication::wire::message_id(&last.hash);
    publish(&js, subject, framed_by_hand(last), Some(id)).await;
    follow_refuses(
        &server,
        dir.path(),
        subject,
        &records,
        "over the wire limit of 1048576 bytes",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_refuses_a_record_over_its_stores_limits_and_keeps_nothing_of_it() {
    let server = Cluster::single("");
    let dir = tempfile::tempdir().unwrap();
    // A kind of 200 bytes: within the format's cap, over the store's default 128.
    let long_kind = NewEvent::new("k".repeat(200), 2_000, vec![b'x'; 10]);
    let records = writer_records(dir.path(), long_kind);
    let subject = "annals.limits";
    let js = stream_with_sound_records(&server, subject, &records).await;
    let (payload, id) = framed(&records[SOUND as usize]);
    publish(&js, subject, payload, Some(id)).await;
    follow_refuses(
        &server,
        dir.path(),
        subject,
        &records,
        &format!("its record at position {SOUND}"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_refuses_a_message_without_its_id_and_keeps_nothing_of_it() {
    let server = Cluster::single("");
    let dir = tempfile::tempdir().unwrap();
    let sound = NewEvent::new("job.done", 2_000, vec![b'x'; 10]);
    let records = writer_records(dir.path(), sound);
    let subject = "annals.anonymous";
    let js = stream_with_sound_records(&server, subject, &records).await;
    // A sound record that chains, published without the id every publisher sets.
    let (payload, _) = framed(&records[SOUND as usize]);
    publish(&js, subject, payload, None).await;
    follow_refuses(&server, dir.path(), subject, &records, "has no Nats-Msg-Id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_frame_is_reported_at_the_position_it_sat_at() {
    let server = Cluster::single("");
    let dir = tempfile::tempdir().unwrap();
    let sound = NewEvent::new("job.done", 2_000, vec![b'x'; 10]);
    let records = writer_records(dir.path(), sound);
    let subject = "annals.damaged";
    let js = stream_with_sound_records(&server, subject, &records).await;
    let (sound_payload, sound_id) = framed(&records[SOUND as usize]);
    let mut payload = sound_payload.clone();
    payload[0] = FRAME_VERSION + 8;
    publish(&js, subject, payload, Some("damaged".into())).await;
    let replica = Arc::new(Store::open(dir.path().join("replica.redb")).unwrap());
    let log = ReplicatedLog::new(subject).unwrap();
    let follower = Follower::new(
        Arc::clone(&replica),
        js.clone(),
        log,
        FollowerOptions::default(),
    )
    .expect("a follower");
    let damaged_at = |caught: Result<Position, ReplicationError>| match caught {
        Err(error @ ReplicationError::Damaged { .. }) => {
            let shown = error.to_string();
            let ReplicationError::Damaged {
                position, message, ..
            } = error
            else {
                unreachable!()
            };
            assert_eq!(message, Some(4), "{shown}");
            assert!(shown.contains("message 4"), "{shown}");
            position
        }
        other => panic!("expected the damaged frame refused, got {other:?}"),
    };
    // As the stream's last message, read when the follower starts.
    assert_eq!(damaged_at(follower.catch_up().await), Position(SOUND));
    // As a message the follower reads on its way, a sound one after it.
    publish(&js, subject, sound_payload, Some(sound_id)).await;
    assert_eq!(damaged_at(follower.catch_up().await), Position(SOUND));
    assert_eq!(
        replica.snapshot().unwrap().head().unwrap().next,
        Position(SOUND)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_at_a_gap_in_the_stream_says_which_position_it_waits_for() {
    let server = Cluster::single("");
    let dir = tempfile::tempdir().unwrap();
    let sound = NewEvent::new("job.done", 2_000, vec![b'x'; 10]);
    let records = writer_records(dir.path(), sound);
    let subject = "annals.gap";
    let js = connect(&server.urls()).await.expect("a connection");
    // The stream as `ReplicatedLog` makes it, but one whose messages can be deleted.
    let config = stream::Config {
        name: "ANNALS_annals_gap".into(),
        subjects: vec![subject.into()],
        storage: stream::StorageType::File,
        ..Default::default()
    };
    let stream = js.create_stream(config).await.expect("the stream");
    for record in &records {
        let (payload, id) = framed(record);
        publish(&js, subject, payload, Some(id)).await;
    }
    assert!(stream.delete_message(2).await.expect("message 2 deleted"));
    let replica = dir.path().join("replica.redb");
    let stderr = dir.path().join("follow.err");
    let mut follow = Running::start(
        &["follow", &server.urls(), subject, replica.to_str().unwrap()],
        &stderr,
    );
    let waits = "waiting for position 1: the stream's message 3 starts at position 2";
    let _ = follow.said(&stderr, waits);
    let status = follow.terminate();
    assert!(status.success(), "follow after SIGTERM: {status}");
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(
        said.lines().filter(|line| line.contains(waits)).count(),
        1,
        "said once, not at every look: {said}"
    );
    let replica = Store::open_read_only(&replica).unwrap();
    assert_eq!(
        replica.snapshot().unwrap().head().unwrap().next,
        Position(1)
    );
}

/// A log of a few records for `replicate`.
fn small_log(path: &Path) {
    let store = Store::open(path).unwrap();
    let events: Vec<NewEvent> = (0..5)
        .map(|i| NewEvent::new("job.done", 1_000 + i, vec![b'a'; 10]))
        .collect();
    store
        .append("jobs", ExpectedVersion::Any, &events)
        .unwrap()
        .expect_done();
}

#[test]
fn replicate_and_follow_give_up_on_an_unreachable_server_after_their_wait() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("log.redb");
    small_log(&db);
    let db = db.to_str().unwrap();
    let url = "nats://127.0.0.1:1";
    let replica = dir.path().join("replica.redb");
    let runs: [&[&str]; 2] = [
        &["replicate", db, url, "--wait", "200ms"],
        &[
            "follow",
            url,
            "annals.away",
            replica.to_str().unwrap(),
            "--wait",
            "200ms",
        ],
    ];
    for args in runs {
        let stderr = dir.path().join("err");
        let status = Running::start(args, &stderr).exited("a command given no server");
        let said = std::fs::read_to_string(&stderr).unwrap();
        assert_eq!(status.code(), Some(2), "{args:?} said: {said}");
        assert!(
            said.contains(&format!("no NATS server answered at {url} within 200 ms")),
            "{args:?} said: {said}"
        );
    }
}

#[test]
fn replicate_on_a_single_server_creates_its_stream_with_one_replica_and_says_so() {
    let server = Cluster::single("");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("log.redb");
    small_log(&db);
    let (db, urls) = (db.to_str().unwrap(), server.urls());
    let stderr = dir.path().join("replicate.err");
    let mut replicate = Running::start(
        &["replicate", db, &urls, "--subject", "annals.single"],
        &stderr,
    );
    let said = replicate.said(&stderr, "5 records stored by the stream");
    assert!(
        said.contains("gets 1 replica(s): the server is not clustered"),
        "replicate said: {said}"
    );
    assert!(
        said.contains("created the stream ANNALS_annals_single with 1 replica(s)"),
        "replicate said: {said}"
    );
    assert!(replicate.terminate().success());

    // Asked for more replicas than one server holds: said at once, exit 2.
    let stderr = dir.path().join("three.err");
    let args = [
        "replicate",
        db,
        &urls,
        "--subject",
        "annals.three",
        "--replicas",
        "3",
    ];
    let status = Running::start(&args, &stderr).exited("replicate asked for 3 replicas");
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(status.code(), Some(2), "replicate said: {said}");
    assert!(
        said.contains("NATS refused to create the stream ANNALS_annals_three")
            && said.contains("replicas > 1 not supported"),
        "replicate said: {said}"
    );
}

#[test]
fn follow_with_its_standard_error_closed_ends_quietly() {
    let server = Cluster::single("");
    let dir = tempfile::tempdir().unwrap();
    let replica = dir.path().join("replica.redb");
    // `annals -vv follow ... 2>&1 | head`: the reader of its output gone before it writes.
    let mut child = annals()
        .args(["-vv", "follow", &server.urls(), "annals.pipe"])
        .arg(&replica)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the annals binary");
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = Running(child).exited("follow with its output closed");
    assert_eq!(status.code(), Some(0), "follow: {status}");
}

/// A `nats-server` started without JetStream (no `-js`), on a free port, killed when dropped.
struct PlainServer {
    process: Child,
    url: String,
}

impl PlainServer {
    fn start() -> PlainServer {
        let port = crate::cluster::free_port();
        let process = Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server on the PATH (apt-get install nats-server)");
        let address = format!("127.0.0.1:{port}");
        let started = Instant::now();
        // Polled, not timed: the server is up when it accepts a connection.
        while std::net::TcpStream::connect(&address).is_err() {
            assert!(started.elapsed() < DEADLINE, "nats-server never listened");
            std::thread::sleep(POLL);
        }
        PlainServer {
            process,
            url: format!("nats://{address}"),
        }
    }
}

impl Drop for PlainServer {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

#[test]
fn replicate_follow_and_seed_say_a_server_without_jetstream_needs_js() {
    let server = PlainServer::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("log.redb");
    small_log(&db);
    let db = db.to_str().unwrap();
    let replica = dir.path().join("replica.redb");
    let replica = replica.to_str().unwrap();
    let url = server.url.as_str();
    // A wait far longer than the check's own: the answer must not wait it out.
    let runs: [&[&str]; 3] = [
        &["replicate", db, url, "--wait", "600s"],
        &["follow", url, "annals.log", replica, "--wait", "600s"],
        &["seed", db, url, "--wait", "600s"],
    ];
    for args in runs {
        let stderr = dir.path().join("err");
        let status = Running::start(args, &stderr).exited("a command given a plain server");
        let said = std::fs::read_to_string(&stderr).unwrap();
        assert_eq!(status.code(), Some(2), "{args:?} said: {said}");
        assert!(
            said.contains("has no JetStream") && said.contains("nats-server -js"),
            "{args:?} said: {said}"
        );
    }
    assert!(
        !Path::new(replica).exists(),
        "follow made no replica of a stream it could not reach"
    );
}

#[test]
fn an_empty_nats_address_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("log.redb");
    small_log(&db);
    for url in ["", " ", "nats://127.0.0.1:4222,"] {
        let stderr = dir.path().join("err");
        let args = ["replicate", db.to_str().unwrap(), url, "--wait", "600s"];
        let status = Running::start(&args, &stderr).exited("a command given no address");
        let said = std::fs::read_to_string(&stderr).unwrap();
        assert_eq!(status.code(), Some(2), "{url:?} said: {said}");
        assert!(said.contains("empty address"), "{url:?} said: {said}");
    }
}
