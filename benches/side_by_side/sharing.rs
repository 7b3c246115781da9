//! The sharing modes side by side, and a real `annals tail` in another process.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use annals::{ExpectedVersion, NewEvent, Sharing, Store};
use serde_json::Value;

use crate::commands::{group_annals_in, single_annals_in};
use crate::report::SHARING_RATIOS;
use crate::samples::{Commits, Samples};
use crate::two_writers::{Contender, two_writers};
use crate::work::open_new;
use crate::{EPOCH_MS, GROUP_TASKS, Settings};

pub(crate) const MODES: [(Sharing, &str, &str); 3] = [
    (
        Sharing::Exclusive,
        "sharing.single_exclusive",
        "sharing.group64_exclusive",
    ),
    (
        Sharing::SingleWriter,
        "sharing.single_single_writer",
        "sharing.group64_single_writer",
    ),
    (
        Sharing::MultiWriter,
        "sharing.single_multi_writer",
        "sharing.group64_multi_writer",
    ),
];

/// Events appended one per commit, each after [`TAIL_GAP`], while `annals tail` follows.
pub(crate) const TAIL_EVENTS: usize = 500;
/// The writer's pause before each of those commits: long enough that the tail is usually idle
/// and polling when a commit lands, as a live log's tail mostly is.
pub(crate) const TAIL_GAP: Duration = Duration::from_millis(2);

/// One round of the sharing figures: single durable commands in each mode, then group commit
/// at 64 tasks in each mode (the modes' order turns from round to round), then the
/// commit-to-tail latency and the writer's rate with and without a tail beside it.
pub(crate) fn run_sharing(
    settings: &Settings,
    runtime: &tokio::runtime::Runtime,
    round: usize,
    samples: &mut Samples,
) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
    let at = |name: &str| dir.path().join(name);
    let mut modes = MODES;
    modes.rotate_left(round % MODES.len());
    for (sharing, single, _) in modes {
        let path = at(&format!("single-{}.redb", sharing.name()));
        samples.push(
            single,
            single_annals_in(&path, sharing, settings.timed).per_s(),
        );
    }
    for (sharing, _, group) in modes {
        let path = at(&format!("group-64-{}.redb", sharing.name()));
        samples.push(
            group,
            runtime.block_on(group_annals_in(&path, sharing, GROUP_TASKS, settings.timed)),
        );
    }
    // Two writer processes at once, the contenders' order turning from round to round.
    let mut contenders = [
        (Contender::Annals, "sharing.two_writers_annals"),
        (Contender::Sqlite, "sharing.two_writers_sqlite"),
    ];
    contenders.rotate_left(round % 2);
    for (contender, key) in contenders {
        let path = at(&format!("{key}.db"));
        samples.push(key, two_writers(contender, &path, settings.timed));
    }
    if let Some(binary) = &settings.tail_binary {
        // The same work with and without the tail, the tail's run first in even rounds.
        let mut runs = [Some(binary.as_path()), None];
        runs.rotate_left(round % 2);
        for tail in runs {
            let name = if tail.is_some() { "tailed" } else { "alone" };
            let run = tail_round(tail, &at(&format!("{name}.redb")), settings.timed);
            if let Some((median_us, p99_us)) = run.latency_us {
                samples.push("tail.latency_median_us", median_us);
                samples.push("tail.latency_p99_us", p99_us);
                samples.push("tail.writer_with", run.writer_per_s);
            } else {
                samples.push("tail.writer_without", run.writer_per_s);
            }
        }
    }
    for (key, numerator, denominator, _, _) in SHARING_RATIOS {
        let value = samples.last(numerator) / samples.last(denominator);
        samples.push(key, value);
    }
}

/// The event the tail figures append, one per durable commit.
pub(crate) fn tick(i: u64) -> NewEvent {
    NewEvent::new("bench.tick", EPOCH_MS + i, vec![b'x'; 64])
}

pub(crate) fn append_tick(store: &Store, i: u64) {
    let _ = store
        .append("tail", ExpectedVersion::Any, &[tick(i)])
        .expect("an append");
}

/// The `annals` binary of this profile: the bench runs from `<profile>/deps/`, and
/// `cargo build --release -p annals-cli` puts the command line in `<profile>/`.
pub(crate) fn annals_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let binary = exe.parent()?.parent()?.join("annals");
    binary.is_file().then_some(binary)
}

