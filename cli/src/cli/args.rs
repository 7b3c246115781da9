//! The arguments of every command, as clap parses them. Parsing only: what a command does
//! with them is in its own file.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::open::WriteAccess;
use super::time::parse_time;
use annals::{ExpectedVersion, error::UnknownExpectedVersion};

/// An embedded, event-sourced, append-only log store.
#[derive(Parser)]
#[command(name = "annals", version, about, styles = super::color::STYLES)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// When to colour what is written to a terminal: `auto` colours a terminal unless
    /// `NO_COLOR` is set (to anything but nothing), `always` and `never` say so whatever the
    /// output is.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub(crate) color: clap::ColorChoice,
    /// Print the library's spans to standard error as they close, with their durations:
    /// `-v` rebuild, verify, import and catch-up; `-vv` every commit and batch too.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
}

/// The log a command reads or writes, which must exist: the first positional argument of most
/// commands, declared once.
#[derive(Args)]
pub(crate) struct LogFile {
    /// The log file; it must exist.
    pub(crate) db: PathBuf,
}

/// `--json` for a command that prints one object, whose errors are then JSON too.
#[derive(Args)]
pub(crate) struct JsonOutput {
    /// Print a JSON object instead of text (and errors as a JSON object on stderr).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `--json` for a command that prints one object, in the shorter words its help has always had.
#[derive(Args)]
pub(crate) struct JsonObject {
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `--size`: which tree of the log a command proves or signs, declared once.
#[derive(Args)]
pub(crate) struct TreeSize {
    /// The tree of the first N records [default: all of them].
    #[arg(long, allow_negative_numbers = true, value_parser = parse_size)]
    pub(crate) size: Option<u64>,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Write a realistic workload across all six projections (at least 10,000 records),
    /// print what it wrote, then verify the log.
    Demo(DemoArgs),
    /// Append one event to a stream, creating the log file if it is missing. Prints the
    /// position written, or `duplicate <POSITION>` for an idempotent repeat.
    ///
    /// Limits: a payload of at most 1 MiB (1048576 bytes), a stream name of at most 256
    /// bytes, a kind of at most 128 bytes, an idempotency key of at most 256 bytes; a value
    /// over its limit is refused (exit 1) and nothing is written.
    Append(AppendArgs),
    /// Erase a subject (crypto-shredding): append its `subject.erased` event, then destroy
    /// its key in `<DB>.keys`. Its personal payloads read as erased from then on; the chain,
    /// proofs and checkpoints still verify. Prints the erasure event's position.
    Erase(EraseArgs),
    /// The subjects' data keys (`<DB>.keys`) for a trusted replica: export them to a file of
    /// their own, or import such a file into a replica's key store (docs/erasure.md).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Print records, one line each, payloads decoded; filter them as `git log` does.
    Log(LogArgs),
    /// Print records as they commit, until interrupted (like `tail -f`): from a log that
    /// another process writes, opened read-only beside it.
    Tail(TailArgs),
    /// Check every hash, link and index of the log; exit 1 if anything is wrong.
    Verify(VerifyArgs),
    /// Print counts and sizes of the log.
    Stats(StatsArgs),
    /// Print a projection's rows (registry, leases, outbox, runs, consumers) as tables.
    /// Also ingest, the hub's sync ingest.
    State(StateArgs),
    /// Clear projections and rebuild them by replaying the whole log.
    Rebuild(RebuildArgs),
    /// Print the root of the log's Merkle tree (of every record, or of the first N).
    Root(RootArgs),
    /// Print a proof: that a record is in the tree (`--position`), or that an earlier tree is
    /// a prefix of a later one (`--from-size`).
    Prove(ProveArgs),
    /// Check a proof file printed by `prove --json` against a tree head you kept (`--head`,
    /// or `--size` and `--root`); exit 0 if valid, 1 if not. Without one, the proof is checked
    /// only against the tree heads it carries, which proves nothing about a log: exit 3
    /// ("self-consistent only") when it holds so.
    CheckProof(CheckProofArgs),
    /// List the streams with their length and the position of their last record.
    Streams(StreamsArgs),
    /// Print every event that touched an entity, in log order: ENTITY is `stream:<name>`,
    /// `lease:<resource>`, `lane:<lane>/<key>`, `outbox:<key>`, `run:<id>`,
    /// `registry:<handle>`, `setting:<key>` or `consumer:<name>`.
    /// Also `ingest:<project>/<run>`: one run's ingested events.
    History(HistoryArgs),
    /// Write records to a portable export file: their stored bytes between a header and a
    /// trailer naming the range, the head hash and the Merkle root.
    Export(ExportArgs),
    /// Check an export file completely, then append its records to a log (a new one when DB
    /// does not exist); a damaged file is refused naming its first bad position.
    Import(ImportArgs),
    /// Upgrade a log of an earlier format to the one this build writes (each stored value
    /// sealed with a checksum), in one transaction; the records are not touched. Any write
    /// does the same; a read-only command refuses an earlier format until then.
    Upgrade(UpgradeArgs),
    /// Give the log file's free pages back to the file system (redb's compaction), printing
    /// the bytes reclaimed. It needs the log to itself: refused while another process has it
    /// open.
    Compact(CompactArgs),
    /// Copy the log as of its latest commit into a new file, beside its writers: every
    /// table with its rows (a cut log's kept state with it), so the copy opens as the same
    /// log at the head printed. The target must not exist.
    Backup(BackupArgs),
    /// Cut the log: write the records before a position (or a time) to a new archive file,
    /// synced, then remove them from the log, keeping every proof, index and projection and
    /// appending a record of the cut. Reads below the cut then say where they went.
    Archive(ArchiveArgs),
    /// Write a new Ed25519 signer key for checkpoints (c2sp.org/signed-note) to KEYFILE, mode
    /// 0600, and print its verifier key (vkey).
    Keygen(KeygenArgs),
    /// Sign a checkpoint of the log (c2sp.org/tlog-checkpoint) with a key from `keygen` and
    /// print it: the origin (the key's name), the size and the root, then the signature. The
    /// log never signs a checkpoint smaller than, or inconsistent with, the last it signed.
    Checkpoint(CheckpointArgs),
    /// Write the log as static tiles (c2sp.org/tlog-tiles) into DIR: a checkpoint signed with
    /// KEYFILE, the hash tiles and the entry bundles (each entry a record's 32-byte hash), for
    /// any tlog-tiles client to audit from a static web server. A directory written before is
    /// updated from the checkpoint it holds; one of another history is refused (exit 1).
    Tiles(TilesArgs),
    /// Print the completion script of SHELL to standard output, for the shell to load: it
    /// completes commands, options and their values (docs/cli.md says where each shell looks).
    Completions(CompletionsArgs),
    /// Print a manual page (roff) to standard output: `annals(1)`, which lists every command,
    /// or with COMMAND that command's own page, `annals-COMMAND(1)`, as git's are
    /// (`annals man log | man -l -` reads one).
    Man(ManArgs),
    /// Witnesses (c2sp.org/tlog-witness): serve one that cosigns other logs' checkpoints,
    /// list the evidence it kept, or ask witnesses to cosign this log's checkpoint.
    #[cfg(feature = "witness")]
    #[command(subcommand)]
    Witness(WitnessCommand),
    /// Publish every record of a log, in order, to a NATS JetStream stream, until
    /// interrupted; a log the stream does not continue is refused naming the position.
    #[cfg(feature = "jetstream")]
    Replicate(ReplicateCommand),
    /// Follow a log's NATS JetStream stream into a local log, until interrupted: every record
    /// checked (hashes, chain, position) before it is appended.
    #[cfg(feature = "jetstream")]
    Follow(FollowArgs),
    /// Publish a seed of a log: a copy of it as of now, into the log's JetStream object store
    /// bucket (replacing the last seed), for `follow --from-seed` to start a new replica from
    /// where the stream no longer holds the first records (after a cut). Exit 0 once stored.
    #[cfg(feature = "jetstream")]
    Seed(ReplicateArgs),
}

#[derive(Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Args)]
pub(crate) struct ManArgs {
    /// The command whose page to print, e.g. `log`, or `witness serve` [default: the page of
    /// `annals` itself].
    #[arg(value_name = "COMMAND")]
    pub(crate) command: Vec<String>,
}

/// Whether a command that prints much (`log`, `history`, `state`) pages its output.
#[derive(Args)]
pub(crate) struct PagingArgs {
    /// Write straight to standard output, never through the pager (which runs only when
    /// standard output is a terminal: `$ANNALS_PAGER`, else `$PAGER`, else `less -FRX`; empty
    /// or `cat` for none).
    #[arg(long)]
    pub(crate) no_pager: bool,
}

#[derive(Args)]
pub(crate) struct HistoryArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// The entity, e.g. `lease:deploy-lock`.
    pub(crate) entity: String,
    /// Print only the entity's records in this stream (it must exist).
    #[arg(long)]
    pub(crate) stream: Option<String>,
    /// The archive files of a cut log (`annals archive`), in any order: the entity's records
    /// from before the log's start are read from them, each checked against the hash the log
    /// keeps for it.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub(crate) archive: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) filter: RecordFilterArgs,
    #[command(flatten)]
    pub(crate) style: RecordStyleArgs,
    #[command(flatten)]
    pub(crate) paging: PagingArgs,
}

/// Which records `log` and `history` print, as in `git log`.
#[derive(Args)]
pub(crate) struct RecordFilterArgs {
    /// Print only records whose kind starts with PREFIX (`lease.`, or a whole kind).
    #[arg(long, value_name = "PREFIX")]
    pub(crate) kind: Option<String>,
    /// Print only records at or after TIME: RFC 3339 (`2026-01-01T12:00:00Z`, `2026-01-01`)
    /// or milliseconds since the Unix epoch.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub(crate) since: Option<u64>,
    /// Print only records at or before TIME (as `--since`).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub(crate) until: Option<u64>,
    /// Print only records whose decoded payload (as the text form shows it, uncut) contains
    /// TEXT; case matters.
    #[arg(long, value_name = "TEXT")]
    pub(crate) grep: Option<String>,
    /// Newest first.
    #[arg(long, alias = "backward")]
    pub(crate) reverse: bool,
    /// Print at most N records (of those the filters keep, in the order printed).
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
}

/// How `log` and `history` print records.
#[derive(Args)]
pub(crate) struct RecordStyleArgs {
    /// Print JSON lines instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Show the payload's stored bytes (hex) instead of decoding it.
    #[arg(long)]
    pub(crate) raw: bool,
    /// Show whole payloads in text (they are cut at 200 characters otherwise).
    #[arg(long)]
    pub(crate) full: bool,
    /// Show times in text as milliseconds since the Unix epoch instead of RFC 3339.
    #[arg(long)]
    pub(crate) ms: bool,
}

/// Lists the streams.
#[derive(Args)]
pub(crate) struct StreamsArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// List only streams whose name starts with P.
    #[arg(long, value_name = "P")]
    pub(crate) prefix: Option<String>,
    /// Print JSON lines (`stream`, `length`, `last_position`) instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// The export file to write: a new file, or with `--force` a regular file to replace
    /// (never the log itself, nor a log another process writes).
    pub(crate) file: PathBuf,
    /// The first position to export [default: the log's start, 0 unless it was cut].
    #[arg(long)]
    pub(crate) from: Option<u64>,
    /// Export up to this position, excluded [default: the head].
    #[arg(long)]
    pub(crate) to: Option<u64>,
    /// Replace the export file if it exists.
    #[arg(long)]
    pub(crate) force: bool,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
}

