//! The `annals` command line: append to, read, verify and measure an annals log file.
//!
//! This file only parses arguments, calls the library and prints what it returns; every rule
//! (expected versions, idempotency, limits, verification) lives in the `annals` crate.
//!
//! Exit codes: 0 ok; 1 findings (an append refused, corrupt data, a log that fails
//! verification); 2 usage or I/O errors, including a file that is missing or not an annals log.

use std::borrow::Cow;
use std::fs;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use annals::Entity;
use annals::ImportStage;
use annals::ProofFile;
use annals::export::{ExportError, ExportHeader, ExportReader};
use annals::merkle::TreeHead;
use annals::testing::internals::hash::hex;
use annals::{
    AppendError, AppendOutcome, Direction, Error, ExpectedVersion, Field, LimitError, NewEvent,
    Position, Record, Stats, Store, StoreOptions, StreamVersion, VerifyReport,
};
use clap::{Args, Parser, Subcommand};
use serde::Serialize;

/// Exit code for findings: an append refused, corrupt data, a log that fails verification.
const EXIT_FINDINGS: u8 = 1;
/// Exit code for usage and I/O errors.
const EXIT_USAGE: u8 = 2;
/// How many hex digits of a record hash the text form of `log` shows.
const HASH_TEXT_DIGITS: usize = 16;

/// An embedded, event-sourced, append-only log store.
#[derive(Parser)]
#[command(name = "annals", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a realistic workload across all four projections (at least 10,000 records),
    /// print what it wrote, then verify the log.
    Demo(DemoArgs),
    /// Append one event to a stream, creating the log file if it is missing. Prints the
    /// position written, or `duplicate <POSITION>` for an idempotent repeat.
    Append(AppendArgs),
    /// Print records, one line each.
    Log(LogArgs),
    /// Check every hash, link and index of the log; exit 1 if anything is wrong.
    Verify(VerifyArgs),
    /// Print counts and sizes of the log.
    Stats(StatsArgs),
    /// Print a projection's rows (registry, leases, outbox, runs).
    State(StateArgs),
    /// Clear projections and rebuild them by replaying the whole log.
    Rebuild(RebuildArgs),
    /// Print the root of the log's Merkle tree (of every record, or of the first N).
    Root(RootArgs),
    /// Print a proof: that a record is in the tree (`--position`), or that an earlier tree is
    /// a prefix of a later one (`--from-size`).
    Prove(ProveArgs),
    /// Check a proof file printed by `prove --json`; exit 0 if valid, 1 if not.
    CheckProof(CheckProofArgs),
    /// Print every event that touched an entity, in log order: ENTITY is `stream:<name>`,
    /// `lease:<resource>`, `lane:<lane>/<key>`, `outbox:<key>`, `run:<id>`,
    /// `registry:<handle>`, `setting:<key>` or `consumer:<name>`.
    History(HistoryArgs),
    /// Write records to a portable export file: their stored bytes between a header and a
    /// trailer naming the range, the head hash and the Merkle root.
    Export(ExportArgs),
    /// Check an export file completely, then append its records to a log (a new one when DB
    /// does not exist); a damaged file is refused naming its first bad position.
    Import(ImportArgs),
    /// For the real-crash test: append through the async writer, printing each durable
    /// position and hash, until killed.
    #[command(hide = true)]
    CrashWriter(CrashWriterArgs),
}

#[derive(Args)]
struct CrashWriterArgs {
    /// The log file, created if missing.
    db: PathBuf,
    /// Concurrent writing tasks.
    #[arg(long, default_value_t = 8)]
    tasks: u32,
    /// Stop after this many records if not killed first.
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
}

#[derive(Args)]
struct HistoryArgs {
    /// The log file; it must exist.
    db: PathBuf,
    /// The entity, e.g. `lease:deploy-lock`.
    entity: String,
    /// Print JSON lines (as `log --json` does) instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ExportArgs {
    /// The log file; it must exist.
    db: PathBuf,
    /// The export file to write (replaced if it exists).
    file: PathBuf,
    /// The first position to export [default: 0].
    #[arg(long, default_value_t = 0)]
    from: u64,
    /// Export up to this position, excluded [default: the head].
    #[arg(long)]
    to: Option<u64>,
}

