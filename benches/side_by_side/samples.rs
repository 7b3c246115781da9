//! Figures gathered over rounds, and the timed loop of durable commits they come from.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A contender's rows of one figure, one per round.
#[derive(Default)]
pub(crate) struct Samples(pub(crate) BTreeMap<&'static str, Vec<f64>>);

impl Samples {
    pub(crate) fn push(&mut self, key: &'static str, value: f64) {
        self.0.entry(key).or_default().push(value);
    }

    pub(crate) fn median(&self, key: &str) -> f64 {
        let Some(values) = self.0.get(key) else {
            return f64::NAN;
        };
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let middle = sorted.len() / 2;
        if sorted.len() % 2 == 1 {
            sorted[middle]
        } else {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        }
    }

    pub(crate) fn last(&self, key: &str) -> f64 {
        self.0
            .get(key)
            .and_then(|values| values.last())
            .copied()
            .unwrap_or(f64::NAN)
    }

    pub(crate) fn spread(&self, key: &str) -> (f64, f64) {
        let values = self.0.get(key).map_or(&[][..], Vec::as_slice);
        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (low, high)
    }
}

/// What a timed loop of durable commits did.
pub(crate) struct Commits {
    pub(crate) count: u64,
    pub(crate) elapsed: Duration,
    /// Bytes the process handed to `write` calls meanwhile (pages, WAL frames, headers).
    pub(crate) written: u64,
}

impl Commits {
    /// Calls `commit` with 0, 1, 2, … (one durable commit each) until `run_for` has passed.
    pub(crate) fn measure(run_for: Duration, mut commit: impl FnMut(u64)) -> Commits {
        let written_before = bytes_written();
        let started = Instant::now();
        let mut count = 0;
        while started.elapsed() < run_for {
            commit(count);
            count += 1;
        }
        Commits {
            count,
            elapsed: started.elapsed(),
            written: bytes_written() - written_before,
        }
    }

    pub(crate) fn per_s(&self) -> f64 {
        per_second(self.count, self.elapsed)
    }

    pub(crate) fn written_per_commit(&self) -> f64 {
        self.written as f64 / self.count.max(1) as f64
    }
}

/// The bytes the file at `path` takes on disk: its allocated blocks. redb doubles a file when
/// it runs out of room, and the part not yet written takes no disk, so a file's length would
/// put a sawtooth of up to 2× into every bytes-per-event figure; SQLite's files have no such
/// part, so for them this is their length.
pub(crate) fn disk_bytes(path: &Path) -> f64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map_or(f64::NAN, |m| (m.blocks() * 512) as f64)
}

pub(crate) fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

/// Bytes this process has handed to `write` calls so far (Linux; 0 elsewhere).
pub(crate) fn bytes_written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|line| line.strip_prefix("wchar: ").map(str::to_owned))
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Runs `threads` OS threads for `run_for`, thread `id` calling the command `command(id)`
/// made for it (made here, before the threads start) over and over, one durable command per
/// call. Returns the commands done and the time they took.
pub(crate) fn in_threads<C>(
    threads: usize,
    run_for: Duration,
    command: impl Fn(usize) -> C,
) -> (u64, Duration)
where
    C: FnMut() + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let commands: Vec<C> = (0..threads).map(command).collect();
    let started = Instant::now();
    let workers: Vec<_> = commands
        .into_iter()
        .map(|mut command| {
            let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    command();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(run_for);
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().expect("a thread");
    }
    (done.load(Ordering::Relaxed), started.elapsed())
}