#[derive(Args)]
pub(crate) struct ImportArgs {
    /// The export file.
    pub(crate) file: PathBuf,
    /// The log to import into: created if missing, else continued.
    pub(crate) db: PathBuf,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
}

#[derive(Args)]
pub(crate) struct UpgradeArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// Print a JSON object (`path`, `from`, `to`) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
}

#[derive(Args)]
pub(crate) struct CompactArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
    /// How long to wait for other processes to close the log, e.g. `5s`, `250ms`.
    #[arg(long, default_value = "0s", value_parser = super::open::parse_duration)]
    pub(crate) wait: std::time::Duration,
}

#[derive(Args)]
pub(crate) struct BackupArgs {
    /// The log file; it must exist. It is opened read-only: its writers go on writing.
    pub(crate) db: PathBuf,
    /// The copy to write: a new file.
    pub(crate) target: PathBuf,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
}

#[derive(Args)]
pub(crate) struct ArchiveArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// Cut before this position (digits), or before the first record at or after this time
    /// (RFC 3339, or a date).
    #[arg(long, value_name = "POSITION|TIME", value_parser = parse_cut_point)]
    pub(crate) before: CutPoint,
    /// The archive file to write: a new file.
    pub(crate) archive: PathBuf,
    /// Also drop the archived records' idempotency keys: a key used again after the cut then
    /// appends anew instead of answering `duplicate` (by default every key stays).
    #[arg(long)]
    pub(crate) drop_keys: bool,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
}