#[derive(Args)]
struct ImportArgs {
    /// The export file.
    file: PathBuf,
    /// The log to import into: created if missing, else continued.
    db: PathBuf,
}

#[derive(Args)]
struct RootArgs {
    /// The log file; it must exist.
    db: PathBuf,
    /// The tree of the first N records [default: all of them].
    #[arg(long)]
    size: Option<u64>,
    /// Print a JSON object (`size`, `root`) instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ProveArgs {
    /// The log file; it must exist.
    db: PathBuf,
    /// Prove that the record at this position is in the tree.
    #[arg(
        long,
        conflicts_with = "from_size",
        required_unless_present = "from_size"
    )]
    position: Option<u64>,
    /// Prove that the tree of this many records is a prefix of the tree of `--size`.
    #[arg(long)]
    from_size: Option<u64>,
    /// The tree of the first N records [default: all of them].
    #[arg(long)]
    size: Option<u64>,
    /// Print the proof file's JSON (what `check-proof` reads) instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CheckProofArgs {
    /// A proof file, as `prove --json` prints it.
    proof: PathBuf,
}

#[derive(Args)]
struct DemoArgs {
    /// The log file, created if missing.
    #[arg(default_value = "annals-demo.redb")]
    db: PathBuf,
    /// Append at least this many records.
    #[arg(long, default_value_t = 10_000)]
    records: u64,
}

#[derive(Args)]
struct StateArgs {
    /// The log file; it must exist.
    db: PathBuf,
    /// The projection: registry, leases, outbox or runs.
    projection: String,
    /// Show the state as of the first N records, replayed into memory.
    #[arg(long)]
    at: Option<u64>,
    /// Print one line of JSON instead of indented JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct RebuildArgs {
    /// The log file; it must exist.
    db: PathBuf,
    /// Rebuild only this projection [default: all].
    #[arg(long)]
    projection: Option<String>,
}

#[derive(Args)]
struct AppendArgs {
    /// The log file.
    db: PathBuf,
    /// The stream to append to.
    stream: String,
    /// The event type, e.g. `lease.acquired`.
    kind: String,
    /// The payload, stored as its UTF-8 bytes; `@FILE` stores the bytes of FILE. Empty if
    /// absent. (Text that starts with `@` has to go through a file.)
    payload: Option<String>,
    /// The state the stream must be in: `any`, `none` (no record yet), `exists`, or the
    /// stream's last version N.
    #[arg(long, default_value = "any", value_parser = parse_expected)]
    expect: ExpectedVersion,
    /// An idempotency key: repeating it with the same content is a duplicate, not a new record.
    #[arg(long)]
    key: Option<String>,
    /// The event's time in milliseconds since the Unix epoch [default: now].
    #[arg(long)]
    at_ms: Option<u64>,
    /// The payload's schema version [default: 1].
    #[arg(long)]
    schema: Option<u16>,
}

