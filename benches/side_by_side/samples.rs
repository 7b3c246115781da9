//! Figures gathered over rounds, and the timed loop of durable commits they come from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
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
    /// Cache flushes the disk completed meanwhile, where the kernel counts them.
    pub(crate) flushes: Option<u64>,
}

impl Commits {
    /// Calls `commit` with 0, 1, 2, … (one durable commit each) until `run_for` has passed.
    pub(crate) fn measure(run_for: Duration, mut commit: impl FnMut(u64)) -> Commits {
        let written_before = bytes_written();
        let flushes_before = disk_flushes();
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
            flushes: flushes_before
                .zip(disk_flushes())
                .map(|(before, after)| after - before),
        }
    }

    pub(crate) fn per_s(&self) -> f64 {
        per_second(self.count, self.elapsed)
    }

    pub(crate) fn written_per_commit(&self) -> f64 {
        self.written as f64 / self.count.max(1) as f64
    }

    /// The disk's cache flushes per commit: the syncs a durable commit waits for (NaN where
    /// the kernel does not count them). The whole disk's count, so anything else writing to
    /// it meanwhile shows here too.
    pub(crate) fn flushes_per_commit(&self) -> f64 {
        self.flushes.map_or(f64::NAN, |flushes| {
            flushes as f64 / self.count.max(1) as f64
        })
    }
}

/// Cache flushes completed so far by the disk the bench's logs are on: the 16th field of its
/// `/sys/dev/block/MAJOR:MINOR/stat` (Linux 5.5 and later), counted for the whole disk when
/// the logs are on a partition of it. `None` where there is no such count.
pub(crate) fn disk_flushes() -> Option<u64> {
    static STAT: OnceLock<Option<PathBuf>> = OnceLock::new();
    let stat = STAT.get_or_init(|| {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(env!("CARGO_TARGET_TMPDIR")).ok()?.dev();
        let (major, minor) = (
            ((dev >> 32) & !0xfff) | ((dev >> 8) & 0xfff),
            ((dev >> 12) & !0xff) | (dev & 0xff),
        );
        let device = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
        // A partition's own counts leave flushes out: they are the disk's.
        let disk = if device.join("partition").exists() {
            device.join("..")
        } else {
            device
        };
        Some(disk.join("stat"))
    });
    let text = std::fs::read_to_string(stat.as_ref()?).ok()?;
    text.split_whitespace().nth(15)?.parse().ok()
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
