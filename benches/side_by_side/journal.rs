//! `-- --journal-only`: the commit journal (issue 35) side by side in one run. Every commit
//! durable; the rounds turn the order of the contenders. Figures:
//!
//! - single durable lease commands: annals exclusive through the journal, annals exclusive
//!   committing to the file (`journal: None`), annals' default (single-writer, journaled)
//!   with a reader process attached (`annals tail`, when the release binary is built),
//!   single-writer committing to the file (two-phase), raw redb exclusive, SQLite (WAL, `synchronous=FULL`), and the disk's append+fdatasync
//!   floor (a 300-byte append and its sync, the journal's own cost);
//! - what a journaled commit cannot do without, each apart: a 300-byte write into the
//!   journal's room (a hole of `checkpoint_bytes`) and its sync, the journal's own I/O; and raw
//!   redb's in-memory commit (`Durability::None`, exclusive) of one row in each of the five
//!   trees a lease command writes, the least a commit that goes through redb each transaction
//!   spends; with the CPU the single-command targets leave a commit beside that I/O;
//! - the reference stores' command mix, one command per transaction from one client (annals
//!   exclusive journaled, annals' default with a reader process attached, SQLite) and its
//!   median latency; at 8 and 64 clients
//!   through the `Writer` (annals exclusive journaled) against SQLite's better configuration;
//! - disk bytes per command of the sequential mix after a drain (the journal removed by the
//!   close) against SQLite's after its checkpoint, both with the reference rows alone and
//!   keeping the same history (an event row per command with its chained hash under a
//!   `(stream, version)` index, [`crate::mixed_sqlite::command_with_history`]), which also
//!   runs the sequential mix at its own rate;
//! - the peak resident memory of a child process running the sequential mix through the
//!   journal, at [`RSS_COMMANDS`] commands and at twice as many (first round only): flat
//!   memory between and across drains is a ratio near 1.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use annals::{Direction, Position, Sharing, Store, StoreOptions, journal::JournalOptions};
use rusqlite::Connection;

use crate::commands::{single_redb, single_sqlite};
use crate::mixed::{Client, execute, mixed_tasks_on};
use crate::mixed_sqlite::{
    command as sqlite_command, command_with_history, empty_bytes_sqlite, mean_event_payload,
    mixed_sqlite, open, open_with_history,
};
use crate::samples::{Commits, Samples, disk_bytes, per_second};
use crate::work::{granted, lease_command};

/// A new store at `path` in `sharing` mode, with or without the journal.
fn store(path: &Path, sharing: Sharing, journal: bool) -> Store {
    Store::open_with(
        path,
        StoreOptions {
            create: true,
            sharing,
            journal: journal.then(JournalOptions::default),
            ..StoreOptions::default()
        },
    )
    .expect("a new store")
}

fn single(path: &Path, sharing: Sharing, journal: bool, run_for: Duration) -> f64 {
    let store = store(path, sharing, journal);
    Commits::measure(run_for, |step| {
        granted(&store.execute(&lease_command(0, step)).expect("a command"));
    })
    .per_s()
}

/// A reader in another process beside a store: `annals tail <path> --from 0 --json`
/// following every commit (its output dropped) until it is dropped. `None` without the
/// command line's release binary (`cargo build --release -p annals-cli`).
struct Reader(std::process::Child);