/// Where `archive --before` cuts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CutPoint {
    /// Before a position.
    Position(u64),
    /// Before the first record at or after a time, in epoch milliseconds.
    Time(u64),
}

fn parse_cut_point(text: &str) -> Result<CutPoint, String> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse()
            .map(CutPoint::Position)
            .map_err(|_| format!("{text}: not a position"));
    }
    parse_time(text).map(CutPoint::Time)
}

#[derive(Args)]
pub(crate) struct KeygenArgs {
    /// The key name: the log's origin, e.g. `example.com/log`.
    #[arg(long)]
    pub(crate) name: String,
    /// The key file to create.
    pub(crate) keyfile: PathBuf,
    /// Replace KEYFILE if it exists.
    #[arg(long)]
    pub(crate) force: bool,
    /// A witness's cosigning key (c2sp.org/tlog-cosignature, type 0x04) instead of a log's.
    #[arg(long)]
    pub(crate) cosigner: bool,
    /// The signature algorithm: `ed25519` (a log's type 0x01, a witness's 0x04) or
    /// `ml-dsa-44` (type 0x06 for both, post-quantum, as C2SP recommends for new logs and
    /// witnesses: 2,420-byte signatures).
    #[arg(long, value_enum, default_value_t = KeyAlgorithm::Ed25519)]
    pub(crate) alg: KeyAlgorithm,
    /// Print a JSON object (`vkey`, `name`, `keyfile`, `kind`, `alg`) instead of the verifier
    /// key.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `keygen --alg`: the signature algorithm of a new key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum KeyAlgorithm {
    /// Ed25519 (RFC 8032).
    Ed25519,
    /// ML-DSA-44 (FIPS 204).
    #[value(name = "ml-dsa-44")]
    MlDsa44,
}

