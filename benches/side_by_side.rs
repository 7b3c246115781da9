//! annals side by side with what it replaces and what it stands on, on the same work in one
//! run: SQLite (through rusqlite's bundled library, WAL, `synchronous=FULL`), raw redb storing
//! records of the same size with no hashing and no projections (the floor), and the disk's own
//! `fdatasync` rate on a small file (the physical limit of a durable commit).
//!
//! `cargo bench --bench side_by_side` (1,000,000 bulk events, 5 rounds, 3 s per timed row);
//! `-- --quick` (100,000 events, 3 rounds, 1 s per timed row); `-- --check` exits 1 when a
//! ratio falls below its target. The contenders run interleaved within each round and every
//! figure is the median over rounds, because the machine is shared and its disk's fsync time
//! moves from second to second. The table goes to stdout, every figure to
//! `target/side_by_side.json`. Logs live under the target directory, on a real disk: an fsync
//! on tmpfs costs nothing and would flatter every row.
//!
//! The work: a *command* is a lease acquisition by its live holder (decide against the lease
//! row, append one `lease.renewed` event chained by hash, update the lease row), one per
//! durable commit. A *bulk event* is a `lease.acquired` event with a 200-byte payload over
//! 1,000 resources, appended 1,000 to a durable commit, each one applied to the lease
//! projection in the same transaction; SQLite inserts the event row with its chained hash and
//! upserts the lease row; raw redb inserts one key per record and nothing else.
//!
//! The sharing modes, in every round: single commands and group commit at 64 tasks on
//! stores opened exclusive, single-writer (the default, which the rows above use) and
//! multi-writer; and a single-writer store in this process followed by the real
//! `annals tail --json` in a child process, for the time from a commit's return to the
//! child's line for it, and for the writer's rate with and without the tail beside it. The
//! child is the `annals` binary of the bench's own profile: run
//! `cargo build --release --features cli` first, or those figures are skipped with a note.
//! `-- --sharing-only` runs these figures alone (with `--quick` and `--check` as above) and
//! writes them to `target/side_by_side_sharing.json`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufRead;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use annals::DomainEvent;
use annals::leases::events::{Acquired, LeaseEvent};
use annals::leases::{LeaseCommand, LeaseOutcome};
use annals::testing::internals::record::{Placement, encode_stored, header_bytes};
use annals::{
    Digest, Direction, ExpectedVersion, NewEvent, Position, Sharing, Store, StoreOptions,
    StreamVersion, Writer, WriterOptions,
};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::{Value, json};

const BATCH_EVENTS: usize = 1_000;
const BULK_RESOURCES: usize = 1_000;
const PAYLOAD_BYTES: usize = 200;
const TTL_MS: u64 = 60_000;
const EPOCH_MS: u64 = 1_700_000_000_000;
const GROUP_TASKS: usize = 64;
/// Records hashed for the blake3 baseline and for the per-phase encode and hash timings.
const SAMPLE_EVENTS_MAX: usize = 100_000;

const RAW: TableDefinition<u64, &[u8]> = TableDefinition::new("records");

struct Settings {
    quick: bool,
    check: bool,
    /// `--sharing-only`: the sharing-mode and tail figures alone.
    sharing_only: bool,
    /// The `annals` command line beside this bench, for the commit-to-tail figures.
    tail_binary: Option<PathBuf>,
    rounds: usize,
    events: usize,
    timed: Duration,
}

