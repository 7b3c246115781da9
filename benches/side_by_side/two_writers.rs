//! Two writer processes on one file at once, as a host and a CLI or cron job write beside
//! each other: annals in multi-writer mode against SQLite (WAL, `synchronous=FULL`, a busy
//! timeout), each process running single durable lease commands on a resource of its own for
//! the same time. The children are this bench's own binary (`--two-writers-child`), started
//! together once both have opened the file; the figure is their commands per second summed.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use annals::{Sharing, Store, StoreOptions};

use crate::sqlite::Sqlite;
use crate::work::{granted, lease_command};

/// Which store a child writes.
#[derive(Clone, Copy)]
pub(crate) enum Contender {
    Annals,
    Sqlite,
}

impl Contender {
    fn name(self) -> &'static str {
        match self {
            Contender::Annals => "annals",
            Contender::Sqlite => "sqlite",
        }
    }
}

/// Two children of `contender` writing `path` for `run_for`: their commands per second,
/// summed.
pub(crate) fn two_writers(contender: Contender, path: &Path, run_for: Duration) -> f64 {
    // The file exists, whole, before either child opens it.
    match contender {
        Contender::Annals => drop(crate::work::open_new(path, Sharing::MultiWriter)),
        Contender::Sqlite => drop(Sqlite::open(path)),
    }
    let exe = std::env::current_exe().expect("this bench's binary");
    let mut children: Vec<_> = (0..2)
        .map(|task| {
            let mut child = Command::new(&exe)
                .args(["--two-writers-child", contender.name()])
                .arg(path)
                .args([task.to_string(), run_for.as_millis().to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("start a writer child");
            let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
            let ready = lines.next().expect("the child reports").expect("a line");
            assert_eq!(ready, "open", "the child opened the file");
            (child, lines)
        })
        .collect();
    for (child, _) in &mut children {
        let stdin = child.stdin.as_mut().expect("piped");
        writeln!(stdin, "go").expect("start the child");
    }
    let mut commands = 0.0;
    for (mut child, mut lines) in children {
        let done = lines.next().expect("the child reports").expect("a line");
        commands += done.parse::<f64>().expect("a count");
        assert!(
            child.wait().expect("reap").success(),
            "a writer child failed"
        );
    }
    commands / run_for.as_secs_f64()
}

/// The child: opens `path` as `contender`, prints `open`, waits for a line, runs single
/// durable commands on the resource of `task` for `run_ms`, then prints how many it ran.
pub(crate) fn two_writers_child(args: &[String]) {
    let [contender, path, task, run_ms] = args else {
        panic!("--two-writers-child CONTENDER PATH TASK MS, not {args:?}");
    };
    let path = Path::new(path);
    let task: usize = task.parse().expect("a task number");
    let run_for = Duration::from_millis(run_ms.parse().expect("milliseconds"));
    let mut step = 0u64;
    let mut command: Box<dyn FnMut(u64)> = match contender.as_str() {
        "annals" => {
            let options = StoreOptions {
                sharing: Sharing::MultiWriter,
                busy_timeout: Duration::from_secs(30),
                ..StoreOptions::default()
            };
            let store = Store::open_with(path, options).expect("open the log");
            Box::new(move |step| {
                granted(
                    &store
                        .execute(&lease_command(task, step))
                        .expect("a command"),
                )
            })
        }
        _ => {
            let mut sqlite = Sqlite::open(path);
            sqlite
                .conn
                .busy_timeout(Duration::from_secs(30))
                .expect("a busy timeout");
            Box::new(move |step| shared_command(&mut sqlite, task, step))
        }
    };
    println!("open");
    std::io::stdout().flush().expect("stdout");
    let mut go = String::new();
    std::io::stdin()
        .read_line(&mut go)
        .expect("wait for the start");
    let started = Instant::now();
    while started.elapsed() < run_for {
        command(step);
        step += 1;
    }
    println!("{step}");
}

/// [`Sqlite::command`] beside another writer process: the transaction begins `IMMEDIATE` (the
/// write lock first, as the reference stores do), and the chain continues from the last row
/// in the file, which the other process may have written.
fn shared_command(sqlite: &mut Sqlite, task: usize, step: u64) {
    let txn = sqlite
        .conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .expect("a transaction");
    let last: Option<(i64, Vec<u8>)> = txn
        .prepare_cached("SELECT position, hash FROM events ORDER BY position DESC LIMIT 1")
        .expect("prepare")
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))
        .ok();
    let (mut position, mut prev) = match last {
        Some((position, hash)) => (position + 1, hash.try_into().expect("a 32-byte hash")),
        None => (0, [0; 32]),
    };
    Sqlite::command_in(&txn, &mut prev, &mut position, task, step);
    txn.commit().expect("commit");
}
