//! A writer beside the commands a test runs: the crash tests' `write_and_report` appending
//! from 4 tasks on a thread of the test, so that to each `annals` process the test starts
//! the log is held by another process, as a host's would be.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use annals::testing::crash::write_and_report;
use annals::{Sharing, journal::JournalOptions};

/// A writer appending to `path` in `sharing` mode from 4 tasks, on a thread of this test
/// (the crash tests' `write_and_report`): to the `annals` processes a test starts, another
/// process holding the log. Started once its first append is durable.
pub struct Appender {
    /// The positions the writer acknowledged, each durable.
    acknowledged: Arc<Mutex<Vec<u64>>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<annals::Result<()>>,
}

/// Where `write_and_report` writes its `durable <position> <hash>` lines: each position is
/// kept, and once the test stops the writer the next line fails, which ends it.
struct Reports {
    line: Vec<u8>,
    acknowledged: Arc<Mutex<Vec<u64>>>,
    first: Option<mpsc::Sender<()>>,
    stop: Arc<AtomicBool>,
}

impl Write for Reports {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        self.line.extend_from_slice(bytes);
        while let Some(end) = self.line.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.line.drain(..=end).collect();
            let line = String::from_utf8(line).expect("a UTF-8 report");
            let mut words = line.split_whitespace();
            assert_eq!(words.next(), Some("durable"), "{line}");
            let position = words.next().and_then(|p| p.parse().ok());
            let position: u64 = position.expect("a position");
            self.acknowledged.lock().unwrap().push(position);
            if let Some(first) = self.first.take() {
                first.send(()).expect("the test waits for the first append");
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Appender {
    pub fn start(path: &Path, sharing: Sharing) -> Appender {
        let (first, started) = mpsc::channel();
        let acknowledged = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut reports = Reports {
            line: Vec::new(),
            acknowledged: Arc::clone(&acknowledged),
            first: Some(first),
            stop: Arc::clone(&stop),
        };
        let path = path.to_owned();
        let thread = std::thread::spawn(move || {
            let journal = JournalOptions::default();
            write_and_report(&path, sharing, journal, 4, 1_000_000, &mut reports)
        });
        started.recv().expect("the writer's first durable append");
        Appender {
            acknowledged,
            stop,
            thread,
        }
    }

    /// Stops the writer and waits until it closed the log; the positions it acknowledged.
    pub fn stop(self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        let ended = self.thread.join().expect("the writer's thread");
        // The writer ends on the report it can no longer write, and on nothing else.
        if let Err(error) = ended {
            let stopped = matches!(error.kind(), annals::ErrorKind::Io);
            assert!(stopped, "the writer failed: {error}");
        }
        self.acknowledged.lock().unwrap().clone()
    }
}