pub(crate) struct Tailed {
    /// The median and p99 from a commit's return to the tail's line for it, in µs.
    pub(crate) latency_us: Option<(f64, f64)>,
    /// Durable one-event appends back to back, per second.
    pub(crate) writer_per_s: f64,
}

/// A single-writer store at `path`, followed (with `binary`) by
/// `annals tail <path> --from 0 --json` in a child process: [`TAIL_EVENTS`] commits
/// [`TAIL_GAP`] apart, each timed from the commit's return to the arrival of the child's line
/// for it; then durable appends back to back for `run_for` while the child follows. Without
/// `binary`, the same commits with no tail beside them.
pub(crate) fn tail_round(binary: Option<&Path>, path: &Path, run_for: Duration) -> Tailed {
    let store = open_new(path, Sharing::SingleWriter);
    append_tick(&store, 0);
    let mut tail = binary.map(|binary| Tail::start(binary, path));
    let mut committed = Vec::with_capacity(TAIL_EVENTS);
    for i in 1..=TAIL_EVENTS as u64 {
        std::thread::sleep(TAIL_GAP);
        append_tick(&store, i);
        committed.push(Instant::now());
    }
    let latency_us = tail.as_mut().map(|tail| {
        let mut latencies_us: Vec<f64> = (1..)
            .zip(&committed)
            .map(|(i, commit)| {
                let arrived = tail.line(i);
                // A reader may see a commit a moment before the writer's call returns.
                match arrived.checked_duration_since(*commit) {
                    Some(late) => late.as_secs_f64() * 1e6,
                    None => -(commit.duration_since(arrived).as_secs_f64() * 1e6),
                }
            })
            .collect();
        latencies_us.sort_by(f64::total_cmp);
        (
            latencies_us[latencies_us.len() / 2],
            latencies_us[(latencies_us.len() * 99).div_ceil(100) - 1],
        )
    });
    let first = TAIL_EVENTS as u64 + 1;
    let commits = Commits::measure(run_for, |i| append_tick(&store, first + i));
    if let Some(tail) = tail {
        // The child followed the whole run: it printed the last record.
        tail.stop(first + commits.count - 1);
    }
    Tailed {
        latency_us,
        writer_per_s: commits.per_s(),
    }
}

/// `annals tail --json` in a child process, its lines timed on arrival by a thread.
pub(crate) struct Tail {
    child: std::process::Child,
    arrivals: std::sync::mpsc::Receiver<(u64, Instant)>,
    reader: std::thread::JoinHandle<()>,
}

impl Tail {
    /// Starts the child on the log at `path`, which holds record 0, and waits until it has
    /// printed that record: it is following.
    fn start(binary: &Path, path: &Path) -> Tail {
        let mut child = std::process::Command::new(binary)
            .arg("tail")
            .arg(path)
            .args(["--from", "0", "--json"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("annals tail");
        let stdout = child.stdout.take().expect("the child's stdout");
        let (lines, arrivals) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let arrived = Instant::now();
                let record: Value = serde_json::from_str(&line).expect("a JSON line");
                let position = record["position"].as_u64().expect("a position");
                if lines.send((position, arrived)).is_err() {
                    break;
                }
            }
        });
        let mut tail = Tail {
            child,
            arrivals,
            reader,
        };
        tail.line(0);
        tail
    }

    /// When the child's line for the record at `position` arrived; lines come in order.
    fn line(&mut self, position: u64) -> Instant {
        let (seen, arrived) = self
            .arrivals
            .recv_timeout(Duration::from_secs(30))
            .expect("annals tail prints each record");
        assert_eq!(seen, position, "annals tail prints records in order");
        arrived
    }

    /// Reads the child's lines up to the one for `last`, then stops it.
    fn stop(mut self, last: u64) {
        while self
            .arrivals
            .recv_timeout(Duration::from_secs(30))
            .expect("annals tail prints each record")
            .0
            < last
        {}
        self.child.kill().expect("stop annals tail");
        self.child.wait().expect("annals tail's exit");
        drop(self.arrivals);
        self.reader.join().expect("the reader thread");
    }
}