#[derive(Args)]
pub(crate) struct CheckpointArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// The signer key file `annals keygen` wrote (mode 0600); its name is the origin.
    #[arg(long)]
    pub(crate) key: PathBuf,
    #[command(flatten)]
    pub(crate) tree: TreeSize,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
    /// Print a JSON object (`origin`, `size`, `root`, `note`: the signed note's text) instead
    /// of the note.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct RootArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    #[command(flatten)]
    pub(crate) tree: TreeSize,
    /// Print a JSON object (`size`, `root`) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct ProveArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// Prove that the record at this position is in the tree.
    #[arg(
        long,
        conflicts_with = "from_size",
        required_unless_present_any = ["from_size", "from_checkpoint"],
        allow_negative_numbers = true,
        value_parser = parse_position
    )]
    pub(crate) position: Option<u64>,
    /// Prove that the tree of this many records is a prefix of the tree of `--size`.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_size)]
    pub(crate) from_size: Option<u64>,
    #[command(flatten)]
    pub(crate) tree: TreeSize,
    /// Prove against this signed checkpoint of the log (from `annals checkpoint`, with any
    /// cosignatures): with `--position`, print a c2sp.org/tlog-proof@v1 file; with
    /// `--from-checkpoint`, a consistency proof in tlog-witness's `add-checkpoint` form.
    /// Without a file, the latest cosigned checkpoint the log keeps (`witness request`).
    #[arg(long, num_args = 0..=1, conflicts_with_all = ["size", "from_size", "json"])]
    pub(crate) checkpoint: Option<Option<PathBuf>>,
    /// The earlier signed checkpoint to prove `--checkpoint`'s tree extends.
    #[arg(long, requires = "checkpoint", conflicts_with = "position")]
    pub(crate) from_checkpoint: Option<PathBuf>,
    /// Print the proof file's JSON (what `check-proof` reads) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct CheckProofArgs {
    /// A proof file: as `prove --json` prints it, a c2sp.org/tlog-proof@v1 file, or a
    /// consistency proof to a checkpoint (`prove --checkpoint --from-checkpoint`).
    pub(crate) proof: PathBuf,
    /// The log's verifier key, as `annals keygen` printed it (or `@FILE` holding it): a
    /// checkpoint counts only when signed by it. Give it more than once to trust several.
    #[arg(long)]
    pub(crate) vkey: Vec<String>,
    /// A signed checkpoint you trust, for a proof file of `prove --json`: it counts as a tree
    /// head you kept once it opens against `--vkey`. Give it twice for a consistency proof.
    #[arg(long, requires = "vkey")]
    pub(crate) checkpoint: Vec<PathBuf>,
    /// For a consistency proof to a checkpoint: the earlier signed checkpoint you kept.
    #[arg(long, requires = "vkey")]
    pub(crate) from_checkpoint: Option<PathBuf>,
    /// A witness's verifier key (type 0x04 or 0x06, as `keygen --cosigner` printed it, or
    /// `@FILE`): its cosignature on the proof's checkpoint counts towards `--quorum`. Shorthand
    /// for a policy of these witnesses, any `--quorum` of them.
    #[arg(long, requires = "vkey")]
    pub(crate) witness: Vec<String>,
    /// A trust policy (c2sp.org/tlog-policy): its logs' keys count as `--vkey`s, and a tlog-proof's
    /// checkpoint holds only when its witnesses' cosignatures make its quorum (groups with
    /// thresholds, or `quorum none`). A malformed file is refused with its line named.
    #[arg(long, conflicts_with_all = ["witness", "quorum"])]
    pub(crate) policy: Option<PathBuf>,
    /// How many of the `--witness` keys must have cosigned the checkpoint [default: 0, or
    /// all of them when --witness is given].
    #[arg(long, requires = "witness")]
    pub(crate) quorum: Option<usize>,
    /// For a tlog-proof: an export file (`annals export`) holding the record, whose content is
    /// then checked to be what the proof proves (its hash the proof's record hash).
    #[arg(long, requires = "vkey")]
    pub(crate) export: Option<PathBuf>,
    /// The tree head you trust, as `annals root` printed it: its `tree head` hash (64
    /// lower-case hex digits), its whole output (text or `--json`), or `@FILE` holding either.
    /// Give it twice for a consistency proof, the earlier head and the later one you kept: the
    /// proof's path does not fix the later size, so only a later head you trust counts.
    #[arg(long, conflicts_with_all = ["size", "root"])]
    pub(crate) head: Vec<String>,
    /// The size of the tree head you trust (with `--root`).
    #[arg(long, requires = "root", allow_negative_numbers = true, value_parser = parse_size)]
    pub(crate) size: Option<u64>,
    /// The root of the tree head you trust (with `--size`): 64 lower-case hex digits.
    #[arg(long, requires = "size")]
    pub(crate) root: Option<String>,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
}