#[derive(Args)]
struct LogArgs {
    /// The log file; it must exist.
    db: PathBuf,
    /// The first position to read, or with `--stream` the first stream version
    /// [default: the start, or the end with `--backward`].
    #[arg(long)]
    from: Option<u64>,
    /// Read only this stream.
    #[arg(long)]
    stream: Option<String>,
    /// Print at most this many records.
    #[arg(long)]
    limit: Option<usize>,
    /// Read from newest to oldest.
    #[arg(long)]
    backward: bool,
    /// Print only records of this kind.
    #[arg(long)]
    kind: Option<String>,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct VerifyArgs {
    /// The log file; it must exist.
    db: PathBuf,
    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct StatsArgs {
    /// The log file; it must exist.
    db: PathBuf,
    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Why a command stopped: what to tell stderr and how to exit.
enum Failure {
    /// A finding (refused append, corrupt data): exit 1.
    Finding(String),
    /// Bad usage or a failure of the file system: exit 2.
    Usage(String),
    /// Standard output was closed early (e.g. piped into `head`): stop quietly.
    Closed,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        match error {
            Error::Append(_)
            | Error::Store(_)
            | Error::Corrupt { .. }
            | Error::CorruptMeta(_)
            | Error::DamagedFile(_) => Failure::Finding(message),
            Error::Export(export) if !matches!(*export, ExportError::Io(_)) => {
                Failure::Finding(message)
            }
            _ => Failure::Usage(message),
        }
    }
}

/// Only for writing to standard output; file reads say which file failed.
impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        match error.kind() {
            io::ErrorKind::BrokenPipe => Failure::Closed,
            _ => Failure::Usage(format!("writing output: {error}")),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Append(args) => append(args),
        Command::Log(args) => log(args),
        Command::Verify(args) => verify(args),
        Command::Stats(args) => stats(args),
        Command::Demo(args) => demo(args),
        Command::State(args) => state(args),
        Command::Rebuild(args) => rebuild(args),
        Command::Root(args) => root(args),
        Command::Prove(args) => prove(args),
        Command::CheckProof(args) => check_proof(args),
        Command::History(args) => history(args),
        Command::Export(args) => export(args),
        Command::Import(args) => import(args),
        Command::CrashWriter(args) => {
            let mut out = io::stdout().lock();
            annals::testing::crash::write_and_report(&args.db, args.tasks, args.records, &mut out)
                .map(|()| ExitCode::SUCCESS)
                .map_err(Failure::from)
        }
    };
    match result {
        Ok(code) => code,
        Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::Finding(message)) => fail(EXIT_FINDINGS, &message),
        Err(Failure::Usage(message)) => fail(EXIT_USAGE, &message),
    }
}

fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("annals: {message}");
    ExitCode::from(code)
}

fn parse_expected(text: &str) -> Result<ExpectedVersion, String> {
    text.parse()
        .map_err(|error: annals::UnknownExpectedVersion| error.to_string())
}

fn append(args: AppendArgs) -> Result<ExitCode, Failure> {
    // The event is made before the file is opened, so a bad payload file or clock leaves no
    // new log file behind.
    let options = StoreOptions {
        create: true,
        ..StoreOptions::default()
    };
    let payload = match args.payload.as_deref() {
        None => Vec::new(),
        Some(text) => match text.strip_prefix('@') {
            Some(file) => read_payload(Path::new(file), options.limits.payload_bytes_max)?,
            None => text.as_bytes().to_vec(),
        },
    };
    let at_ms = match args.at_ms {
        Some(at_ms) => at_ms,
        None => now_ms()?,
    };
    let mut event = NewEvent::new(args.kind, at_ms, payload);
    if let Some(key) = args.key {
        event = event.with_idempotency_key(key);
    }
    if let Some(schema) = args.schema {
        event = event.with_schema(schema);
    }
    let store = Store::open_with(&args.db, options)?;
    let outcome = store.append(&args.stream, args.expect, &[event])?;
    let mut out = io::stdout().lock();
    match outcome {
        AppendOutcome::Appended(appended) => writeln!(out, "{}", appended.first_position)?,
        AppendOutcome::Duplicate { .. } => writeln!(out, "duplicate {}", outcome.first_position())?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Reads a payload file, reading no more than one byte past the store's payload limit: a
/// larger file is refused as the append would refuse it, without loading it whole.
fn read_payload(path: &Path, payload_bytes_max: u32) -> Result<Vec<u8>, Failure> {
    let unreadable = |error: io::Error| Failure::Usage(format!("{}: {error}", path.display()));
    let file = fs::File::open(path).map_err(unreadable)?;
    let mut payload = Vec::new();
    file.take(u64::from(payload_bytes_max) + 1)
        .read_to_end(&mut payload)
        .map_err(unreadable)?;
    if payload.len() as u64 > u64::from(payload_bytes_max) {
        let len = fs::metadata(path).map_or(payload.len() as u64, |m| m.len());
        let limit = LimitError::TooLong {
            field: Field::Payload,
            len,
            max: u64::from(payload_bytes_max),
        };
        return Err(Error::from(AppendError::from(limit)).into());
    }
    Ok(payload)
}

fn now_ms() -> Result<u64, Failure> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|since| u64::try_from(since.as_millis()).ok())
        .ok_or_else(|| {
            Failure::Usage("the system clock is before the Unix epoch; pass --at-ms".into())
        })
}

