//! Durable commands per second through the group-commit writer, at 1, 8 and 64 concurrent
//! tasks, beside `Store::execute` (one commit per command) as the baseline.
//!
//! Each task runs lease commands on a resource of its own (acquire, then renew with a clock
//! that moves on): each one decides against the leases table and appends one event, and is
//! answered only once its batch is durable (`Durability::Immediate`, one fsync per batch).
//!
//! `cargo bench --bench writer`; `ANNALS_BENCH_SECONDS` sets how long each row runs (default
//! 3); `ANNALS_BENCH_DEFERRED=1` commits the writer's batches with `Durability::Deferred`
//! instead, which takes the disk out and shows what the processor alone allows. The log lives
//! under the target directory, on a real disk: an fsync on tmpfs costs nothing and would
//! flatter every row. `-- --history` appends the run's figures to
//! `docs/performance-history.csv`, a row each.

#[path = "support/history.rs"]
mod history;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use annals::leases::{LeaseCommand, LeaseOutcome};
use annals::{Durability, Store, Writer, writer::WriterOptions};

const TTL_MS: u64 = 60_000;

fn command(task: usize, step: u64) -> LeaseCommand {
    // The same holder re-acquiring a live lease renews it: one event per command.
    LeaseCommand::Acquire {
        resource: format!("resource-{task}"),
        holder: format!("task-{task}"),
        ttl_ms: TTL_MS,
        now_ms: 1_700_000_000_000 + step,
    }
}

fn check(outcome: &LeaseOutcome) {
    assert!(
        matches!(outcome, LeaseOutcome::Granted { .. }),
        "each task owns its resource: {outcome:?}"
    );
}

struct Row {
    label: String,
    /// The row's name in the run's figures (`--history`).
    key: &'static str,
    tasks: usize,
    commands: u64,
    seconds: f64,
    batches: Option<u64>,
}

impl Row {
    fn per_second(&self) -> f64 {
        self.commands as f64 / self.seconds
    }
}

fn fresh_store(name: &str) -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
    let store = Store::open(dir.path().join(format!("{name}.redb"))).expect("a new store");
    (dir, Arc::new(store))
}

fn baseline(run_for: Duration) -> Row {
    let (_dir, store) = fresh_store("baseline");
    let started = Instant::now();
    let mut commands = 0;
    while started.elapsed() < run_for {
        check(&store.execute(&command(0, commands)).expect("a command"));
        commands += 1;
    }
    Row {
        label: "Store::execute (commit per command)".into(),
        key: "store_execute",
        tasks: 1,
        commands,
        seconds: started.elapsed().as_secs_f64(),
        batches: None,
    }
}

async fn through_writer(tasks: usize, run_for: Duration, durability: Durability) -> Row {
    let (_dir, store) = fresh_store(&format!("writer-{tasks}"));
    let options = WriterOptions {
        durability,
        ..WriterOptions::default()
    };
    let writer = Writer::start(store, options).expect("a writer");
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..tasks)
        .map(|task| {
            let writer = writer.clone();
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut commands = 0;
                while !stop.load(Ordering::Relaxed) {
                    let outcome = writer.execute(command(task, commands)).await;
                    check(&outcome.expect("a command"));
                    commands += 1;
                }
                commands
            })
        })
        .collect();
    tokio::time::sleep(run_for).await;
    stop.store(true, Ordering::Relaxed);
    let mut commands = 0;
    for worker in workers {
        commands += worker.await.expect("a task");
    }
    let seconds = started.elapsed().as_secs_f64();
    let batches = writer.stats().batches;
    writer.close().await.expect("close");
    Row {
        label: "Writer::execute".into(),
        key: "writer_execute",
        tasks,
        commands,
        seconds,
        batches: Some(batches),
    }
}

fn main() {
    let seconds = std::env::var("ANNALS_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(3.0);
    let run_for = Duration::from_secs_f64(seconds);
    let durability = match std::env::var("ANNALS_BENCH_DEFERRED").as_deref() {
        Ok("1") => Durability::Deferred,
        _ => Durability::Immediate,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let mut rows = vec![baseline(run_for)];
    for tasks in [1, 8, 64] {
        rows.push(runtime.block_on(through_writer(tasks, run_for, durability)));
    }

    let table = format!(
        "lease commands, the writer's batches committed with Durability::{durability:?}, \
         {} cores, {seconds} s per row",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("{table}");
    println!(
        "| {:<36} | {:>5} | {:>9} | {:>11} | {:>15} |",
        "path", "tasks", "commands", "commands/s", "commands/batch"
    );
    println!(
        "|{:-<38}|{:->7}|{:->11}|{:->13}|{:->17}|",
        "", "", "", "", ""
    );
    for row in &rows {
        let per_batch = row.batches.map_or("1".to_owned(), |b| {
            format!("{:.1}", row.commands as f64 / b.max(1) as f64)
        });
        println!(
            "| {:<36} | {:>5} | {:>9} | {:>11.0} | {:>15} |",
            row.label,
            row.tasks,
            row.commands,
            row.per_second(),
            per_batch
        );
    }
    let rate = |tasks| {
        rows.iter()
            .find(|r| r.batches.is_some() && r.tasks == tasks)
            .map_or(f64::NAN, Row::per_second)
    };
    println!(
        "ratio of 64 tasks to 1 task through the writer: {:.1}x",
        rate(64) / rate(1)
    );
    let args: Vec<String> = std::env::args().skip(1).collect();
    let env = ["ANNALS_BENCH_SECONDS", "ANNALS_BENCH_DEFERRED"];
    history::append_if_asked(&figures(&rows), "writer", &env, &table, &args);
}

/// The run's figures as the history keeps them: commands per second and per batch, by path
/// and tasks (`writer_execute.64.commands_per_second`).
fn figures(rows: &[Row]) -> serde_json::Value {
    let mut figures = serde_json::Map::new();
    for row in rows {
        let mut figure = serde_json::json!({ "commands_per_second": row.per_second().round() });
        if let Some(batches) = row.batches {
            let per_batch = row.commands as f64 / batches.max(1) as f64;
            figure["commands_per_batch"] = serde_json::json!((per_batch * 10.0).round() / 10.0);
        }
        let by_tasks = figures
            .entry(row.key)
            .or_insert_with(|| serde_json::json!({}));
        by_tasks[row.tasks.to_string()] = figure;
    }
    serde_json::Value::Object(figures)
}
