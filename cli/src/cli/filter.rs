//! Which records `log` and `history` print: `--kind`, `--since`, `--until` and `--grep`,
//! checked in that order so that the payload is decoded only for records the header
//! filters keep, and `--limit` over what they keep.

use std::io::Write;

use super::args::{RecordFilterArgs, RecordStyleArgs};
use super::failure::Failure;
use super::payload;
use super::render::{RecordStyle, print_decoded};
use annals::Record;

/// Prints the records that pass `filter`, up to its limit, stopping at the first error; a
/// personal payload opened with `payloads`, or shown as erased.
/// Returns how many it printed.
pub(crate) fn print_filtered(
    out: &mut impl Write,
    payloads: &annals::erasure::PayloadReader,
    records: impl Iterator<Item = annals::Result<Record>>,
    filter: &RecordFilterArgs,
    style: &RecordStyleArgs,
) -> Result<u64, Failure> {
    let style = RecordStyle {
        json: style.json,
        raw: style.raw,
        full: style.full,
        ms: style.ms,
    };
    let limit = filter.limit.map_or(u64::MAX, |limit| limit as u64);
    let mut printed = 0;
    for record in records {
        if printed >= limit {
            break;
        }
        let record = record?;
        if !header_matches(&record, filter) {
            continue;
        }
        let (payload, undecodable) = payload::decode(&record, payloads.open(&record)?);
        if let Some(text) = &filter.grep
            && !payload.text().contains(text.as_str())
        {
            continue;
        }
        print_decoded(out, &record, payload, undecodable.as_deref(), style)?;
        printed += 1;
    }
    Ok(printed)
}

/// Whether `record`'s kind and time pass the filter (`--since` and `--until` both include
/// their bound).
fn header_matches(record: &Record, filter: &RecordFilterArgs) -> bool {
    filter
        .kind
        .as_deref()
        .is_none_or(|prefix| record.kind.starts_with(prefix))
        && filter.since.is_none_or(|since| record.at_ms >= since)
        && filter.until.is_none_or(|until| record.at_ms <= until)
}