fn log(args: LogArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let snapshot = store.snapshot()?;
    let direction = if args.backward {
        Direction::Backward
    } else {
        Direction::Forward
    };
    // Backward from at or past the end starts at the last record.
    let from = args.from.unwrap_or(match direction {
        Direction::Forward => 0,
        Direction::Backward => u64::MAX,
    });
    let mut out = BufWriter::new(io::stdout().lock());
    let printed = match args.stream.as_deref() {
        Some(stream) => {
            let records = snapshot.stream(stream, StreamVersion(from), direction)?;
            print_records(&mut out, records, &args)
        }
        None => {
            let records = snapshot.records(Position(from), direction)?;
            print_records(&mut out, records, &args)
        }
    };
    // The good records before a corrupt one are printed before the error is reported.
    out.flush()?;
    printed.map(|()| ExitCode::SUCCESS)
}

/// Prints the records that pass the `--kind` filter, up to `--limit`, stopping at the first
/// error.
fn print_records(
    out: &mut impl Write,
    records: impl Iterator<Item = annals::Result<Record>>,
    args: &LogArgs,
) -> Result<(), Failure> {
    let wanted = |record: &annals::Result<Record>| match (record, args.kind.as_deref()) {
        (Ok(record), Some(kind)) => record.kind == kind,
        _ => true,
    };
    for record in records
        .filter(wanted)
        .take(args.limit.unwrap_or(usize::MAX))
    {
        let record = record?;
        if args.json {
            print_json(out, &record_json(&record))?;
        } else {
            writeln!(out, "{}", record_text(&record))?;
        }
    }
    Ok(())
}

/// One record as a line of `log --json`.
#[derive(Serialize)]
struct RecordJson<'a> {
    position: u64,
    stream: &'a str,
    version: u64,
    kind: &'a str,
    schema: u16,
    at_ms: u64,
    idempotency_key: Option<&'a str>,
    /// `utf8` or `hex`: how `payload` spells the payload bytes.
    payload_encoding: &'static str,
    payload: Cow<'a, str>,
    payload_hash: String,
    prev: String,
    hash: String,
}

fn record_json(record: &Record) -> RecordJson<'_> {
    let (payload_encoding, payload) = match std::str::from_utf8(&record.payload) {
        Ok(text) => ("utf8", Cow::Borrowed(text)),
        Err(_) => ("hex", Cow::Owned(hex(&record.payload))),
    };
    RecordJson {
        position: record.position.0,
        stream: &record.stream,
        version: record.version.0,
        kind: &record.kind,
        schema: record.schema,
        at_ms: record.at_ms,
        idempotency_key: record.idempotency_key.as_deref(),
        payload_encoding,
        payload,
        payload_hash: record.payload_hash.to_hex(),
        prev: record.prev.to_hex(),
        hash: record.hash.to_hex(),
    }
}

/// One record as a line of `log`:
/// `<position> <stream>@<version> <kind> at=<at_ms> key=<key or -> payload=<payload> hash=<16 hex>`.
/// A UTF-8 payload and a key are quoted and escaped; other payloads are `hex:…`.
fn record_text(record: &Record) -> String {
    let key = match record.idempotency_key.as_deref() {
        Some(key) => format!("{key:?}"),
        None => "-".to_owned(),
    };
    let payload = match std::str::from_utf8(&record.payload) {
        Ok(text) => format!("{text:?}"),
        Err(_) => format!("hex:{}", hex(&record.payload)),
    };
    let hash = record.hash.to_hex();
    format!(
        "{} {}@{} {} at={} key={key} payload={payload} hash={}",
        record.position,
        word(&record.stream),
        record.version,
        word(&record.kind),
        record.at_ms,
        &hash[..HASH_TEXT_DIGITS],
    )
}

/// `text` as is, or quoted and escaped if it would break a space-separated line.
fn word(text: &str) -> Cow<'_, str> {
    let plain = !text.is_empty()
        && !text.starts_with('"')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control());
    if plain {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("{text:?}"))
    }
}