impl Reader {
    fn attach(path: &Path) -> Option<Reader> {
        let binary = crate::sharing::annals_binary()?;
        let child = std::process::Command::new(binary)
            .arg("tail")
            .arg(path)
            .args(["--from", "0", "--json"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("annals tail");
        Some(Reader(child))
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// [`single`] in the default mode (single-writer, journaled) with a reader process attached.
fn single_read(path: &Path, run_for: Duration) -> f64 {
    let store = store(path, Sharing::SingleWriter, true);
    let _reader = Reader::attach(path);
    Commits::measure(run_for, |step| {
        granted(&store.execute(&lease_command(0, step)).expect("a command"));
    })
    .per_s()
}

/// An empty file at `path`, for reading and writing.
fn new_file(path: &Path) -> std::fs::File {
    OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(path)
        .expect("a file")
}

/// Appends of 300 bytes to a file, each followed by `fdatasync`.
fn append_floor(path: &Path, run_for: Duration) -> f64 {
    let file = new_file(path);
    let block = [7u8; 300];
    let (started, mut appends) = (Instant::now(), 0u64);
    while started.elapsed() < run_for {
        file.write_all_at(&block, appends * 300).expect("append");
        file.sync_data().expect("fdatasync");
        appends += 1;
    }
    per_second(appends, started.elapsed())
}

/// Writes of 300 bytes into a hole as long as the default journal's room
/// (`JournalOptions::default().checkpoint_bytes`), each followed by `fdatasync`: what a
/// journaled commit's frame costs the disk (the journal cuts its file and lengthens it again
/// when it is emptied; here when the room is full).
fn room_floor(path: &Path, run_for: Duration) -> f64 {
    let room = JournalOptions::default().checkpoint_bytes;
    let file = new_file(path);
    file.set_len(room).expect("the room");
    file.sync_all().expect("sync");
    let block = [7u8; 300];
    let (started, mut writes, mut at) = (Instant::now(), 0u64, 0u64);
    while started.elapsed() < run_for {
        if at + 300 > room {
            file.set_len(0).expect("cut");
            file.set_len(room).expect("the room");
            at = 0;
        }
        file.write_all_at(&block, at).expect("write");
        file.sync_data().expect("fdatasync");
        (writes, at) = (writes + 1, at + 300);
    }
    per_second(writes, started.elapsed())
}

/// Raw redb's in-memory commits (`Durability::None`, exclusive) of one row in each of the five
/// trees a journaled lease command writes: the record in the segments, the head, the stream's
/// run, a node of the tree, the lease. Values are the sizes annals stores; annals writes more
/// (every level of the tree a leaf completes, checksums), so this is a floor.
fn redb_in_memory(path: &Path, run_for: Duration) -> f64 {
    let db = redb::Builder::new()
        .set_concurrency_mode(redb::ConcurrencyMode::ExclusiveWriter)
        .create(path)
        .expect("a redb file");
    let record = crate::work::stored_bytes(&crate::work::lease_command_event(), 0);
    // Each tree, the value written, and whether each commit adds a row (keyed by its step) or
    // rewrites the one row.
    let trees: [(&str, &[u8], bool); 5] = [
        ("segments", &record, true),
        ("meta", &[9; 48], false),
        ("stream_runs", &[7; 32], false),
        ("merkle", &[5; 40], true),
        ("leases.held", &[3; 88], false),
    ];
    Commits::measure(run_for, |step| {
        let mut txn = db.begin_write().expect("a write");
        txn.set_durability(redb::Durability::None)
            .expect("exclusive takes Durability::None");
        for (tree, value, adds) in trees {
            let definition = redb::TableDefinition::<u64, &[u8]>::new(tree);
            let mut table = txn.open_table(definition).expect("the table");
            let key = if adds { step } else { 0 };
            table.insert(key, value).expect("insert");
        }
        txn.commit().expect("commit");
    })
    .per_s()
}

/// Commands of the sequential mix in the smaller memory run (the larger runs twice as many):
/// enough for a file past redb's page cache (32 MiB; 80,000 commands make about 36 MB), so
/// that the ratio shows the process's bound and not the cache filling up (at 20,000 and
/// 40,000 commands the peak was 17.9 and 27.3 MB, at 80,000 and 160,000 43.1 and 43.8 MB).
pub(crate) const RSS_COMMANDS: u64 = 80_000;

/// In the child: `commands` commands of the sequential mix through a new journaled exclusive
/// store at `path`, then the peak resident set in bytes on standard output.
pub(crate) fn journal_rss_child(path: &Path, commands: u64) {
    let store = store(path, Sharing::Exclusive, true);
    let mut client = Client::new(0);
    while client.done < commands {
        let token = execute(&store, client.command());
        client.advance(token);
    }
    println!("{}", crate::memory::peak_rss_bytes());
}

/// The peak resident memory of [`journal_rss_child`] running `commands` at `path`.
fn journal_rss(path: &Path, commands: u64) -> f64 {
    let commands = commands.to_string();
    crate::memory::peak_of_child(&[
        "--journal-rss-child".as_ref(),
        path.as_os_str(),
        commands.as_ref(),
    ])
}

/// The sequential mix through `store`: commands per second and the median latency in µs.
fn sequential_annals(store: &Store, run_for: Duration) -> (f64, f64, u64) {
    let mut client = Client::new(0);
    let mut latencies = Vec::new();
    let started = Instant::now();
    while started.elapsed() < run_for {
        let one = Instant::now();
        let token = execute(store, client.command());
        latencies.push(one.elapsed());
        client.advance(token);
    }
    let per_s = per_second(client.done, started.elapsed());
    (per_s, median_us(&mut latencies), client.done)
}

/// `commands` of the mix, one at a time, on a new default-mode log at `path`
/// (`--profile-sequential`).
pub(crate) fn sequential_count(path: &Path, commands: u64) {
    // Checkpoints by bytes alone: by time, a slower run (under callgrind) would drain at
    // other commands, and two builds' counts would differ by the drains' work.
    let store = Store::open_with(
        path,
        StoreOptions {
            create: true,
            sharing: Sharing::SingleWriter,
            journal: Some(JournalOptions {
                checkpoint_ms: u64::MAX,
                ..JournalOptions::default()
            }),
            ..StoreOptions::default()
        },
    )
    .expect("a new store");
    let mut client = Client::new(0);
    while client.done < commands {
        let token = execute(&store, client.command());
        client.advance(token);
    }
    store.close().expect("close");
}

/// The sequential mix in SQLite: on the reference rows alone, or keeping the history as well.
/// Commands per second, the median latency in µs, the commands run, and the history's mean
/// event payload (NaN without it).
fn sequential_sqlite(path: &Path, history: bool, run_for: Duration) -> (f64, f64, u64, f64) {
    type Command = fn(&mut Connection, &Client) -> Option<u64>;
    let (mut conn, command): (Connection, Command) = if history {
        (open_with_history(path), command_with_history)
    } else {
        (open(path), sqlite_command)
    };
    let mut client = Client::new(0);
    let mut latencies = Vec::new();
    let started = Instant::now();
    while started.elapsed() < run_for {
        let one = Instant::now();
        let token = command(&mut conn, &client);
        latencies.push(one.elapsed());
        client.advance(token);
    }
    let per_s = per_second(client.done, started.elapsed());
    conn.pragma_update(None, "wal_checkpoint", "TRUNCATE").ok();
    let payload = if history {
        mean_event_payload(&conn)
    } else {
        f64::NAN
    };
    (per_s, median_us(&mut latencies), client.done, payload)
}

/// The mean payload length of a store's records.
fn mean_payload(store: &Store) -> f64 {
    let records = store
        .snapshot()
        .expect("the records")
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .expect("the records");
    let bytes: usize = records.iter().map(|record| record.payload.len()).sum();
    bytes as f64 / records.len().max(1) as f64
}

fn median_us(latencies: &mut [Duration]) -> f64 {
    latencies.sort();
    latencies
        .get(latencies.len() / 2)
        .map_or(f64::NAN, |median| median.as_secs_f64() * 1e6)
}

/// `clients` tasks through one `Writer` over a journaled exclusive store.
async fn grouped(path: &Path, clients: usize, run_for: Duration) -> f64 {
    let store = Arc::new(store(path, Sharing::Exclusive, true));
    mixed_tasks_on(store, clients, run_for).await.per_s
}

/// A figure's key and the run that measures it.
type Contender<'a> = (&'static str, Box<dyn Fn() -> f64 + 'a>);

/// One round of the journal's figures into `samples`.
pub(crate) fn run_journal(
    run_for: Duration,
    runtime: &tokio::runtime::Runtime,
    round: usize,
    samples: &mut Samples,
) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
    let at = |name: &str| dir.path().join(name);
    let mut contenders: Vec<Contender<'_>> = vec![
        (
            "journal.single_journaled",
            Box::new(|| single(&at("single-j.redb"), Sharing::Exclusive, true, run_for)),
        ),
        (
            "journal.single_exclusive_file",
            Box::new(|| single(&at("single-x.redb"), Sharing::Exclusive, false, run_for)),
        ),
        (
            "journal.single_default",
            Box::new(|| single_read(&at("single-d.redb"), run_for)),
        ),
        (
            "journal.single_shared_file",
            Box::new(|| single(&at("single-f.redb"), Sharing::SingleWriter, false, run_for)),
        ),
        (
            "journal.single_redb",
            Box::new(|| single_redb(&at("single-r.redb"), run_for).per_s()),
        ),
        (
            "journal.single_sqlite",
            Box::new(|| single_sqlite(&at("single-s.sqlite"), run_for).per_s()),
        ),
        (
            "journal.append_floor",
            Box::new(|| append_floor(&at("floor.bin"), run_for)),
        ),
        (
            "journal.room_floor",
            Box::new(|| room_floor(&at("room.bin"), run_for)),
        ),
        (
            "journal.redb_in_memory",
            Box::new(|| redb_in_memory(&at("in-memory.redb"), run_for)),
        ),
    ];
    let turn = round % contenders.len();
    contenders.rotate_left(turn);
    for (key, run) in &contenders {
        samples.push(key, run());
    }
    drop(contenders);

    // The sequential mix: annals journaled and default, SQLite.
    let journaled_path = at("mix-j.redb");
    let journaled = store(&journaled_path, Sharing::Exclusive, true);
    let (per_s, median, commands) = sequential_annals(&journaled, run_for);
    samples.push("journal.mix1_payload_journaled", mean_payload(&journaled));
    journaled.close().expect("close");
    let empty_annals = {
        let empty = at("empty-j.redb");
        store(&empty, Sharing::Exclusive, true)
            .close()
            .expect("close");
        disk_bytes(&empty)
    };
    samples.push("journal.mix1_journaled", per_s);
    samples.push("journal.mix1_latency_journaled_us", median);
    samples.push(
        "journal.mix1_bytes_journaled",
        (disk_bytes(&journaled_path) - empty_annals) / commands.max(1) as f64,
    );
    let default_path = at("mix-d.redb");
    let default = store(&default_path, Sharing::SingleWriter, true);
    let reader = Reader::attach(&default_path);
    let (per_s, median, _) = sequential_annals(&default, run_for);
    drop(reader);
    samples.push("journal.mix1_default", per_s);
    samples.push("journal.mix1_latency_default_us", median);
    let sqlite_path = at("mix-s.sqlite");
    let (per_s, median, commands, _) = sequential_sqlite(&sqlite_path, false, run_for);
    let empty_sqlite = empty_bytes_sqlite(&at("empty.sqlite"));
    samples.push("journal.mix1_sqlite", per_s);
    samples.push("journal.mix1_latency_sqlite_us", median);
    samples.push(
        "journal.mix1_bytes_sqlite",
        (disk_bytes(&sqlite_path) - empty_sqlite) / commands.max(1) as f64,
    );
    let history_path = at("mix-h.sqlite");
    let (per_s, median, commands, payload) = sequential_sqlite(&history_path, true, run_for);
    let empty_history = {
        let empty = at("empty-h.sqlite");
        let conn = open_with_history(&empty);
        conn.pragma_update(None, "wal_checkpoint", "TRUNCATE").ok();
        drop(conn);
        disk_bytes(&empty)
    };
    samples.push("journal.mix1_sqlite_history", per_s);
    samples.push("journal.mix1_latency_sqlite_history_us", median);
    samples.push("journal.mix1_payload_sqlite_history", payload);
    samples.push(
        "journal.mix1_bytes_sqlite_history",
        (disk_bytes(&history_path) - empty_history) / commands.max(1) as f64,
    );

    if round == 0 {
        samples.push(
            "journal.rss_journaled_mb",
            journal_rss(&at("rss-1.redb"), RSS_COMMANDS) / 1e6,
        );
        samples.push(
            "journal.rss_journaled_2x_mb",
            journal_rss(&at("rss-2.redb"), 2 * RSS_COMMANDS) / 1e6,
        );
    }

    for (clients, keys) in [
        (8, ["journal.mix8_journaled", "journal.mix8_sqlite_best"]),
        (64, ["journal.mix64_journaled", "journal.mix64_sqlite_best"]),
    ] {
        let annals = runtime.block_on(grouped(
            &at(&format!("group-{clients}.redb")),
            clients,
            run_for,
        ));
        let conns = mixed_sqlite(
            &at(&format!("conns-{clients}.sqlite")),
            clients,
            false,
            run_for,
        );
        let shared = mixed_sqlite(
            &at(&format!("shared-{clients}.sqlite")),
            clients,
            true,
            run_for,
        );
        samples.push(keys[0], annals);
        samples.push(keys[1], conns.per_s.max(shared.per_s));
    }
}

/// The figures as a table, with the ratios.
pub(crate) fn print_journal(samples: &Samples, rounds: usize) -> serde_json::Value {
    let median = |key: &str| samples.median(key);
    println!(
        "commit journal, {rounds} rounds, medians (range over rounds); every commit durable\n"
    );
    println!("| figure | median | range |");
    println!("|---|---:|---|");
    let mut keys: Vec<&str> = vec![
        "journal.single_journaled",
        "journal.single_exclusive_file",
        "journal.single_default",
        "journal.single_shared_file",
        "journal.single_redb",
        "journal.single_sqlite",
        "journal.append_floor",
        "journal.room_floor",
        "journal.redb_in_memory",
        "journal.mix1_journaled",
        "journal.mix1_default",
        "journal.mix1_sqlite",
        "journal.mix1_sqlite_history",
        "journal.mix1_latency_journaled_us",
        "journal.mix1_latency_default_us",
        "journal.mix1_latency_sqlite_us",
        "journal.mix1_latency_sqlite_history_us",
        "journal.mix1_bytes_journaled",
        "journal.mix1_bytes_sqlite",
        "journal.mix1_bytes_sqlite_history",
        "journal.mix1_payload_journaled",
        "journal.mix1_payload_sqlite_history",
    ];
    keys.extend([
        "journal.rss_journaled_mb",
        "journal.rss_journaled_2x_mb",
        "journal.mix8_journaled",
        "journal.mix8_sqlite_best",
        "journal.mix64_journaled",
        "journal.mix64_sqlite_best",
    ]);
    // The figures as `--history` records them: each median, at its key's path.
    let mut figures = serde_json::Map::new();
    for key in keys {
        let (low, high) = samples.spread(key);
        println!("| {key} | {:.1} | {low:.1} – {high:.1} |", median(key));
        let name = key.strip_prefix("journal.").unwrap_or(key);
        figures.insert(name.to_owned(), serde_json::json!(median(key)));
    }
    let ratio = |a: &str, b: &str| median(a) / median(b);
    println!("\n| ratio | value | target |");
    println!("|---|---:|---:|");
    for (name, value, target) in [
        (
            "single journaled / SQLite",
            ratio("journal.single_journaled", "journal.single_sqlite"),
            "≥ 1.2",
        ),
        (
            "single default (single-writer, journaled, a reader process attached) / SQLite",
            ratio("journal.single_default", "journal.single_sqlite"),
            "≥ 1.2",
        ),
        (
            "single default, a reader attached / append floor",
            ratio("journal.single_default", "journal.append_floor"),
            "≥ 0.8",
        ),
        (
            "single default, a reader attached / single-writer to the file",
            ratio("journal.single_default", "journal.single_shared_file"),
            "—",
        ),
        (
            "mix sequential default, a reader attached / SQLite",
            ratio("journal.mix1_default", "journal.mix1_sqlite"),
            "≥ 1.2",
        ),
        (
            "median latency default, a reader attached / SQLite",
            ratio(
                "journal.mix1_latency_default_us",
                "journal.mix1_latency_sqlite_us",
            ),
            "≤ 1",
        ),
        (
            "single journaled / append floor",
            ratio("journal.single_journaled", "journal.append_floor"),
            "≥ 0.8",
        ),
        (
            "single journaled / exclusive to the file",
            ratio("journal.single_journaled", "journal.single_exclusive_file"),
            "—",
        ),
        (
            "mix sequential journaled / SQLite",
            ratio("journal.mix1_journaled", "journal.mix1_sqlite"),
            "≥ 1.2",
        ),
        (
            "mix 8 journaled / SQLite best",
            ratio("journal.mix8_journaled", "journal.mix8_sqlite_best"),
            "≥ 2",
        ),
        (
            "mix 64 journaled / SQLite best",
            ratio("journal.mix64_journaled", "journal.mix64_sqlite_best"),
            "≥ 5",
        ),
        (
            "median latency journaled / SQLite",
            ratio(
                "journal.mix1_latency_journaled_us",
                "journal.mix1_latency_sqlite_us",
            ),
            "≤ 1",
        ),
        (
            "bytes per command journaled / SQLite (reference rows only)",
            ratio("journal.mix1_bytes_journaled", "journal.mix1_bytes_sqlite"),
            "—",
        ),
        (
            "bytes per command journaled / SQLite keeping the same history",
            ratio(
                "journal.mix1_bytes_journaled",
                "journal.mix1_bytes_sqlite_history",
            ),
            "≤ 1",
        ),
        (
            "mix sequential journaled / SQLite keeping the same history",
            ratio("journal.mix1_journaled", "journal.mix1_sqlite_history"),
            "—",
        ),
        (
            "peak memory of the journaled mix, 2x commands / 1x",
            ratio("journal.rss_journaled_2x_mb", "journal.rss_journaled_mb"),
            "flat",
        ),
    ] {
        println!("| {name} | {value:.2} | {target} |");
    }
    print_budget(samples);
    serde_json::json!({ "journal": figures })
}

/// The CPU the single-command targets leave a journaled commit beside its own write and sync
/// into the room, against the least raw redb spends committing a command's trees in memory.
fn print_budget(samples: &Samples) {
    let us = |key: &str| 1e6 / samples.median(key);
    let room = us("journal.room_floor");
    println!("\n| a single command's time, µs | value |");
    println!("|---|---:|");
    for (name, value) in [
        ("journaled, measured", us("journal.single_journaled")),
        ("the journal's write and sync into its room", room),
        (
            "CPU left beside it at 1.2× SQLite",
            us("journal.single_sqlite") / 1.2 - room,
        ),
        (
            "CPU left beside it at 0.8× the append floor",
            us("journal.append_floor") / 0.8 - room,
        ),
        (
            "raw redb's in-memory commit of the five trees",
            us("journal.redb_in_memory"),
        ),
    ] {
        println!("| {name} | {value:.1} |");
    }
}
