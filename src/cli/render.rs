//! How the command line spells what the library returns: records, verify reports, stats and
//! export ranges, as text or as JSON (roots and proofs are spelled in `audit.rs`, their only
//! user). Writing only; it opens no file and reads no
//! log.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::Failure;
use crate::audit::verify::VerifyReport;
use crate::export::ExportHeader;
use crate::hash::hex;
use crate::record::Record;
use crate::store::Stats;

/// How many hex digits of a record hash the text form of `log` shows.
const HASH_TEXT_DIGITS: usize = 16;

/// Writes `value` as one line of JSON.
pub(crate) fn print_json(out: &mut impl Write, value: &impl Serialize) -> Result<(), Failure> {
    let line = serde_json::to_string(value)
        .map_err(|error| Failure::Usage(format!("encoding JSON: {error}")))?;
    writeln!(out, "{line}")?;
    Ok(())
}

/// Writes one record as a line of `log`: JSON with `json`, else text.
pub(crate) fn print_record(
    out: &mut impl Write,
    record: &Record,
    json: bool,
) -> Result<(), Failure> {
    if json {
        print_json(out, &record_json(record))
    } else {
        writeln!(out, "{}", record_text(record))?;
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
                head_position: report.head.next.0,
                head_hash: report.head.hash.to_hex(),
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
struct StatsJson {
    records: u64,
    streams: u64,
    head_position: u64,
    head_hash: String,
    file_bytes: u64,
}

/// Writes the counts and sizes `stats` prints: JSON with `json`, else a table.
pub(crate) fn print_stats(out: &mut impl Write, stats: &Stats, json: bool) -> Result<(), Failure> {
    if json {
        return print_json(
            out,
            &StatsJson {
                records: stats.records,
                streams: stats.streams,
                head_position: stats.head.next.0,
                head_hash: stats.head.hash.to_hex(),
                file_bytes: stats.file_bytes,
            },
        );
    }
    writeln!(out, "records        {}", stats.records)?;
    writeln!(out, "streams        {}", stats.streams)?;
    writeln!(out, "head position  {}", stats.head.next)?;
    writeln!(out, "head hash      {}", stats.head.hash)?;
    writeln!(out, "file bytes     {}", stats.file_bytes)?;
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