/// The report of `verify --json`.
#[derive(Serialize)]
struct VerifyJson {
    sound: bool,
    records: u64,
    streams: u64,
    head_position: u64,
    head_hash: String,
    /// The Merkle root of the records checked, recomputed from their hashes.
    root: String,
    problem: Option<ProblemJson>,
}

#[derive(Serialize)]
struct ProblemJson {
    position: u64,
    message: String,
}

fn verify_json(report: &VerifyReport) -> VerifyJson {
    VerifyJson {
        sound: report.is_sound(),
        records: report.records,
        streams: report.streams,
        head_position: report.head.next.0,
        head_hash: report.head.hash.to_hex(),
        root: report.root.to_hex(),
        problem: report.problem.as_ref().map(|finding| ProblemJson {
            position: finding.position.0,
            message: finding.problem.to_string(),
        }),
    }
}

fn verify(args: VerifyArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let mut line = ProgressLine::new("verify", 2 * store.head()?.next.0);
    let report = store.verify_with(&mut |done| line.update(done));
    line.finish();
    let report = report?;
    let mut out = io::stdout().lock();
    if args.json {
        print_json(&mut out, &verify_json(&report))?;
    } else {
        match &report.problem {
            None => writeln!(
                out,
                "sound: {} records, {} streams, head {} {}, root {}",
                report.records, report.streams, report.head.next, report.head.hash, report.root
            )?,
            Some(finding) => writeln!(
                out,
                "unsound at {finding} ({} records before it checked out)",
                report.records
            )?,
        }
    }
    out.flush()?;
    Ok(if report.is_sound() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FINDINGS)
    })
}

/// The report of `stats --json`.
#[derive(Serialize)]
struct StatsJson {
    records: u64,
    streams: u64,
    head_position: u64,
    head_hash: String,
    file_bytes: u64,
}

fn stats_json(stats: &Stats) -> StatsJson {
    StatsJson {
        records: stats.records,
        streams: stats.streams,
        head_position: stats.head.next.0,
        head_hash: stats.head.hash.to_hex(),
        file_bytes: stats.file_bytes,
    }
}