#[derive(Args)]
pub(crate) struct DemoArgs {
    /// The log file, created if missing. An existing log is refused unless `--force` is
    /// given, which appends the demo's records to it.
    #[arg(default_value = "annals-demo.redb")]
    pub(crate) db: PathBuf,
    /// Append the demo's records to an existing log instead of refusing it.
    #[arg(long)]
    pub(crate) force: bool,
    /// Append at least this many records.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) records: u64,
    /// How each command commits: `immediate` (a durable commit per command, as a live host) or
    /// `deferred` (durable every 4096 records and at the end; needs `--sharing exclusive`):
    /// the same records, written in minutes at a million.
    #[arg(long, default_value = "immediate", value_parser = parse_demo_durability)]
    pub(crate) durability: annals::Durability,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
}

#[derive(Args)]
pub(crate) struct StateArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// The projection: registry, leases, outbox, runs or consumers.
    /// Also ingest, the hub's sync ingest.
    pub(crate) projection: String,
    /// Show the state as of the first N records, replayed into memory.
    #[arg(long)]
    pub(crate) at: Option<u64>,
    /// With `--at`, the archive files of a cut log (`annals archive`), in any order: the
    /// replay starts at position 0 and reads the records before the log's start from them,
    /// each checked against the hash the log keeps for it.
    #[arg(long, value_name = "FILE", num_args = 1.., requires = "at")]
    pub(crate) archive: Vec<PathBuf>,
    /// Show only this table (`held`, or `leases.held`).
    #[arg(long, value_name = "NAME")]
    pub(crate) table: Option<String>,
    /// Show only rows whose key (its first part, for a table keyed by several) is KEY.
    #[arg(long, value_name = "KEY")]
    pub(crate) key: Option<String>,
    /// Print JSON lines, one row a line (`table`, `row`), instead of aligned tables.
    #[arg(long)]
    pub(crate) json: bool,
    /// Show times (columns ending in `at_ms`) as milliseconds instead of RFC 3339.
    #[arg(long)]
    pub(crate) ms: bool,
    #[command(flatten)]
    pub(crate) paging: PagingArgs,
}

#[derive(Args)]
pub(crate) struct RebuildArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// Rebuild only this projection [default: all].
    #[arg(long)]
    pub(crate) projection: Option<String>,
    /// The archive files of a cut log (`annals archive`), in any order: a projection the last
    /// cut kept no snapshot of (a new version of one) is replayed from position 0 through
    /// them, each record checked against the hash the log keeps, and its state at the cut
    /// recorded in a cut record of its own.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub(crate) archive: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
}

