//! The child of the real-crash test: writes through the async [`Writer`] from several tasks
//! and prints, for every append the writer answered (so durable: its batch committed with
//! an fsync), one line `durable <position> <hash>`, flushed at once. The test kills the
//! process with SIGKILL at a moment it picks from these lines, reopens the file, and checks
//! every reported position is there with the same hash. Run by `annals-testing
//! crash-writer` (`src/testing/bin.rs`), and on a thread by the command line's tests: a writer
//! holding the log beside which `annals` must refuse to write.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::journal::JournalOptions;
use crate::log::append::{AppendOutcome, ExpectedVersion};
use crate::record::NewEvent;
use crate::store::{Sharing, Store, StoreOptions};
use crate::writer::{Writer, WriterOptions};

/// Appends up to `records_max` one-event records to `path` from `tasks` concurrent tasks,
/// reporting each durable one on `out` as it is answered. Stops early if `out` is closed.
/// In exclusive mode the commits go through the journal, drained by `journal`'s bounds.
pub fn write_and_report(
    path: &Path,
    sharing: Sharing,
    journal: JournalOptions,
    tasks: u32,
    records_max: u64,
    out: &mut impl Write,
) -> Result<()> {
    let options = StoreOptions {
        create: true,
        sharing,
        journal: Some(journal),
        ..StoreOptions::default()
    };
    let store = Arc::new(Store::open_with(path, options)?);
    let writer = Writer::start(store, WriterOptions::default())?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    runtime.block_on(async {
        let (reports, mut answered) = tokio::sync::mpsc::unbounded_channel();
        let per_task = records_max / u64::from(tasks.max(1));
        for task in 0..tasks.max(1) {
            let (writer, reports) = (writer.clone(), reports.clone());
            tokio::spawn(async move {
                for i in 0..per_task {
                    let payload = format!("task {task} record {i}").into_bytes();
                    let event = NewEvent::new("crash.test", i, payload);
                    let stream = format!("crash/{task}");
                    let outcome = writer
                        .append(stream, ExpectedVersion::Any, vec![event])
                        .await;
                    if reports.send(outcome).is_err() {
                        return;
                    }
                }
            });
        }
        drop(reports);
        while let Some(outcome) = answered.recv().await {
            if let AppendOutcome::Appended(appended) = outcome? {
                writeln!(
                    out,
                    "durable {} {}",
                    appended.first_position, appended.head.hash
                )?;
                out.flush()?;
            }
        }
        Ok(())
    })
}
