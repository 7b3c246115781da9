//! `tail`: prints records as they commit, like `tail -f`, from a log that another process
//! writes. It opens the log read-only and follows it through a subscription, which looks for
//! the writer's commits itself (they announce themselves to nobody in this process).

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use super::args::TailArgs;
use super::command::{NamedFile, Run};
use super::failure::Failure;
use super::render::print_record;
use annals::Store;
use annals::subscribe::{Subscription, subscribe, subscribe_stream};
use annals::{Position, log::StreamVersion};

pub(crate) fn tail(args: TailArgs) -> Result<ExitCode, Failure> {
    let store = Arc::new(Store::open_read_only(&args.log.db)?);
    let snapshot = store.snapshot()?;
    let mut subscription: Subscription = match &args.stream {
        Some(stream) => {
            let end = snapshot
                .stream_version(stream)?
                .map_or(0, |last| last.0 + 1);
            subscribe_stream(
                Arc::clone(&store),
                stream,
                StreamVersion(args.from.unwrap_or(end)),
            )
        }
        None => {
            let end = snapshot.head()?.next;
            subscribe(Arc::clone(&store), args.from.map_or(end, Position))
        }
    };
    drop(snapshot);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|error| Failure::Usage(format!("starting the runtime: {error}")))?;
    let mut out = io::stdout().lock();
    let mut printed = 0u64;
    while args.count.is_none_or(|count| printed < count) {
        let record = runtime.block_on(subscription.next())?;
        print_record(&mut out, &store, &record, args.json)?;
        // Each record is shown as it commits, not when a buffer fills.
        out.flush()?;
        printed += 1;
    }
    Ok(ExitCode::SUCCESS)
}

impl Run for TailArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.log.db, "the log")]
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        tail(self)
    }
}