#[derive(Args)]
pub(crate) struct AppendArgs {
    /// The log file.
    pub(crate) db: PathBuf,
    /// The stream to append to.
    pub(crate) stream: String,
    /// The event type, e.g. `lease.acquired`.
    pub(crate) kind: String,
    /// The payload, stored as its UTF-8 bytes; `@FILE` stores the bytes of FILE. Empty if
    /// absent. (Text that starts with `@` has to go through a file.)
    pub(crate) payload: Option<String>,
    /// The state the stream must be in: `any`, `none` (no record yet), `exists`, or the
    /// stream's last version N.
    #[arg(long, default_value = "any", value_parser = parse_expected)]
    pub(crate) expect: ExpectedVersion,
    /// An idempotency key: repeating it with the same content is a duplicate, not a new record.
    #[arg(long)]
    pub(crate) key: Option<String>,
    /// The event's time in milliseconds since the Unix epoch [default: now].
    #[arg(long)]
    pub(crate) at_ms: Option<u64>,
    /// The payload's schema version [default: 1].
    #[arg(long)]
    pub(crate) schema: Option<u16>,
    /// Make the payload personal to SUBJECT (an opaque id, not an email): it is encrypted
    /// under SUBJECT's key, kept in `<DB>.keys`, before the record is hashed, and reads as
    /// erased once `annals erase DB SUBJECT` destroyed the key (docs/erasure.md).
    #[arg(long)]
    pub(crate) subject: Option<String>,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
}

#[derive(Args)]
pub(crate) struct EraseArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// The subject whose personal payloads are erased.
    pub(crate) subject: String,
    /// The erasure event's time in milliseconds since the Unix epoch [default: now].
    #[arg(long)]
    pub(crate) at_ms: Option<u64>,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
}

#[derive(Subcommand)]
pub(crate) enum KeysCommand {
    /// Write the subjects' data keys of the log's key store (`<DB>.keys`) to a new file, mode
    /// 0600, for a trusted replica to import: the only way a key leaves its key store. An
    /// erased subject's key is never in it. Prints the subjects exported, one a line.
    Export(KeysExportArgs),
    /// Add the keys of a file from `keys export` to the log's key store, so that the log (a
    /// replica, a follower, an import) reads those subjects' personal payloads until it, or
    /// the log it follows, erases them. Keys of subjects the log erased are not imported.
    /// Prints the subjects imported, one a line.
    Import(KeysImportArgs),
}

#[derive(Args)]
pub(crate) struct KeysExportArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// The key export to write: a new file (never one there, never the key store).
    pub(crate) file: PathBuf,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
}

#[derive(Args)]
pub(crate) struct KeysImportArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// The key export to read (from `annals keys export`).
    pub(crate) file: PathBuf,
    #[command(flatten)]
    pub(crate) output: JsonOutput,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
}

#[derive(Args)]
pub(crate) struct TailArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// Follow only this stream.
    #[arg(long)]
    pub(crate) stream: Option<String>,
    /// The first position to print, or with `--stream` the first stream version
    /// [default: the end: only records committed from now on].
    #[arg(long)]
    pub(crate) from: Option<u64>,
    /// Stop after printing this many records [default: never].
    #[arg(long)]
    pub(crate) count: Option<u64>,
    /// Print JSON lines instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct LogArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// The first position to read, or with `--stream` the first stream version
    /// [default: the start, or the end with `--reverse`].
    #[arg(long)]
    pub(crate) from: Option<u64>,
    /// Read only this stream (it must exist).
    #[arg(long)]
    pub(crate) stream: Option<String>,
    /// The archive files of a cut log (`annals archive`), in any order: records from before
    /// its start are read from them, each checked against the hash the log keeps for it.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "stream")]
    pub(crate) archive: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) filter: RecordFilterArgs,
    #[command(flatten)]
    pub(crate) style: RecordStyleArgs,
    #[command(flatten)]
    pub(crate) paging: PagingArgs,
}

#[derive(Args)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// Also check a cut log against its archive files (every cut's, in any order): each
    /// record must hash as the log keeps it, and replaying them from position 0 must reach
    /// each cut's projection digests.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub(crate) archive: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) output: JsonObject,
}

#[derive(Args)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    #[command(flatten)]
    pub(crate) output: JsonObject,
    /// Also show where the file's bytes go: each table's rows, stored bytes, redb's
    /// bookkeeping and unused bytes in its pages, and the file's bytes outside every table.
    #[arg(long)]
    pub(crate) tables: bool,
}

fn parse_expected(text: &str) -> Result<ExpectedVersion, String> {
    text.parse()
        .map_err(|error: UnknownExpectedVersion| error.to_string())
}