/// A contender's rows of one figure, one per round.
#[derive(Default)]
struct Samples(BTreeMap<&'static str, Vec<f64>>);

impl Samples {
    fn push(&mut self, key: &'static str, value: f64) {
        self.0.entry(key).or_default().push(value);
    }

    fn median(&self, key: &str) -> f64 {
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

    fn last(&self, key: &str) -> f64 {
        self.0
            .get(key)
            .and_then(|values| values.last())
            .copied()
            .unwrap_or(f64::NAN)
    }

    fn spread(&self, key: &str) -> (f64, f64) {
        let values = self.0.get(key).map_or(&[][..], Vec::as_slice);
        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (low, high)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--rss-child") {
        let path = args.get(at + 1).expect("--rss-child needs a path");
        rss_child(Path::new(path));
        return;
    }
    if args.iter().any(|a| a == "--profile-bulk") {
        // For a profiler: annals' bulk append, scan and rebuild alone.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let log = dir.path().join("bulk.redb");
        println!("bulk {:.0}/s", bulk_annals(&log, 100_000, 0));
        println!("scan {:.0}/s", scan_annals(&log));
        println!("rebuild {:.0}/s", rebuild(&log));
        return;
    }
    if args.iter().any(|a| a == "--command-trees") {
        // What a command's storage alone costs: raw redb writing one tree per commit, against
        // the three an annals command writes, with no hashing, deciding or applying; and
        // annals itself (also the mode to profile single commands under).
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        for round in 0..4 {
            let at = |name: &str| dir.path().join(format!("{name}-{round}.redb"));
            let run_for = Duration::from_secs(2);
            let one = single_redb(&at("one"), run_for);
            let three = command_trees(&at("three"), run_for);
            let annals = single_annals(&at("annals"), run_for);
            println!(
                "commits/s (bytes written per commit): one tree {:.0} ({:.0}), three trees {:.0} \
                 ({:.0}, {:.2} of one), annals {:.0} ({:.0}, {:.2} of one)",
                one.per_s(),
                one.written_per_commit(),
                three.per_s(),
                three.written_per_commit(),
                three.per_s() / one.per_s(),
                annals.per_s(),
                annals.written_per_commit(),
                annals.per_s() / one.per_s(),
            );
        }
        return;
    }
    if args.iter().any(|a| a == "--profile-group") {
        // For a profiler: group commit at 1 and 64 tasks.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_time()
            .build()
            .expect("a tokio runtime");
        for round in 0..3 {
            let at = |name: &str| dir.path().join(format!("{name}-{round}.redb"));
            let run_for = Duration::from_secs(2);
            let one = runtime.block_on(group_annals(&at("group-1"), 1, run_for));
            let many = runtime.block_on(group_annals(&at("group-64"), GROUP_TASKS, run_for));
            println!("group 1: {one:.0}/s, 64: {many:.0}/s, {:.1}x", many / one);
        }
        return;
    }
    if args.iter().any(|a| a == "--profile-scan") {
        // For a profiler: annals' scan alone, many times over one log.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let log = dir.path().join("bulk.redb");
        let raw = dir.path().join("bulk-raw.redb");
        bulk_annals(&log, 100_000, 0);
        bulk_redb(&raw, 100_000);
        for _ in 0..10 {
            println!("scan {:.0}/s", scan_annals(&log));
            println!("raw redb scan {:.0}/s", scan_redb(&raw));
        }
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let settings = Settings {
        quick,
        check: args.iter().any(|a| a == "--check"),
        sharing_only: args.iter().any(|a| a == "--sharing-only"),
        tail_binary: annals_binary(),
        rounds: if quick { 3 } else { 5 },
        events: if quick { 100_000 } else { 1_000_000 },
        timed: Duration::from_secs(if quick { 1 } else { 3 }),
    };
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let mut samples = Samples::default();
    if settings.tail_binary.is_none() {
        println!(
            "note: no annals binary beside this bench; the commit-to-tail figures are skipped \
             (run `cargo build --release --features cli` first)"
        );
    }
    if settings.sharing_only {
        for round in 0..settings.rounds {
            eprintln!("round {} of {} (sharing only)", round + 1, settings.rounds);
            run_sharing(&settings, &runtime, round, &mut samples);
        }
        let report = sharing_report(&settings, &samples, started.elapsed());
        let missed = print_sharing_table(&settings, &samples, &report);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("the target directory")
            .join("side_by_side_sharing.json");
        let text = serde_json::to_string_pretty(&report).expect("JSON");
        std::fs::write(&path, text + "\n").expect("write the JSON report");
        println!("figures written to {}", path.display());
        if settings.check && missed > 0 {
            eprintln!("{missed} ratio(s) below target");
            std::process::exit(1);
        }
        return;
    }
    let mut last_round_log = None;
    for round in 0..settings.rounds {
        eprintln!("round {} of {}", round + 1, settings.rounds);
        let (dir, annals_log) = run_round(&settings, &runtime, &mut samples);
        run_sharing(&settings, &runtime, round, &mut samples);
        last_round_log = Some((dir, annals_log));
    }
    let (dir, log) = last_round_log.expect("at least one round");
    let (rss_1x, rss_2x) = rebuild_rss(&settings, &log);
    drop(dir);
    let report = report(&settings, &samples, rss_1x, rss_2x, started.elapsed());
    let missed = print_table(&settings, &samples, &report);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("side_by_side.json");
    let text = serde_json::to_string_pretty(&report).expect("JSON");
    std::fs::write(&path, text + "\n").expect("write the JSON report");
    println!("figures written to {}", path.display());
    if settings.check && missed > 0 {
        eprintln!("{missed} ratio(s) below target");
        std::process::exit(1);
    }
}

/// One round: every contender on every figure, interleaved. Returns the round's folder and
/// its annals bulk log, kept for the memory measurement.
fn run_round(
    settings: &Settings,
    runtime: &tokio::runtime::Runtime,
    samples: &mut Samples,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
    let at = |name: &str| dir.path().join(name);

    for (rate, written, commits) in [
        (
            "single.annals",
            "written.annals",
            single_annals(&at("single.redb"), settings.timed),
        ),
        (
            "single.redb",
            "written.redb",
            single_redb(&at("single-raw.redb"), settings.timed),
        ),
        (
            "single.sqlite",
            "written.sqlite",
            single_sqlite(&at("single.sqlite"), settings.timed),
        ),
    ] {
        samples.push(rate, commits.per_s());
        samples.push(written, commits.written_per_commit());
    }
    samples.push(
        "single.fsync",
        fsync_floor(&at("fsync.bin"), settings.timed),
    );

    samples.push(
        "group.annals_1",
        runtime.block_on(group_annals(&at("group-1.redb"), 1, settings.timed)),
    );
    samples.push(
        "group.annals_64",
        runtime.block_on(group_annals(
            &at("group-64.redb"),
            GROUP_TASKS,
            settings.timed,
        )),
    );
    samples.push(
        "group.sqlite_64",
        group_sqlite(&at("group-64.sqlite"), GROUP_TASKS, settings.timed),
    );

    let annals_log = at("bulk.redb");
    let raw_log = at("bulk-raw.redb");
    let sqlite_log = at("bulk.sqlite");
    let events = settings.events;
    samples.push("bulk.annals", bulk_annals(&annals_log, events, 0));
    samples.push("bulk.redb", bulk_redb(&raw_log, events));
    samples.push("bulk.sqlite", bulk_sqlite(&sqlite_log, events));
    samples.push("bytes.annals", file_bytes(&annals_log) / events as f64);
    samples.push("bytes.sqlite", file_bytes(&sqlite_log) / events as f64);

    samples.push("scan.annals", scan_annals(&annals_log));
    samples.push("scan.annals_owned", scan_annals_owned(&annals_log));
    samples.push("scan.redb", scan_redb(&raw_log));
    let (verify, blake3) = verify_and_blake3(&annals_log);
    samples.push("verify", verify);
    samples.push("blake3", blake3);
    samples.push("rebuild", rebuild(&annals_log));
    let (encode_ns, hash_ns) = encode_and_hash_ns(events.min(SAMPLE_EVENTS_MAX));
    samples.push("phase.encode_ns", encode_ns);
    samples.push("phase.hash_ns", hash_ns);
    // Each ratio is taken within the round, between contenders that ran minutes apart at
    // most, then the median over rounds: the disk's speed drifts less within a round.
    for (key, numerator, denominator, _, _) in RATIOS {
        let value = samples.last(numerator) / samples.last(denominator);
        samples.push(key, value);
    }
    (dir, annals_log)
}

// ---- the work -------------------------------------------------------------------------------

fn holder(task: usize) -> String {
    format!("task-{task}")
}

fn lease_command(task: usize, step: u64) -> LeaseCommand {
    // The same holder re-acquiring its live lease renews it: one event per command.
    LeaseCommand::Acquire {
        resource: format!("resource-{task}"),
        holder: holder(task),
        ttl_ms: TTL_MS,
        now_ms: EPOCH_MS + step,
    }
}

fn granted(outcome: &LeaseOutcome) {
    assert!(
        matches!(outcome, LeaseOutcome::Granted { .. }),
        "each task owns its resource: {outcome:?}"
    );
}

/// The `i`-th bulk event: a lease acquisition whose payload is [`PAYLOAD_BYTES`] long.
fn bulk_event(i: usize) -> NewEvent {
    let acquired = |holder: String| {
        LeaseEvent::Acquired(Acquired {
            resource: format!("resource-{:04}", i % BULK_RESOURCES),
            holder,
            token: (i / BULK_RESOURCES) as u64 + 1,
            expires_at_ms: EPOCH_MS + i as u64 + TTL_MS,
        })
        .to_new_event(EPOCH_MS + i as u64)
    };
    let holder = format!("holder-{}", i % 7);
    let short = acquired(holder.clone()).payload.len();
    let event = acquired(format!(
        "{holder:-<0$}",
        holder.len() + PAYLOAD_BYTES - short
    ));
    debug_assert_eq!(event.payload.len(), PAYLOAD_BYTES);
    event
}

/// The stored bytes of `event` as annals would write it at `position`.
fn stored_bytes(event: &NewEvent, position: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let placement = Placement {
        stream: "bulk",
        position: Position(position),
        version: StreamVersion(position),
        prev: Digest::ZERO,
    };
    encode_stored(&mut out, event, placement).expect("a bench event within limits");
    out
}

fn file_bytes(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(f64::NAN, |m| m.len() as f64)
}

fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

// ---- durable single commands ----------------------------------------------------------------

/// What a timed loop of durable commits did.
struct Commits {
    count: u64,
    elapsed: Duration,
    /// Bytes the process handed to `write` calls meanwhile (pages, WAL frames, headers).
    written: u64,
}

impl Commits {
    /// Calls `commit` with 0, 1, 2, … (one durable commit each) until `run_for` has passed.
    fn measure(run_for: Duration, mut commit: impl FnMut(u64)) -> Commits {
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

    fn per_s(&self) -> f64 {
        per_second(self.count, self.elapsed)
    }

    fn written_per_commit(&self) -> f64 {
        self.written as f64 / self.count.max(1) as f64
    }
}

fn single_annals(path: &Path, run_for: Duration) -> Commits {
    single_annals_in(path, Sharing::default(), run_for)
}

/// Single durable commands as [`single_annals`], on a store opened in `sharing` mode.
fn single_annals_in(path: &Path, sharing: Sharing, run_for: Duration) -> Commits {
    let store = open_new(path, sharing);
    Commits::measure(run_for, |step| {
        granted(&store.execute(&lease_command(0, step)).expect("a command"));
    })
}

/// A new store at `path` in `sharing` mode.
fn open_new(path: &Path, sharing: Sharing) -> Store {
    Store::open_with(
        path,
        StoreOptions {
            create: true,
            sharing,
            ..StoreOptions::default()
        },
    )
    .expect("a new store")
}

fn single_redb(path: &Path, run_for: Duration) -> Commits {
    let db = redb::Database::create(path).expect("a redb file");
    let record = stored_bytes(&lease_command_event(), 0);
    Commits::measure(run_for, |step| {
        let txn = db.begin_write().expect("a write");
        {
            let mut table = txn.open_table(RAW).expect("the table");
            table.insert(step, record.as_slice()).expect("insert");
        }
        txn.commit().expect("commit");
    })
}

/// Raw redb writing what an annals command's commit writes: a record in the segments tree,
/// the head and the stream's tail in the meta tree, and the lease row, three trees.
fn command_trees(path: &Path, run_for: Duration) -> Commits {
    const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
    const HELD: TableDefinition<&str, &[u8]> = TableDefinition::new("held");
    let db = redb::Database::create(path).expect("a redb file");
    let record = stored_bytes(&lease_command_event(), 0);
    let head = [9u8; 40 + 32 * 10];
    let tail = [7u8; 8 + 16];
    let lease = [3u8; 80];
    Commits::measure(run_for, |step| {
        let txn = db.begin_write().expect("a write");
        {
            let mut table = txn.open_table(RAW).expect("the table");
            table.insert(step, record.as_slice()).expect("insert");
            let mut meta = txn.open_table(META).expect("the table");
            meta.insert("head", head.as_slice()).expect("insert");
            meta.insert("stream:lease/resource-0", tail.as_slice())
                .expect("insert");
            let mut held = txn.open_table(HELD).expect("the table");
            held.insert("resource-0", lease.as_slice()).expect("insert");
        }
        txn.commit().expect("commit");
    })
}

/// What one command appends, for sizing the raw redb record.
fn lease_command_event() -> NewEvent {
    let event = LeaseEvent::Renewed(annals::leases::events::Renewed {
        resource: "resource-0".into(),
        token: 1,
        expires_at_ms: EPOCH_MS + TTL_MS,
    });
    event.to_new_event(EPOCH_MS)
}

/// A SQLite store doing what the reference stores do: the event row with its hash chained to
/// the previous one, and the lease row updated, in one transaction.
struct Sqlite {
    conn: rusqlite::Connection,
    prev: [u8; 32],
    position: i64,
}

impl Sqlite {
    fn open(path: &Path) -> Sqlite {
        let conn = rusqlite::Connection::open(path).expect("a SQLite file");
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("WAL");
        conn.pragma_update(None, "synchronous", "FULL")
            .expect("FULL");
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS events (
                 position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL,
                 kind TEXT NOT NULL, at_ms INTEGER NOT NULL, payload BLOB NOT NULL,
                 prev BLOB NOT NULL, hash BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS leases (
                 resource TEXT PRIMARY KEY, holder TEXT NOT NULL, token INTEGER NOT NULL,
                 acquired_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL);",
        )
        .expect("the schema");
        Sqlite {
            conn,
            prev: [0; 32],
            position: 0,
        }
    }

    /// Appends one event and upserts its lease row, inside the caller's transaction.
    fn event(
        conn: &rusqlite::Connection,
        prev: &mut [u8; 32],
        position: &mut i64,
        stream: &str,
        event: &NewEvent,
        lease: (&str, &str, u64, u64),
    ) {
        let mut hasher = blake3::Hasher::new();
        hasher.update(prev);
        hasher.update(&position.to_le_bytes());
        hasher.update(stream.as_bytes());
        hasher.update(event.kind.as_bytes());
        hasher.update(&event.at_ms.to_le_bytes());
        hasher.update(blake3::hash(&event.payload).as_bytes());
        let hash = *hasher.finalize().as_bytes();
        conn.prepare_cached(
            "INSERT INTO events (position, stream, version, kind, at_ms, payload, prev, hash)
             VALUES (?1, ?2, ?1, ?3, ?4, ?5, ?6, ?7)",
        )
        .expect("prepare")
        .execute(rusqlite::params![
            *position,
            stream,
            event.kind,
            event.at_ms as i64,
            event.payload,
            &prev[..],
            &hash[..]
        ])
        .expect("insert the event");
        let (resource, holder, token, expires_at_ms) = lease;
        conn.prepare_cached(
            "INSERT INTO leases (resource, holder, token, acquired_at_ms, expires_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (resource) DO UPDATE SET holder = excluded.holder,
                 token = max(token, excluded.token), expires_at_ms = excluded.expires_at_ms",
        )
        .expect("prepare")
        .execute(rusqlite::params![
            resource,
            holder,
            token as i64,
            event.at_ms as i64,
            expires_at_ms as i64
        ])
        .expect("upsert the lease");
        *prev = hash;
        *position += 1;
    }

    /// One lease command in its own durable transaction: read the lease row, decide, append.
    fn command(&mut self, task: usize, step: u64) {
        let txn = self.conn.transaction().expect("a transaction");
        let resource = format!("resource-{task}");
        let holder = holder(task);
        let now_ms = EPOCH_MS + step;
        let current: Option<(String, i64)> = txn
            .prepare_cached("SELECT holder, token FROM leases WHERE resource = ?1")
            .expect("prepare")
            .query_row([&resource], |row| Ok((row.get(0)?, row.get(1)?)))
            .ok();
        let token = match current {
            Some((ref h, token)) if *h == holder => token as u64,
            Some((_, token)) => token as u64 + 1,
            None => 1,
        };
        let event = LeaseEvent::Renewed(annals::leases::events::Renewed {
            resource: resource.clone(),
            token,
            expires_at_ms: now_ms + TTL_MS,
        })
        .to_new_event(now_ms);
        Sqlite::event(
            &txn,
            &mut self.prev,
            &mut self.position,
            &format!("lease/{resource}"),
            &event,
            (&resource, &holder, token, now_ms + TTL_MS),
        );
        txn.commit().expect("commit");
    }
}

fn single_sqlite(path: &Path, run_for: Duration) -> Commits {
    let mut sqlite = Sqlite::open(path);
    Commits::measure(run_for, |step| sqlite.command(0, step))
}

/// The disk's limit: overwrite 64 bytes of a small file and `fdatasync` it, in a loop.
fn fsync_floor(path: &Path, run_for: Duration) -> f64 {
    let file = File::create(path).expect("a file");
    file.write_all_at(&[0; 4096], 0).expect("write");
    file.sync_all().expect("sync");
    let started = Instant::now();
    let mut syncs = 0u64;
    while started.elapsed() < run_for {
        file.write_all_at(&syncs.to_le_bytes().repeat(8), 0)
            .expect("write");
        file.sync_data().expect("fdatasync");
        syncs += 1;
    }
    per_second(syncs, started.elapsed())
}

// ---- group commit ---------------------------------------------------------------------------

async fn group_annals(path: &Path, tasks: usize, run_for: Duration) -> f64 {
    group_annals_in(path, Sharing::default(), tasks, run_for).await
}

/// Group commit as [`group_annals`], on a store opened in `sharing` mode.
async fn group_annals_in(path: &Path, sharing: Sharing, tasks: usize, run_for: Duration) -> f64 {
    let written_before = bytes_written();
    let store = Arc::new(open_new(path, sharing));
    let writer = Writer::start(store, WriterOptions::default()).expect("a writer");
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..tasks)
        .map(|task| {
            let writer = writer.clone();
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut commands = 0;
                while !stop.load(Ordering::Relaxed) {
                    granted(
                        &writer
                            .execute(lease_command(task, commands))
                            .await
                            .expect("a command"),
                    );
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
    let elapsed = started.elapsed();
    let stats = writer.stats();
    if std::env::var_os("ANNALS_BENCH_BATCHES").is_some() {
        let batches = stats.batches.max(1) as f64;
        eprintln!(
            "{tasks} tasks: {:.1} jobs per batch, {:.0} bytes written per batch",
            stats.jobs as f64 / batches,
            (bytes_written() - written_before) as f64 / batches,
        );
    }
    writer.close().await.expect("close");
    per_second(commands, elapsed)
}

/// Bytes this process has handed to `write` calls so far (Linux; 0 elsewhere).
fn bytes_written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|line| line.strip_prefix("wchar: ").map(str::to_owned))
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// SQLite has no group commit: 64 threads share one connection (the usual way to write one
/// SQLite file from many tasks), each command its own durable transaction.
fn group_sqlite(path: &Path, threads: usize, run_for: Duration) -> f64 {
    let sqlite = Arc::new(Mutex::new(Sqlite::open(path)));
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|task| {
            let (sqlite, stop, done) = (Arc::clone(&sqlite), Arc::clone(&stop), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut step = 0;
                while !stop.load(Ordering::Relaxed) {
                    sqlite.lock().expect("the connection").command(task, step);
                    step += 1;
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
    per_second(done.load(Ordering::Relaxed), started.elapsed())
}

// ---- sharing modes and a tail in another process ----------------------------------------------

const MODES: [(Sharing, &str, &str); 3] = [
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
const TAIL_EVENTS: usize = 500;
/// The writer's pause before each of those commits: long enough that the tail is usually idle
/// and polling when a commit lands, as a live log's tail mostly is.
const TAIL_GAP: Duration = Duration::from_millis(2);

/// One round of the sharing figures: single durable commands in each mode, then group commit
/// at 64 tasks in each mode (the modes' order turns from round to round), then the
/// commit-to-tail latency and the writer's rate with and without a tail beside it.
fn run_sharing(
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
fn tick(i: u64) -> NewEvent {
    NewEvent::new("bench.tick", EPOCH_MS + i, vec![b'x'; 64])
}

fn append_tick(store: &Store, i: u64) {
    let _ = store
        .append("tail", ExpectedVersion::Any, &[tick(i)])
        .expect("an append");
}

/// The `annals` binary of this profile: the bench runs from `<profile>/deps/`, and
/// `cargo build --release --features cli` puts the command line in `<profile>/`.
fn annals_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let binary = exe.parent()?.parent()?.join("annals");
    binary.is_file().then_some(binary)
}

struct Tailed {
    /// The median and p99 from a commit's return to the tail's line for it, in µs.
    latency_us: Option<(f64, f64)>,
    /// Durable one-event appends back to back, per second.
    writer_per_s: f64,
}

/// A single-writer store at `path`, followed (with `binary`) by
/// `annals tail <path> --from 0 --json` in a child process: [`TAIL_EVENTS`] commits
/// [`TAIL_GAP`] apart, each timed from the commit's return to the arrival of the child's line
/// for it; then durable appends back to back for `run_for` while the child follows. Without
/// `binary`, the same commits with no tail beside them.
fn tail_round(binary: Option<&Path>, path: &Path, run_for: Duration) -> Tailed {
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
struct Tail {
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

// ---- bulk -----------------------------------------------------------------------------------

/// Appends `events` bulk events from number `from`, 1,000 per durable commit, each applied to
/// the projections. Events are built outside the timing.
fn bulk_annals(path: &Path, events: usize, from: usize) -> f64 {
    let store = Store::open(path).expect("a store");
    let mut elapsed = Duration::ZERO;
    for batch_first in (from..from + events).step_by(BATCH_EVENTS) {
        let batch: Vec<NewEvent> = (batch_first..batch_first + BATCH_EVENTS)
            .map(bulk_event)
            .collect();
        let started = Instant::now();
        let _ = store
            .write(|session| session.append_unchecked("bulk", ExpectedVersion::Any, &batch))
            .expect("a bulk append");
        elapsed += started.elapsed();
    }
    per_second(events as u64, elapsed)
}

fn bulk_redb(path: &Path, events: usize) -> f64 {
    let db = redb::Database::create(path).expect("a redb file");
    let mut elapsed = Duration::ZERO;
    for batch_first in (0..events).step_by(BATCH_EVENTS) {
        let batch: Vec<Vec<u8>> = (batch_first..batch_first + BATCH_EVENTS)
            .map(|i| stored_bytes(&bulk_event(i), i as u64))
            .collect();
        let started = Instant::now();
        let txn = db.begin_write().expect("a write");
        {
            let mut table = txn.open_table(RAW).expect("the table");
            for (i, record) in (batch_first as u64..).zip(&batch) {
                table.insert(i, record.as_slice()).expect("insert");
            }
        }
        txn.commit().expect("commit");
        elapsed += started.elapsed();
    }
    per_second(events as u64, elapsed)
}

fn bulk_sqlite(path: &Path, events: usize) -> f64 {
    let mut sqlite = Sqlite::open(path);
    let mut elapsed = Duration::ZERO;
    for batch_first in (0..events).step_by(BATCH_EVENTS) {
        let batch: Vec<(NewEvent, String, String, u64, u64)> = (batch_first
            ..batch_first + BATCH_EVENTS)
            .map(|i| {
                let event = bulk_event(i);
                let Some(LeaseEvent::Acquired(a)) = decode_lease(&event) else {
                    unreachable!("bulk events are acquisitions")
                };
                (event, a.resource, a.holder, a.token, a.expires_at_ms)
            })
            .collect();
        let started = Instant::now();
        let txn = sqlite.conn.transaction().expect("a transaction");
        for (event, resource, holder, token, expires_at_ms) in &batch {
            Sqlite::event(
                &txn,
                &mut sqlite.prev,
                &mut sqlite.position,
                "bulk",
                event,
                (resource, holder, *token, *expires_at_ms),
            );
        }
        txn.commit().expect("commit");
        elapsed += started.elapsed();
    }
    // Fold the WAL into the database so the file size is the data's.
    sqlite
        .conn
        .pragma_update(None, "wal_checkpoint", "TRUNCATE")
        .ok();
    per_second(events as u64, elapsed)
}

fn decode_lease(event: &NewEvent) -> Option<LeaseEvent> {
    let record = annals::Record {
        position: Position(0),
        stream: "bulk".into(),
        version: StreamVersion(0),
        kind: event.kind.clone(),
        schema: event.schema,
        at_ms: event.at_ms,
        idempotency_key: None,
        payload: event.payload.clone(),
        payload_hash: Digest::ZERO,
        prev: Digest::ZERO,
        hash: Digest::ZERO,
    };
    LeaseEvent::from_record(&record).ok().flatten()
}

// ---- reading --------------------------------------------------------------------------------

fn scan_annals(path: &Path) -> f64 {
    let store = Store::open_existing(path).expect("the bulk log");
    let started = Instant::now();
    let snapshot = store.snapshot().expect("a snapshot");
    let mut count = 0u64;
    let mut bytes = 0usize;
    let mut records = snapshot
        .records(Position(0), Direction::Forward)
        .expect("records");
    // Borrowed views, as raw redb's scan borrows its values: each segment's digest and each
    // header are checked, nothing is copied.
    while let Some(record) = records.next_view() {
        let record = record.expect("a sound record");
        bytes += record.payload.len();
        count += 1;
    }
    std::hint::black_box(bytes);
    per_second(count, started.elapsed())
}

/// The same scan through `Iterator::next`, which copies each record into an owned `Record`:
/// what a rebuild reads through.
fn scan_annals_owned(path: &Path) -> f64 {
    let store = Store::open_existing(path).expect("the bulk log");
    let started = Instant::now();
    let snapshot = store.snapshot().expect("a snapshot");
    let mut count = 0u64;
    for record in snapshot
        .records(Position(0), Direction::Forward)
        .expect("records")
    {
        std::hint::black_box(record.expect("a sound record"));
        count += 1;
    }
    per_second(count, started.elapsed())
}

fn scan_redb(path: &Path) -> f64 {
    let db = redb::Database::open(path).expect("the raw log");
    let started = Instant::now();
    let txn = db.begin_read().expect("a read");
    let table = txn.open_table(RAW).expect("the table");
    let mut count = 0u64;
    let mut bytes = 0usize;
    for entry in table.iter().expect("iterate") {
        let (_, value) = entry.expect("a row");
        bytes += value.value().len();
        count += 1;
    }
    std::hint::black_box(bytes);
    per_second(count, started.elapsed())
}

/// The log's hash check (`verify_log`: every header and payload hash, the chain, the indexes),
/// and blake3 alone over the same bytes: each record's payload, and its header in derive-key
/// mode. Both in bytes hashed per second.
fn verify_and_blake3(path: &Path) -> (f64, f64) {
    let store = Store::open_existing(path).expect("the bulk log");
    let snapshot = store.snapshot().expect("a snapshot");
    // The bytes verify hashes: each header and payload. Measured, not timed.
    let mut total_bytes = 0u64;
    let mut sample = Vec::new();
    for record in snapshot
        .records(Position(0), Direction::Forward)
        .expect("records")
    {
        let record = record.expect("a sound record");
        let event = NewEvent {
            kind: record.kind.clone(),
            schema: record.schema,
            at_ms: record.at_ms,
            idempotency_key: record.idempotency_key.clone(),
            payload: record.payload.clone(),
        };
        let placement = Placement {
            stream: &record.stream,
            position: record.position,
            version: record.version,
            prev: record.prev,
        };
        let header = header_bytes(&event, placement, record.payload_hash).expect("a header");
        total_bytes += (header.len() + record.payload.len()) as u64;
        if sample.len() < SAMPLE_EVENTS_MAX {
            sample.push((header, record.payload));
        }
    }
    let started = Instant::now();
    let report = annals::testing::internals::audit::verify_log(&snapshot).expect("verify");
    let verify = per_second(total_bytes, started.elapsed());
    assert!(report.is_sound(), "the bulk log verifies");

    let sample_bytes: usize = sample.iter().map(|(h, p)| h.len() + p.len()).sum();
    let started = Instant::now();
    for (header, payload) in &sample {
        std::hint::black_box(blake3::hash(payload));
        let mut hasher =
            blake3::Hasher::new_derive_key(annals::testing::internals::hash::RECORD_HEADER_CONTEXT);
        hasher.update(header);
        std::hint::black_box(hasher.finalize());
    }
    let blake3 = per_second(sample_bytes as u64, started.elapsed());
    (verify, blake3)
}

fn rebuild(path: &Path) -> f64 {
    let store = Store::open_existing(path).expect("the bulk log");
    let events = store.head().expect("the head").next.0;
    let started = Instant::now();
    store.rebuild(None).expect("a rebuild");
    per_second(events, started.elapsed())
}

/// Per-event cost of encoding a record's header and of hashing it and its payload, alone.
fn encode_and_hash_ns(events: usize) -> (f64, f64) {
    let batch: Vec<NewEvent> = (0..events).map(bulk_event).collect();
    let placement = |i: usize| Placement {
        stream: "bulk",
        position: Position(i as u64),
        version: StreamVersion(i as u64),
        prev: Digest::ZERO,
    };
    let started = Instant::now();
    let mut headers = Vec::with_capacity(events);
    for (i, event) in batch.iter().enumerate() {
        headers.push(header_bytes(event, placement(i), Digest::ZERO).expect("a header"));
    }
    let encode = started.elapsed().as_nanos() as f64 / events as f64;
    let started = Instant::now();
    for (event, header) in batch.iter().zip(&headers) {
        std::hint::black_box(annals::testing::internals::hash::payload_hash(
            &event.payload,
        ));
        std::hint::black_box(annals::testing::internals::hash::record_hash(header));
    }
    let hash = started.elapsed().as_nanos() as f64 / events as f64;
    (encode, hash)
}

// ---- memory ---------------------------------------------------------------------------------

/// Peak resident memory of a rebuild of the log at `path` (1x), then of the same log with as
/// many events again appended (2x); each in a child process of its own.
fn rebuild_rss(settings: &Settings, path: &Path) -> (f64, f64) {
    let one = rss_of_child(path);
    bulk_annals(path, settings.events, settings.events);
    let two = rss_of_child(path);
    (one, two)
}

fn rss_of_child(path: &Path) -> f64 {
    let output = std::process::Command::new(std::env::current_exe().expect("this program"))
        .arg("--rss-child")
        .arg(path)
        .output()
        .expect("a child process");
    assert!(
        output.status.success(),
        "the child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("the child prints its peak in bytes")
}

/// In the child: rebuild every projection of the log at `path`, then print the peak resident
/// set (`VmHWM`) in bytes.
fn rss_child(path: &Path) {
    let store = Store::open_existing(path).expect("the log");
    store.rebuild(None).expect("a rebuild");
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    println!("{}", kib * 1024.0);
}

// ---- the report -----------------------------------------------------------------------------

/// The ratios taken in every round: (key, numerator, denominator, target, whether higher is
/// better). NaN: reported, no target.
const RATIOS: [(&str, &str, &str, f64, bool); 8] = [
    ("vs_redb_single", "single.annals", "single.redb", 0.8, true),
    (
        "vs_sqlite_single",
        "single.annals",
        "single.sqlite",
        1.5,
        true,
    ),
    (
        "single_vs_fsync_floor",
        "single.annals",
        "single.fsync",
        f64::NAN,
        true,
    ),
    (
        "group_commit_speedup",
        "group.annals_64",
        "group.annals_1",
        20.0,
        true,
    ),
    ("vs_sqlite_bulk", "bulk.annals", "bulk.sqlite", 3.0, true),
    ("vs_redb_bulk", "bulk.annals", "bulk.redb", 1.0 / 1.5, true),
    ("verify_vs_blake3", "verify", "blake3", 0.5, true),
    ("vs_redb_scan", "scan.annals", "scan.redb", 0.7, true),
];

/// The sharing figures' ratios, taken in every round as [`RATIOS`] are.
const SHARING_RATIOS: [(&str, &str, &str, f64, bool); 5] = [
    (
        "single_writer_vs_exclusive_single",
        "sharing.single_single_writer",
        "sharing.single_exclusive",
        0.75,
        true,
    ),
    (
        "multi_writer_vs_exclusive_single",
        "sharing.single_multi_writer",
        "sharing.single_exclusive",
        f64::NAN,
        true,
    ),
    (
        "single_writer_vs_exclusive_group64",
        "sharing.group64_single_writer",
        "sharing.group64_exclusive",
        0.9,
        true,
    ),
    (
        "multi_writer_vs_exclusive_group64",
        "sharing.group64_multi_writer",
        "sharing.group64_exclusive",
        f64::NAN,
        true,
    ),
    (
        "tail_writer_slowdown",
        "tail.writer_without",
        "tail.writer_with",
        f64::NAN,
        false,
    ),
];

/// Every ratio: (key, median over rounds, target, whether higher is better).
fn ratios(samples: &Samples, rss_1x: f64, rss_2x: f64) -> Vec<(&'static str, f64, f64, bool)> {
    let mut ratios: Vec<_> = RATIOS
        .iter()
        .chain(&SHARING_RATIOS)
        .map(|&(key, _, _, target, higher)| (key, samples.median(key), target, higher))
        .collect();
    ratios.push(("rebuild_rss_2x_vs_1x", rss_2x / rss_1x, 1.2, false));
    ratios
}

fn sharing_ratios(samples: &Samples) -> Vec<(&'static str, f64, f64, bool)> {
    SHARING_RATIOS
        .iter()
        .map(|&(key, _, _, target, higher)| (key, samples.median(key), target, higher))
        .collect()
}

/// The ratios' values into `report` and their targets into `report["targets"]`.
fn add_ratios(report: &mut Value, ratios: Vec<(&'static str, f64, f64, bool)>) {
    let mut targets = serde_json::Map::new();
    for (key, value, target, higher) in ratios {
        report[key] = json!(value);
        if !target.is_nan() {
            let bound = if higher { "min" } else { "max" };
            targets.insert(
                key.into(),
                json!({ bound: target, "met": meets(value, target, higher) }),
            );
        }
    }
    report["targets"] = Value::Object(targets);
}

/// The sharing figures: each mode's single commands and group commit, and the tail's.
fn sharing_json(settings: &Settings, samples: &Samples) -> Value {
    let m = |key| samples.median(key);
    json!({
        "single_durable_cmds_per_s": {
            "exclusive": m("sharing.single_exclusive"),
            "single_writer": m("sharing.single_single_writer"),
            "multi_writer": m("sharing.single_multi_writer"),
        },
        "group_commit_64_cmds_per_s": {
            "exclusive": m("sharing.group64_exclusive"),
            "single_writer": m("sharing.group64_single_writer"),
            "multi_writer": m("sharing.group64_multi_writer"),
        },
        "tail": {
            "binary": settings.tail_binary.as_ref().map(|p| p.display().to_string()),
            "note": "a single-writer store in this process appends one event per durable commit, each after a pause, while `annals tail --from 0 --json` follows in a child process; latency runs from the commit's return to the arrival of the child's line; the writer's rate is of back-to-back appends, with the tail following and without it",
            "events_per_round": TAIL_EVENTS,
            "gap_ms": TAIL_GAP.as_secs_f64() * 1e3,
            "commit_to_line_us": {
                "median": m("tail.latency_median_us"),
                "p99": m("tail.latency_p99_us"),
            },
            "writer_commits_per_s": {
                "without_tail": m("tail.writer_without"),
                "with_tail": m("tail.writer_with"),
            },
        },
    })
}

/// The report of `--sharing-only`.
fn sharing_report(settings: &Settings, samples: &Samples, took: Duration) -> Value {
    let mut report = json!({
        "machine": machine(),
        "quick": settings.quick,
        "rounds": settings.rounds,
        "seconds": took.as_secs_f64(),
        "note": "sharing figures only (--sharing-only); medians over rounds, modes interleaved within each round",
        "sharing": sharing_json(settings, samples),
    });
    add_ratios(&mut report, sharing_ratios(samples));
    report
}

fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let memory_kib = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "memory_bytes": memory_kib * 1024,
        "kernel": kernel.trim(),
        "sqlite": rusqlite::version(),
    })
}

fn report(
    settings: &Settings,
    samples: &Samples,
    rss_1x: f64,
    rss_2x: f64,
    took: Duration,
) -> Value {
    let m = |key| samples.median(key);
    let mut report = json!({
        "machine": machine(),
        "quick": settings.quick,
        "rounds": settings.rounds,
        "bulk_events": settings.events,
        "seconds": took.as_secs_f64(),
        "note": "medians over rounds, contenders interleaved within each round; the machine is shared, so the disk's fsync rate moves between rounds",
        "single_durable_cmds_per_s": {
            "annals": m("single.annals"),
            "redb": m("single.redb"),
            "sqlite": m("single.sqlite"),
            "fsync_floor": m("single.fsync"),
        },
        "bytes_written_per_durable_command": {
            "annals": m("written.annals"),
            "redb": m("written.redb"),
            "sqlite": m("written.sqlite"),
        },
        "group_commit_cmds_per_s": {
            "annals_1": m("group.annals_1"),
            "annals_64": m("group.annals_64"),
            "sqlite_64": m("group.sqlite_64"),
        },
        "bulk_events_per_s": {
            "annals": m("bulk.annals"),
            "redb": m("bulk.redb"),
            "sqlite": m("bulk.sqlite"),
        },
        "rebuild_events_per_s": m("rebuild"),
        "verify_bytes_per_s": m("verify"),
        "blake3_bytes_per_s": m("blake3"),
        "scan_events_per_s": {
            "annals": m("scan.annals"),
            "annals_owned": m("scan.annals_owned"),
            "redb": m("scan.redb")
        },
        "bytes_per_event": { "annals": m("bytes.annals"), "sqlite": m("bytes.sqlite") },
        "rebuild_peak_rss_bytes": { "1x": rss_1x, "2x": rss_2x },
        "phases_ns_per_event": phases(samples),
        "sharing": sharing_json(settings, samples),
    });
    add_ratios(&mut report, ratios(samples, rss_1x, rss_2x));
    report
}

/// Where an annals bulk event's time goes, from figures of the same round: encoding and
/// hashing measured alone; apply as a rebuild's time less an owned scan's (both read the log
/// into `Record`s); the rest of the bulk append is redb's inserts and commit, of which one
/// fdatasync per batch is the disk's share. A scan checks one digest per segment and parses
/// each header; it hashes no record on its own.
fn phases(samples: &Samples) -> Value {
    let ns = |per_second: f64| 1e9 / per_second;
    let bulk = ns(samples.median("bulk.annals"));
    let encode = samples.median("phase.encode_ns");
    let hash = samples.median("phase.hash_ns");
    let apply = (ns(samples.median("rebuild")) - ns(samples.median("scan.annals_owned"))).max(0.0);
    json!({
        "bulk_total": bulk,
        "encode": encode,
        "hash": hash,
        "apply": apply,
        "redb_insert_and_commit": (bulk - encode - hash - apply).max(0.0),
        "fsync_per_event_in_batches_of_1000": ns(samples.median("single.fsync")) / BATCH_EVENTS as f64,
        "scan_borrowed": ns(samples.median("scan.annals")),
        "scan_owned": ns(samples.median("scan.annals_owned")),
        "raw_redb_insert": ns(samples.median("bulk.redb")),
        "raw_redb_scan": ns(samples.median("scan.redb")),
    })
}

fn meets(value: f64, target: f64, higher: bool) -> bool {
    if higher {
        value >= target
    } else {
        value <= target
    }
}

fn print_table(settings: &Settings, samples: &Samples, report: &Value) -> usize {
    let row = |figure: &str, contender: &str, key: &str, unit: &str| {
        print_row(samples, figure, contender, key, unit);
    };
    println!(
        "annals side by side: {} bulk events, {} rounds, medians (range over rounds)",
        settings.events, settings.rounds
    );
    println!(
        "| {:<26} | {:<13} | {:>14} | {:>25} |",
        "figure", "contender", "median", "range"
    );
    println!("|{:-<28}|{:-<15}|{:->16}|{:->27}|", "", "", "", "");
    for (contender, key) in [
        ("annals", "single.annals"),
        ("raw redb", "single.redb"),
        ("SQLite", "single.sqlite"),
        ("fdatasync", "single.fsync"),
    ] {
        row("durable single cmds/s", contender, key, "/s");
    }
    for (contender, key) in [
        ("annals", "written.annals"),
        ("raw redb", "written.redb"),
        ("SQLite", "written.sqlite"),
    ] {
        row("bytes written per command", contender, key, "B");
    }
    for (contender, key) in [
        ("annals 1", "group.annals_1"),
        ("annals 64", "group.annals_64"),
        ("SQLite 64", "group.sqlite_64"),
    ] {
        row("group commit cmds/s", contender, key, "/s");
    }
    for (contender, key) in [
        ("annals", "bulk.annals"),
        ("raw redb", "bulk.redb"),
        ("SQLite", "bulk.sqlite"),
    ] {
        row("bulk events/s", contender, key, "/s");
    }
    row("rebuild events/s", "annals", "rebuild", "/s");
    row("verify bytes/s", "annals", "verify", "B/s");
    row("hash bytes/s", "blake3 alone", "blake3", "B/s");
    row("scan events/s", "annals", "scan.annals", "/s");
    row("scan events/s", "annals owned", "scan.annals_owned", "/s");
    row("scan events/s", "raw redb", "scan.redb", "/s");
    row("bytes per event", "annals", "bytes.annals", "B");
    row("bytes per event", "SQLite", "bytes.sqlite", "B");
    let rss = &report["rebuild_peak_rss_bytes"];
    println!(
        "rebuild peak RSS: {} B at 1x, {} B at 2x",
        human(rss["1x"].as_f64().unwrap_or(f64::NAN)),
        human(rss["2x"].as_f64().unwrap_or(f64::NAN))
    );
    println!(
        "phases, ns per bulk event: {}",
        report["phases_ns_per_event"]
    );
    print_sharing_rows(samples);
    println!();
    let mut keys = vec![
        "vs_redb_single",
        "vs_sqlite_single",
        "single_vs_fsync_floor",
        "group_commit_speedup",
        "vs_sqlite_bulk",
        "vs_redb_bulk",
        "verify_vs_blake3",
        "vs_redb_scan",
        "rebuild_rss_2x_vs_1x",
    ];
    keys.extend(SHARING_RATIOS.iter().map(|&(key, ..)| key));
    print_ratios(report, &keys)
}

/// A row of the figures' table: the median and the range over rounds.
fn print_row(samples: &Samples, figure: &str, contender: &str, key: &str, unit: &str) {
    let (low, high) = samples.spread(key);
    println!(
        "| {figure:<26} | {contender:<13} | {:>14} | {:>25} |",
        format!("{} {unit}", human(samples.median(key))),
        format!("{} – {}", human(low), human(high)),
    );
}

/// The sharing figures' rows, under the table's header.
fn print_sharing_rows(samples: &Samples) {
    let row = |figure: &str, contender: &str, key: &str, unit: &str| {
        print_row(samples, figure, contender, key, unit);
    };
    println!();
    println!(
        "| {:<26} | {:<13} | {:>14} | {:>25} |",
        "sharing figure", "mode", "median", "range"
    );
    println!("|{:-<28}|{:-<15}|{:->16}|{:->27}|", "", "", "", "");
    for (mode, key) in [
        ("exclusive", "sharing.single_exclusive"),
        ("single-writer", "sharing.single_single_writer"),
        ("multi-writer", "sharing.single_multi_writer"),
    ] {
        row("durable single cmds/s", mode, key, "/s");
    }
    for (mode, key) in [
        ("exclusive", "sharing.group64_exclusive"),
        ("single-writer", "sharing.group64_single_writer"),
        ("multi-writer", "sharing.group64_multi_writer"),
    ] {
        row("group commit 64 cmds/s", mode, key, "/s");
    }
    row(
        "tail latency median",
        "single-writer",
        "tail.latency_median_us",
        "µs",
    );
    row(
        "tail latency p99",
        "single-writer",
        "tail.latency_p99_us",
        "µs",
    );
    row(
        "writer commits/s, no tail",
        "single-writer",
        "tail.writer_without",
        "/s",
    );
    row(
        "writer commits/s, tailed",
        "single-writer",
        "tail.writer_with",
        "/s",
    );
}

/// The `--sharing-only` table: the sharing rows and their ratios. Returns the ratios missed.
fn print_sharing_table(settings: &Settings, samples: &Samples, report: &Value) -> usize {
    println!(
        "annals sharing modes and tail (--sharing-only): {} rounds, medians (range over rounds)",
        settings.rounds
    );
    print_sharing_rows(samples);
    println!();
    let keys: Vec<_> = SHARING_RATIOS.iter().map(|&(key, ..)| key).collect();
    print_ratios(report, &keys)
}

/// The ratios' table, with their targets. Returns how many missed their target.
fn print_ratios(report: &Value, keys: &[&str]) -> usize {
    println!(
        "| {:<34} | {:>8} | {:>8} | {:<4} |",
        "ratio", "value", "target", "met"
    );
    println!("|{:-<36}|{:->10}|{:->10}|{:-<6}|", "", "", "", "");
    let mut missed = 0;
    let targets = &report["targets"];
    for &key in keys {
        let value = report[key].as_f64().unwrap_or(f64::NAN);
        let (target, met) = match targets.get(key) {
            Some(t) => {
                let bound = t
                    .get("min")
                    .map(|b| format!("≥ {:.2}", b.as_f64().unwrap_or(f64::NAN)))
                    .or_else(|| {
                        t.get("max")
                            .map(|b| format!("≤ {:.2}", b.as_f64().unwrap_or(f64::NAN)))
                    })
                    .unwrap_or_default();
                let met = t["met"].as_bool().unwrap_or(false);
                if !met {
                    missed += 1;
                }
                (bound, if met { "yes" } else { "NO" })
            }
            None => ("—".to_owned(), ""),
        };
        println!("| {key:<34} | {value:>8.2} | {target:>8} | {met:<4} |");
    }
    missed
}

/// A figure with three significant digits and an SI suffix.
fn human(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".into();
    }
    let (scaled, suffix) = if value >= 1e9 {
        (value / 1e9, "G")
    } else if value >= 1e6 {
        (value / 1e6, "M")
    } else if value >= 1e3 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let digits = if scaled >= 100.0 {
        0
    } else if scaled >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.digits$}{suffix}")
}
