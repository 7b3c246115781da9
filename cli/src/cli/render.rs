//! How the command line spells what the library returns: records, verify reports, stats and
//! export ranges, as text or as JSON (roots and proofs are spelled in `audit.rs`, their only
//! user). Writing only; it opens no file and reads no
//! log.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::failure::Failure;
use super::payload::{self, Payload};
use super::time::rfc3339;
use annals::Record;
use annals::audit::VerifyReport;
use annals::export::ExportHeader;
use annals::maintenance::{Footprint, Stats, TableFootprint};

/// How many hex digits of a record hash the text form of `log` shows.
const HASH_TEXT_DIGITS: usize = 16;

/// How many characters of a payload the text form of `log` shows without `--full`: a line
/// stays readable, and a 1 MiB payload does not print 2 MB of hex.
pub(crate) const PAYLOAD_TEXT_CHARS: usize = 200;

/// Writes `value` as one line of JSON.
pub(crate) fn print_json(out: &mut impl Write, value: &impl Serialize) -> Result<(), Failure> {
    let line = serde_json::to_string(value)
        .map_err(|error| Failure::Usage(format!("encoding JSON: {error}")))?;
    writeln!(out, "{line}")?;
    Ok(())
}

/// How `log`, `history` and `tail` show a record.
#[derive(Clone, Copy, Default)]
pub(crate) struct RecordStyle {
    /// JSON lines instead of text.
    pub(crate) json: bool,
    /// The stored payload bytes in hex instead of the decoded payload.
    pub(crate) raw: bool,
    /// The whole payload in text, however long.
    pub(crate) full: bool,
    /// Times in text as epoch milliseconds instead of RFC 3339.
    pub(crate) ms: bool,
}

/// Writes one record, decoding its payload (a personal one with `store`'s key store as of now),
/// in the default style (text, or JSON with `json`).
pub(crate) fn print_record(
    out: &mut impl Write,
    store: &annals::Store,
    record: &Record,
    json: bool,
) -> Result<(), Failure> {
    let (payload, undecodable) = payload::decode(
        record,
        annals::erasure::PayloadReader::of(store)?.open(record)?,
    );
    let style = RecordStyle {
        json,
        ..RecordStyle::default()
    };
    print_decoded(out, record, payload, undecodable.as_deref(), style)
}

/// Writes one record whose payload is already decoded, in `style`.
pub(crate) fn print_decoded(
    out: &mut impl Write,
    record: &Record,
    payload: Payload<'_>,
    undecodable: Option<&str>,
    style: RecordStyle,
) -> Result<(), Failure> {
    let payload = if style.raw {
        payload::raw(record)
    } else {
        payload
    };
    if style.json {
        print_json(out, &record_json(record, payload, undecodable))
    } else {
        writeln!(out, "{}", record_text(record, &payload, undecodable, style))?;
        Ok(())
    }
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
    /// `at_ms` in RFC 3339, UTC.
    at: String,
    idempotency_key: Option<&'a str>,
    /// `event`, `json`, `utf8` or `hex`: how `payload` spells the payload bytes.
    payload_encoding: &'static str,
    payload: Payload<'a>,
    payload_bytes: usize,
    /// Why a built-in kind's payload did not decode as its event.
    #[serde(skip_serializing_if = "Option::is_none")]
    undecodable: Option<&'a str>,
    payload_hash: String,
    prev: String,
    hash: String,
}

fn record_json<'a>(
    record: &'a Record,
    payload: Payload<'a>,
    undecodable: Option<&'a str>,
) -> RecordJson<'a> {
    RecordJson {
        position: record.position.0,
        stream: &record.stream,
        version: record.version.0,
        kind: &record.kind,
        schema: record.schema,
        at_ms: record.at_ms,
        at: rfc3339(record.at_ms),
        idempotency_key: record.idempotency_key.as_deref(),
        payload_encoding: payload.encoding(),
        payload,
        payload_bytes: record.payload.len(),
        undecodable,
        payload_hash: record.payload_hash.to_hex(),
        prev: record.prev.to_hex(),
        hash: record.hash.to_hex(),
    }
}