#[cfg(feature = "jetstream")]
#[derive(Args)]
pub(crate) struct ReplicateArgs {
    /// The log file; it must exist. It is opened read-only: its writer goes on writing.
    pub(crate) db: PathBuf,
    /// The NATS server(s), comma-separated, e.g. `nats://127.0.0.1:4222`.
    pub(crate) url: String,
    /// The subject the records are published on [default: `annals.` and the file's stem].
    #[arg(long)]
    pub(crate) subject: Option<String>,
    /// Replicas of the stream (for `seed`, of the seed's bucket) when this command creates it
    /// [default: what the server can give: 3, or as many servers as its cluster has, 1 for a
    /// server not clustered].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=5))]
    pub(crate) replicas: Option<u16>,
    /// How long to try to reach a NATS server before giving up (exit 2), e.g. `30s`, `500ms`.
    #[arg(long, default_value = "30s", value_parser = super::open::parse_duration)]
    pub(crate) wait: std::time::Duration,
    /// Print JSON instead of text (a status line, each a JSON object on standard output, for
    /// a command that runs until stopped); errors are then JSON on standard error too.
    #[arg(long)]
    pub(crate) json: bool,
}

#[cfg(feature = "jetstream")]
#[derive(Args)]
pub(crate) struct ReplicateCommand {
    #[command(flatten)]
    pub(crate) log: ReplicateArgs,
    /// Publish what the log holds now, wait until the stream has stored it, and exit, rather
    /// than follow the log's writer until interrupted.
    #[arg(long)]
    pub(crate) once: bool,
}

