//! The async writer shared by many tasks: each append waits for the batch it joined to
//! commit durably, and one commit serves every job queued meanwhile (group commit).
//!
//! `cargo run --example async_writer`

use std::sync::Arc;

use annals::{ExpectedVersion, NewEvent, Store, Writer, writer::WriterOptions};

/// Tasks appending at once, and appends each.
const TASKS: u64 = 32;
const APPENDS_PER_TASK: u64 = 10;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Arc::new(Store::open(dir.path().join("annals.redb"))?);
    // The writer runs its own thread; its handle is cheap to clone into every task.
    let writer = Writer::start(Arc::clone(&store), WriterOptions::default())?;

    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let writer = writer.clone();
        tasks.push(tokio::spawn(async move {
            let stream = format!("agent/{task}");
            for step in 0..APPENDS_PER_TASK {
                let payload = format!(r#"{{"step":{step}}}"#).into_bytes();
                let event = NewEvent::new("agent.step", 1_700_000_000_000 + step, payload);
                // Each task's own stream, so the expected version is exact: a lost or doubled
                // append would be refused.
                let expected = match step {
                    0 => ExpectedVersion::NoStream,
                    _ => ExpectedVersion::Exact(annals::log::StreamVersion(step - 1)),
                };
                let outcome = writer.append(&stream, expected, vec![event]).await?;
                assert!(matches!(outcome, annals::AppendOutcome::Appended(_)));
            }
            Ok::<_, annals::Error>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let stats = writer.stats();
    writer.close().await?;

    let head = store.snapshot()?.head()?;
    assert_eq!(head.next.0, TASKS * APPENDS_PER_TASK);
    println!(
        "{} appends from {TASKS} tasks in {} batches",
        head.next.0, stats.batches
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    println!("verify: sound");
    Ok(())
}