/// One record as a line of text:
/// `<position> <stream>@<version> <kind> <time> [key=<key>] hash=<16 hex> <payload>`, the
/// payload last (and cut at [`PAYLOAD_TEXT_CHARS`] unless `full`) so a long one ends the
/// line rather than hiding the rest of it.
fn record_text(
    record: &Record,
    payload: &Payload<'_>,
    undecodable: Option<&str>,
    style: RecordStyle,
) -> String {
    let time = if style.ms {
        record.at_ms.to_string()
    } else {
        rfc3339(record.at_ms)
    };
    let key = match record.idempotency_key.as_deref() {
        Some(key) => format!(" key={}", word(key)),
        None => String::new(),
    };
    let hash = record.hash.to_hex();
    let note = match undecodable {
        Some(why) => format!("(undecodable: {why}) "),
        None => String::new(),
    };
    let mut payload = payload.text();
    if !style.full && payload.chars().count() > PAYLOAD_TEXT_CHARS {
        let cut = payload
            .char_indices()
            .nth(PAYLOAD_TEXT_CHARS)
            .map_or(payload.len(), |(at, _)| at);
        payload.truncate(cut);
        payload.push_str(&format!(
            "… ({} bytes; --full to see all)",
            annals::display::grouped(record.payload.len() as u64)
        ));
    }
    format!(
        "{} {}@{} {} {time}{key} hash={} {note}{payload}",
        record.position,
        word(&record.stream),
        record.version,
        word(&record.kind),
        &hash[..HASH_TEXT_DIGITS],
    )
}

/// `text` as is, or as a JSON string (quoted and escaped) if it would break a
/// space-separated line.
pub(crate) fn word(text: &str) -> Cow<'_, str> {
    let plain = !text.is_empty()
        && !text.starts_with('"')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control());
    if plain {
        Cow::Borrowed(text)
    } else {
        // A string always serialises.
        Cow::Owned(serde_json::to_string(text).unwrap_or_default())
    }
}

/// The report of `verify --json`.
#[derive(Serialize)]
struct VerifyJson {
    sound: bool,
    records: u64,
    streams: u64,
    /// The log's head: null when unsound, for the records stop being checked at the problem
    /// and the log's true head is unknown (`checked_until` says where the check stopped).
    head_position: Option<u64>,
    head_hash: Option<String>,
    /// The position the records checked out up to (the head when sound; the problem's
    /// position otherwise).
    checked_until: u64,
    /// The Merkle root of the records checked, recomputed from their hashes.
    root: String,
    problem: Option<ProblemJson>,
    /// Projections behind the log: not damage, a state a writable open catches up.
    behind: Vec<BehindJson>,
}

#[derive(Serialize)]
struct BehindJson {
    projection: String,
    at: u64,
    head: u64,
    message: String,
}

#[derive(Serialize)]
struct ProblemJson {
    position: u64,
    message: String,
}

/// Writes what `verify` found: JSON with `json`, else a line of text.
pub(crate) fn print_verify(
    out: &mut impl Write,
    report: &VerifyReport,
    json: bool,
) -> Result<(), Failure> {
    if json {
        return print_json(
            out,
            &VerifyJson {
                sound: report.is_sound(),
                records: report.records,
                streams: report.streams,
                head_position: report.is_sound().then_some(report.head.next.0),
                head_hash: report.is_sound().then(|| report.head.hash.to_hex()),
                checked_until: report.head.next.0,
                root: report.root.to_hex(),
                problem: report.problem.as_ref().map(|finding| ProblemJson {
                    position: finding.position.0,
                    message: finding.problem.to_string(),
                }),
                behind: report
                    .behind
                    .iter()
                    .map(|behind| BehindJson {
                        projection: behind.projection.clone(),
                        at: behind.at.0,
                        head: behind.head.0,
                        message: behind.to_string(),
                    })
                    .collect(),
            },
        );
    }
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
    for behind in &report.behind {
        writeln!(out, "{behind}")?;
    }
    Ok(())
}