#[cfg(feature = "jetstream")]
#[derive(Args)]
pub(crate) struct FollowArgs {
    /// The NATS server(s), comma-separated.
    pub(crate) url: String,
    /// The subject the writer publishes on.
    pub(crate) subject: String,
    /// The local log (created when missing); it must be a prefix of the stream.
    pub(crate) db: PathBuf,
    /// When the local log is missing, start it from the log's seed (`annals seed`), checked,
    /// and follow the stream from the seed's head (without a seed, from nothing).
    #[arg(long)]
    pub(crate) from_seed: bool,
    /// Catch up with what the stream holds now and exit, rather than follow it until
    /// interrupted.
    #[arg(long)]
    pub(crate) once: bool,
    /// How long to try to reach a NATS server before giving up (exit 2), e.g. `30s`, `500ms`.
    #[arg(long, default_value = "30s", value_parser = super::open::parse_duration)]
    pub(crate) wait: std::time::Duration,
    /// Print JSON instead of text (a status line, each a JSON object on standard output, for
    /// a command that runs until stopped); errors are then JSON on standard error too.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A tree size (`--size`, `--from-size`): a count of records, so 0 or more. Without this,
/// clap reads `-1` as a flag and suggests `-- -1`, which would not help.
fn parse_size(text: &str) -> Result<u64, String> {
    text.parse().map_err(|_| {
        format!("sizes are counts of records, 0 or more (decimal digits only), not {text:?}")
    })
}

/// A record's position: positions count from 0, so 0 or more.
fn parse_position(text: &str) -> Result<u64, String> {
    text.parse().map_err(|_| {
        format!("positions count records from 0, so 0 or more (decimal digits only), not {text:?}")
    })
}

/// `immediate` or `deferred`: the demo's commits' durability.
fn parse_demo_durability(text: &str) -> Result<annals::Durability, String> {
    match text {
        "immediate" => Ok(annals::Durability::Immediate),
        "deferred" => Ok(annals::Durability::Deferred),
        _ => Err(format!(
            "{text:?} is not a durability: immediate or deferred"
        )),
    }
}

#[cfg(feature = "witness")]
#[derive(Subcommand)]
pub(crate) enum WitnessCommand {
    /// Serve a witness over HTTP until interrupted: `POST /add-checkpoint` (c2sp.org/
    /// tlog-witness) cosigns a checkpoint of a log of `--log` that extends the latest one it
    /// cosigned, and `GET /<sha256 of origin, hex>/checkpoint` serves that latest one. It
    /// prints `listening on <ADDRESS>` once it accepts connections. Its state is an annals
    /// log (STATE), committed before each answer.
    ///
    /// Limits: a request body of at most 63 proof lines and a note, headers and body (and a
    /// keep-alive connection's wait for its next request) within `--request-timeout`,
    /// `--connections` open at once and `--connections-per-peer` from one IP address; a new
    /// connection over either closes the one that has waited longest without a request being
    /// decided. Evidence is kept within `--evidence-bytes`, and `--evidence-bytes-per-peer`
    /// from one IP address.
    Serve(WitnessServeArgs),
    /// Print the evidence the witness kept: pairs of checkpoints signed by a log that do not
    /// extend one another (the same size with two roots, or a consistency path showing the
    /// later tree holds another root at the cosigned size). Exit 1 when there is any, 0 when
    /// none.
    Evidence(WitnessEvidenceArgs),
    /// Sign a checkpoint of the log's head, ask each witness to cosign it (with a consistency
    /// proof from the size it last cosigned), print the checkpoint with the cosignatures
    /// received and keep it in the log's file, for `prove --checkpoint` without a file.
    /// Exit 1 when fewer than `--quorum` witnesses cosigned.
    Request(WitnessRequestArgs),
}

#[cfg(feature = "witness")]
#[derive(Args)]
pub(crate) struct WitnessServeArgs {
    /// The witness's state log, created if missing.
    pub(crate) state: PathBuf,
    /// The witness's cosigner key file (`annals keygen --cosigner`, mode 0600).
    #[arg(long)]
    pub(crate) key: PathBuf,
    /// A log's verifier key (as `annals keygen` printed it, or `@FILE`): its name is the
    /// origin witnessed. Give it once per log (or per key of a log).
    #[arg(long = "log", required = true)]
    pub(crate) logs: Vec<String>,
    /// The address to listen on; port 0 picks a free one (printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub(crate) listen: std::net::SocketAddr,
    /// Print the address listened on as a JSON object (`listening`) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Connections open at once.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) connections: u16,
    /// Connections open at once from one IP address.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) connections_per_peer: u16,
    /// Bytes of evidence kept in all.
    #[arg(long, default_value_t = annals::witness::EVIDENCE_BYTES_MAX)]
    pub(crate) evidence_bytes: u64,
    /// Bytes of evidence kept from one IP address while the witness runs.
    #[arg(long, default_value_t = annals::witness::EVIDENCE_CLIENT_BYTES_MAX)]
    pub(crate) evidence_bytes_per_peer: u64,
    /// How long a request's headers and body may take to arrive, e.g. `10s`.
    #[arg(long, default_value = "10s", value_parser = super::open::parse_duration)]
    pub(crate) request_timeout: std::time::Duration,
}

#[cfg(feature = "witness")]
#[derive(Args)]
pub(crate) struct WitnessEvidenceArgs {
    /// The witness's state log; it must exist.
    pub(crate) state: PathBuf,
    /// Print a JSON array instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[cfg(feature = "witness")]
#[derive(Args)]
pub(crate) struct WitnessRequestArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// The log's signer key file (`annals keygen`); its name is the origin.
    #[arg(long)]
    pub(crate) key: PathBuf,
    /// A witness: its submission prefix and its verifier key, `URL=VKEY` (e.g.
    /// `http://127.0.0.1:7380=witness.example/w1+1a2b3c4d+BB...`). Give it once per witness.
    #[arg(long = "witness", required = true)]
    pub(crate) witnesses: Vec<String>,
    /// How many witnesses must cosign for exit 0 [default: all of them].
    #[arg(long)]
    pub(crate) quorum: Option<usize>,
    /// How long one exchange with one witness may take, e.g. `10s`.
    #[arg(long, default_value = "10s", value_parser = super::open::parse_duration)]
    pub(crate) timeout: std::time::Duration,
    #[command(flatten)]
    pub(crate) output: JsonObject,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
}

#[derive(Args)]
pub(crate) struct TilesArgs {
    #[command(flatten)]
    pub(crate) log: LogFile,
    /// The directory to write, created if missing.
    pub(crate) dir: PathBuf,
    /// The signer key file `annals keygen` wrote; its name is the origin.
    #[arg(long)]
    pub(crate) key: PathBuf,
    #[command(flatten)]
    pub(crate) output: JsonObject,
    #[command(flatten)]
    pub(crate) access: WriteAccess,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every command a user can run (each leaf of the command tree, whatever features the
    /// build has), with its path from the root.
    fn leaves(command: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
        let mut children = command
            .get_subcommands()
            .filter(|child| child.get_name() != "help")
            .peekable();
        if children.peek().is_none() {
            out.push((path, command.clone()));
            return;
        }
        for child in children {
            leaves(child, format!("{path} {}", child.get_name()), out);
        }
    }

    #[test]
    fn every_command_takes_json() {
        let mut all = Vec::new();
        leaves(&super::Cli::command(), "annals".to_owned(), &mut all);
        assert!(all.len() >= 20, "{} commands", all.len());
        // What these print is for a shell or for `man`, never for a program reading JSON.
        let documents = ["annals completions", "annals man"];
        let without: Vec<&str> = all
            .iter()
            .filter(|(path, _)| !documents.contains(&path.as_str()))
            .filter(|(_, command)| {
                !command
                    .get_arguments()
                    .any(|argument| argument.get_long() == Some("json"))
            })
            .map(|(path, _)| path.as_str())
            .collect();
        assert!(without.is_empty(), "no --json: {without:?}");
    }
}