fn stats(args: StatsArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let stats = store.stats()?;
    let mut out = io::stdout().lock();
    if args.json {
        print_json(&mut out, &stats_json(&stats))?;
    } else {
        writeln!(out, "records        {}", stats.records)?;
        writeln!(out, "streams        {}", stats.streams)?;
        writeln!(out, "head position  {}", stats.head.next)?;
        writeln!(out, "head hash      {}", stats.head.hash)?;
        writeln!(out, "file bytes     {}", stats.file_bytes)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `value` as one line of JSON.
fn print_json(out: &mut impl Write, value: &impl Serialize) -> Result<(), Failure> {
    let line = serde_json::to_string(value)
        .map_err(|error| Failure::Usage(format!("encoding JSON: {error}")))?;
    writeln!(out, "{line}")?;
    Ok(())
}

fn state(args: StateArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let at = args.at.map(Position);
    let mut line = ProgressLine::new(
        "replay",
        at.map_or(0, |at| at.0.min(store.head().map_or(0, |h| h.next.0))),
    );
    let rows = store.state_json_with(&args.projection, at, &mut |done| line.update(done));
    line.finish();
    let rows = rows?;
    let mut out = BufWriter::new(io::stdout().lock());
    if args.json {
        print_json(&mut out, &rows)?;
    } else {
        let text = serde_json::to_string_pretty(&rows)
            .map_err(|error| Failure::Usage(format!("formatting JSON: {error}")))?;
        writeln!(out, "{text}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn rebuild(args: RebuildArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_existing(&args.db)?;
    let mut line = ProgressLine::new("rebuild", store.head()?.next.0);
    let rebuilt = store.rebuild_with(args.projection.as_deref(), &mut |done| line.update(done));
    line.finish();
    rebuilt?;
    let head = store.head()?;
    let names: Vec<&str> = match &args.projection {
        Some(name) => vec![name.as_str()],
        None => store.projections().iter().map(|p| p.name()).collect(),
    };
    println!(
        "rebuilt {} through position {}",
        names.join(", "),
        head.next
    );
    Ok(ExitCode::SUCCESS)
}

fn demo(args: DemoArgs) -> Result<ExitCode, Failure> {
    let store = Store::open(&args.db)?;
    let report = annals::demo::run(&store, args.records, |_| {})?;
    let mut out = BufWriter::new(io::stdout().lock());
    writeln!(
        out,
        "wrote {} records to {}",
        report.records,
        args.db.display()
    )?;
    for (projection, records) in &report.per_projection {
        writeln!(out, "  {projection:<10} {records:>7} records")?;
    }
    writeln!(out, "head {} {}", report.head.next, report.head.hash)?;
    let verified = store.verify()?;
    match &verified.problem {
        None => {
            writeln!(
                out,
                "verify: sound ({} records, {} streams)",
                verified.records, verified.streams
            )?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Some(finding) => {
            out.flush()?;
            Err(Failure::Finding(format!("verify failed at {finding}")))
        }
    }
}

/// The report of `root --json`.
#[derive(Serialize)]
struct RootJson {
    size: u64,
    root: String,
    tree_head: String,
}

fn root(args: RootArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let snapshot = store.snapshot()?;
    let size = args.size.unwrap_or(snapshot.head()?.next.0);
    let root = snapshot.merkle_root(size)?;
    let mut out = io::stdout().lock();
    if args.json {
        let report = RootJson {
            size,
            root: root.to_hex(),
            tree_head: TreeHead { size, root }.hash().to_hex(),
        };
        print_json(&mut out, &report)?;
    } else {
        writeln!(out, "size      {size}")?;
        writeln!(out, "root      {root}")?;
        writeln!(out, "tree head {}", TreeHead { size, root }.hash())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn prove(args: ProveArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let snapshot = store.snapshot()?;
    let size = args.size.unwrap_or(snapshot.head()?.next.0);
    let proof = match (args.position, args.from_size) {
        (Some(position), _) => ProofFile::inclusion(&snapshot, Position(position), size)?,
        (None, Some(from_size)) => ProofFile::consistency(&snapshot, from_size, size)?,
        (None, None) => return Err(Failure::Usage("give --position or --from-size".into())),
    };
    let mut out = io::stdout().lock();
    if args.json {
        print_json(&mut out, &proof)?;
    } else {
        match &proof {
            ProofFile::Inclusion {
                position,
                size,
                record_hash,
                root,
                tree_head,
                path,
            } => {
                writeln!(
                    out,
                    "inclusion of position {position} in the tree of size {size}"
                )?;
                writeln!(out, "record hash {record_hash}")?;
                writeln!(out, "root        {root}")?;
                writeln!(out, "tree head   {tree_head}")?;
                for hash in path {
                    writeln!(out, "path        {hash}")?;
                }
            }
            ProofFile::Consistency {
                from_size,
                from_root,
                size,
                root,
                path,
                ..
            } => {
                writeln!(out, "consistency of size {from_size} with size {size}")?;
                writeln!(out, "from root   {from_root}")?;
                writeln!(out, "root        {root}")?;
                for hash in path {
                    writeln!(out, "path        {hash}")?;
                }
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The largest proof file `check-proof` reads: a proof has at most 2·64 hashes.
const PROOF_FILE_BYTES_MAX: u64 = 64 * 1024;

fn check_proof(args: CheckProofArgs) -> Result<ExitCode, Failure> {
    let unreadable =
        |error: io::Error| Failure::Usage(format!("{}: {error}", args.proof.display()));
    let file = fs::File::open(&args.proof).map_err(unreadable)?;
    let mut bytes = Vec::new();
    file.take(PROOF_FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > PROOF_FILE_BYTES_MAX {
        return Err(Failure::Finding(format!(
            "invalid: {} is over {PROOF_FILE_BYTES_MAX} bytes, larger than any proof",
            args.proof.display()
        )));
    }
    let proof: ProofFile = serde_json::from_slice(&bytes).map_err(|error| {
        Failure::Finding(format!(
            "invalid: {} is not a proof file: {error}",
            args.proof.display()
        ))
    })?;
    match proof.check() {
        Ok(()) => {
            let mut out = io::stdout().lock();
            match &proof {
                ProofFile::Inclusion {
                    position,
                    size,
                    root,
                    ..
                } => writeln!(
                    out,
                    "valid: position {position} is in the tree of size {size} with root {root}"
                )?,
                ProofFile::Consistency {
                    from_size,
                    size,
                    root,
                    ..
                } => writeln!(
                    out,
                    "valid: the tree of size {from_size} is a prefix of the tree of size {size} with root {root}"
                )?,
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => Err(Failure::Finding(format!("invalid: {error}"))),
    }
}

fn export(args: ExportArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let snapshot = store.snapshot()?;
    let to = args.to.unwrap_or(snapshot.head()?.next.0);
    let mut line = ProgressLine::new("export", to.saturating_sub(args.from));
    let summary = annals::export::export(
        &snapshot,
        Position(args.from),
        Position(to),
        &args.file,
        &mut |done| line.update(done),
    );
    line.finish();
    print_range(&summary?.header, "exported", "to", &args.file)
}

fn import(args: ImportArgs) -> Result<ExitCode, Failure> {
    // The header gives the total for the progress line; the import reads and checks it again.
    let records = ExportReader::open(&args.file)
        .map(|reader| reader.header().to.0 - reader.header().from.0)
        .unwrap_or(0);
    let mut check = ProgressLine::new("check", records);
    let mut write = ProgressLine::new("import", records);
    let summary = Store::import(&args.file, &args.db, &mut |stage, done| match stage {
        ImportStage::Check => check.update(done),
        _ => {
            check.finish();
            write.update(done)
        }
    });
    check.finish();
    write.finish();
    print_range(&summary?.header, "imported", "into", &args.db)?;
    Ok(ExitCode::SUCCESS)
}

/// What an export or import moved: the range, the chain's end and the tree it forms.
fn print_range(
    header: &ExportHeader,
    done: &str,
    preposition: &str,
    path: &Path,
) -> Result<ExitCode, Failure> {
    let mut out = io::stdout().lock();
    let records = header.to.0 - header.from.0;
    writeln!(
        out,
        "{done} positions {} .. {} ({records} records) {preposition} {}",
        header.from,
        header.to,
        path.display()
    )?;
    writeln!(out, "head hash {}", header.head)?;
    writeln!(out, "root      {}", header.root)?;
    writeln!(out, "tree head {}", header.tree_head().hash())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn history(args: HistoryArgs) -> Result<ExitCode, Failure> {
    let entity = Entity::parse(&args.entity)?;
    let store = Store::open_read_only(&args.db)?;
    let records = store.history(&entity)?;
    let mut out = BufWriter::new(io::stdout().lock());
    for record in &records {
        if args.json {
            print_json(&mut out, &record_json(record))?;
        } else {
            writeln!(out, "{}", record_text(record))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A one-line progress bar on standard error for long operations, drawn only when standard
/// error is a terminal (never into a pipe or a file), redrawn only when its percentage moves.
struct ProgressLine {
    label: &'static str,
    total: u64,
    enabled: bool,
    shown_percent: Option<u64>,
}

/// Characters of the bar between its brackets.
const PROGRESS_BAR_WIDTH: u64 = 30;

impl ProgressLine {
    fn new(label: &'static str, total: u64) -> ProgressLine {
        ProgressLine {
            label,
            total,
            enabled: total > 0 && io::stderr().is_terminal(),
            shown_percent: None,
        }
    }

    fn update(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        let done = done.min(self.total);
        let percent = done * 100 / self.total;
        if self.shown_percent == Some(percent) {
            return;
        }
        self.shown_percent = Some(percent);
        let filled = (done * PROGRESS_BAR_WIDTH / self.total) as usize;
        let empty = PROGRESS_BAR_WIDTH as usize - filled;
        let mut err = io::stderr().lock();
        // A failure to draw progress is not a failure of the operation.
        let _ = write!(
            err,
            "\r{} [{}{}] {percent:>3}% {done}/{}",
            self.label,
            "#".repeat(filled),
            "-".repeat(empty),
            self.total
        );
        let _ = err.flush();
    }

    /// Erases the line, if one was drawn.
    fn finish(&mut self) {
        if self.shown_percent.take().is_some() {
            let mut err = io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