/// The report of `stats --json`.
#[derive(Serialize)]
struct StatsJson<'a> {
    /// The log's history: its head position, archived records included.
    records: u64,
    /// The records the file still holds, from `start` on.
    held: u64,
    /// The first position the file holds (where the last cut fell; 0 when never cut).
    start: u64,
    streams: u64,
    head_position: u64,
    head_hash: String,
    file_bytes: u64,
    disk_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    tables: Option<&'a [TableFootprint]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outside_tables_bytes: Option<u64>,
}

/// Writes the counts and sizes `stats` prints, and with `footprint` where the bytes go: JSON
/// with `json`, else a table.
pub(crate) fn print_stats(
    out: &mut impl Write,
    stats: &Stats,
    footprint: Option<&Footprint>,
    json: bool,
) -> Result<(), Failure> {
    if json {
        return print_json(
            out,
            &StatsJson {
                records: stats.records,
                held: stats.records - stats.start.0,
                start: stats.start.0,
                streams: stats.streams,
                head_position: stats.head.next.0,
                head_hash: stats.head.hash.to_hex(),
                file_bytes: stats.file_bytes,
                disk_bytes: stats.disk_bytes,
                tables: footprint.map(|f| f.tables.as_slice()),
                outside_tables_bytes: footprint.map(Footprint::outside_tables),
            },
        );
    }
    match stats.start.0 {
        0 => writeln!(out, "records        {}", stats.records)?,
        start => writeln!(
            out,
            "records        {} ({} held from position {start}; those before it are in the cuts' archives)",
            stats.records,
            stats.records - start
        )?,
    }
    writeln!(out, "streams        {}", stats.streams)?;
    writeln!(out, "head position  {}", stats.head.next)?;
    writeln!(out, "head hash      {}", stats.head.hash)?;
    writeln!(out, "file bytes     {}", stats.file_bytes)?;
    writeln!(out, "disk bytes     {}", stats.disk_bytes)?;
    if let Some(footprint) = footprint {
        print_footprint(out, footprint)?;
    }
    Ok(())
}

/// Each table's bytes, and per record, then the file's bytes outside every table.
fn print_footprint(out: &mut impl Write, footprint: &Footprint) -> Result<(), Failure> {
    let per_record = |bytes: u64| match footprint.records {
        0 => 0.0,
        records => bytes as f64 / records as f64,
    };
    let name_width = footprint
        .tables
        .iter()
        .map(|t| t.name.len())
        .chain(["outside tables".len()])
        .max()
        .unwrap_or(0);
    writeln!(out)?;
    writeln!(
        out,
        "{:<name_width$}  {:>10}  {:>13}  {:>12}  {:>12}  {:>13}  {:>10}",
        "table", "rows", "page bytes", "stored", "redb's own", "unused", "B/record"
    )?;
    for table in &footprint.tables {
        writeln!(
            out,
            "{:<name_width$}  {:>10}  {:>13}  {:>12}  {:>12}  {:>13}  {:>10.1}",
            table.name,
            table.rows,
            table.page_bytes(),
            table.stored_bytes,
            table.metadata_bytes,
            table.fragmented_bytes,
            per_record(table.page_bytes())
        )?;
    }
    let outside = footprint.outside_tables();
    writeln!(
        out,
        "{:<name_width$}  {:>10}  {:>13}  {:>12}  {:>12}  {:>13}  {:>10.1}",
        "outside tables",
        "",
        outside,
        "",
        "",
        "",
        per_record(outside)
    )?;
    Ok(())
}

/// Writes what an export or import moved: the range, the chain's end and the tree it forms.
pub(crate) fn print_range(
    out: &mut impl Write,
    header: &ExportHeader,
    done: &str,
    preposition: &str,
    path: &Path,
) -> Result<(), Failure> {
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
    Ok(())
}
