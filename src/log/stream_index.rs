//! The stream index: where each stream's records lie in the log.
//!
//! A stream's records lie in **runs**, each contiguous both in the log and in the stream. A
//! stream's latest runs (at most [`RUNS_PER_BLOCK`]) form its **tail**, kept in `annals.meta`
//! beside the head; when the tail is full, an append that starts a new run moves it to
//! `annals.stream_runs` as an archived **block** keyed (stream, first version). So an append
//! rewrites a small row in the table the head is written to anyway, and the rows of streams
//! written in turn stay few and close together: keeping every run in a table ordered by stream
//! put each active stream's last run on a page of its own, one more page written per stream a
//! commit touched (schema/FORMAT.md 3.3).

use crate::storage::Readable;

use super::checksum;
use super::tables::STREAM_RUNS_NAME;

use crate::error::{Error, MetaFault, Result};
use crate::record::problem::StreamRunsFault;
use crate::record::uleb128::{put as put_uleb128, take as take_uleb128};

/// The most runs a block holds; a full tail is archived when its stream starts another run.
pub const RUNS_PER_BLOCK: usize = 16;

/// Records `first_version ..` of a stream at positions `first_position ..`, `count` of them,
/// contiguous in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamRun {
    /// The stream version of its first record.
    pub first_version: u64,
    /// The log position of its first record.
    pub first_position: u64,
    /// How many records it holds (at least one).
    pub count: u64,
}

/// Consecutive runs of one stream: its tail, or an archived block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RunBlock {
    first_version: u64,
    runs: Vec<StreamRun>,
}

/// What the meta key of a stream's tail starts with; no fixed meta key does.
pub(crate) const TAIL_KEY_PREFIX: &str = "stream:";
/// The least string above every key starting with [`TAIL_KEY_PREFIX`].
pub(crate) const TAIL_KEYS_END: &str = "stream;";

/// The meta key of `stream`'s tail.
pub(crate) fn tail_key(stream: &str) -> String {
    // Not `format!`: its machinery cost more than the copy, once per stream per commit.
    let mut key = String::with_capacity(TAIL_KEY_PREFIX.len() + stream.len());
    key.push_str(TAIL_KEY_PREFIX);
    key.push_str(stream);
    key
}

/// The tail of `stream` in the meta table, `None` if the stream holds no record.
pub(crate) fn read_tail(
    meta: &impl Readable<&'static str, &'static [u8]>,
    stream: &str,
) -> Result<Option<RunBlock>> {
    match meta.get(tail_key(stream).as_str())? {
        Some(bytes) => {
            let key = tail_key(stream);
            RunBlock::decode_tail(stream, super::unseal_meta(&key, bytes.value())?).map(Some)
        }
        None => Ok(None),
    }
}

impl RunBlock {
    /// The block before a stream's first record.
    pub(crate) fn empty() -> Self {
        RunBlock {
            first_version: 0,
            runs: Vec::new(),
        }
    }

    /// The version after its last record: the stream's length when this is its tail.
    pub(crate) fn end_version(&self) -> u64 {
        self.runs
            .last()
            .map_or(self.first_version, |run| run.first_version + run.count)
    }

    /// The version of its first record.
    pub(crate) fn first_version(&self) -> u64 {
        self.first_version
    }

    /// Its runs, in version order, by value.
    pub(crate) fn into_runs(self) -> Vec<StreamRun> {
        self.runs
    }

    /// Adds `count` (at least one) records at `first_position ..` after this tail's last:
    /// extending the last run when they follow it in the log, else as a new run. A full tail
    /// is returned to be archived, and this tail restarts with the new run alone.
    ///
    /// The records must start at or after the end of the tail's last run and keep the
    /// stream's versions below 2^64. The caller places them at the head, so a tail that
    /// breaks either was damaged on disk (a run past the head, a first version near 2^64):
    /// that is refused as corruption of `stream`'s index, leaving this tail unchanged, and
    /// every block stays in the order its encoding needs.
    pub(crate) fn push(
        &mut self,
        stream: &str,
        first_position: u64,
        count: u64,
    ) -> Result<Option<RunBlock>> {
        let before = self.end_version();
        let archived = self.push_run(stream, first_position, count)?;
        // The postcondition every read of the tail relies on: the stream's next version moved
        // by exactly the records added, and the last run ends where they end.
        assert_eq!(
            self.end_version(),
            before + count,
            "{stream}: tail version after a push"
        );
        assert_eq!(
            self.runs.last().map(|run| run.first_position + run.count),
            Some(first_position + count),
            "{stream}: tail's last run after a push"
        );
        Ok(archived)
    }

    fn push_run(
        &mut self,
        stream: &str,
        first_position: u64,
        count: u64,
    ) -> Result<Option<RunBlock>> {
        assert!(count > 0, "a run holds at least one record");
        let first_version = self.end_version();
        // Decoding checked that the last run's end fits 64 bits.
        let last_end = self.runs.last().map(|run| run.first_position + run.count);
        if let Some(end) = last_end.filter(|&end| end > first_position) {
            return Err(corrupt(
                stream,
                MetaFault::StreamRuns(StreamRunsFault::EndsPastNext {
                    end,
                    next: first_position,
                }),
            ));
        }
        if first_version.checked_add(count).is_none() {
            return Err(corrupt(
                stream,
                MetaFault::StreamRuns(StreamRunsFault::VersionOverflow {
                    version: first_version,
                    count,
                }),
            ));
        }
        if let Some(last) = self.runs.last_mut()
            && last.first_position + last.count == first_position
        {
            last.count += count;
            return Ok(None);
        }
        let run = StreamRun {
            first_version,
            first_position,
            count,
        };
        if self.runs.len() < RUNS_PER_BLOCK {
            self.runs.push(run);
            return Ok(None);
        }
        Ok(Some(std::mem::replace(
            self,
            RunBlock {
                first_version,
                runs: vec![run],
            },
        )))
    }

    /// The archived block's value: each run as its gap and count (its versions follow from
    /// the key's first version).
    pub(crate) fn encode_runs(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.runs.len() * 4);
        let mut end = 0u64;
        for run in &self.runs {
            // Every run comes from `decode` (each gap is ≥ 0 by construction) or from `push`
            // (which refuses records that start before the last run ends), so the runs rise
            // through the log whatever the file held; a negative gap here is a bug of ours.
            let gap = run
                .first_position
                .checked_sub(end)
                .expect("decode and push keep a block's runs rising through the log");
            put_uleb128(&mut out, gap);
            put_uleb128(&mut out, run.count);
            end = run.first_position + run.count;
        }
        out
    }

    /// The tail's value: its first version, then its runs as in an archived block.
    pub(crate) fn encode_tail(&self) -> Vec<u8> {
        let mut out = self.first_version.to_le_bytes().to_vec();
        out.extend_from_slice(&self.encode_runs());
        out
    }

    /// Decodes `stream`'s tail from its meta value.
    pub(crate) fn decode_tail(stream: &str, bytes: &[u8]) -> Result<RunBlock> {
        let Some((first_version, runs)) = bytes.split_first_chunk::<8>() else {
            return Err(corrupt(
                stream,
                MetaFault::TooShort {
                    found: bytes.len(),
                    least: 8,
                },
            ));
        };
        RunBlock::decode(stream, u64::from_le_bytes(*first_version), runs)
    }

    /// Decodes `stream`'s block starting at version `first_version` from its runs' bytes.
    /// Refuses an empty or overfull block, a number not in canonical LEB128, a run of no
    /// record, and any run whose positions or versions would pass 2^64.
    /// Decodes an archived block as `annals.stream_runs` stores it under `(stream,
    /// first_version)`, once its checksum holds.
    pub(crate) fn decode_stored(
        stream: &str,
        first_version: u64,
        stored: &[u8],
    ) -> Result<RunBlock> {
        let key = checksum::stream_runs_key(stream, first_version);
        let bytes = checksum::unseal(STREAM_RUNS_NAME, &key, stored)?;
        RunBlock::decode(stream, first_version, bytes)
    }

    /// The block as `annals.stream_runs` stores it under `(stream, first_version)`: its runs,
    /// sealed with their checksum.
    pub(crate) fn encode_stored(&self, stream: &str) -> Vec<u8> {
        let key = checksum::stream_runs_key(stream, self.first_version);
        checksum::seal(STREAM_RUNS_NAME, &key, &self.encode_runs())
    }

    pub(crate) fn decode(stream: &str, first_version: u64, mut bytes: &[u8]) -> Result<RunBlock> {
        let malformed = |bytes: &[u8]| {
            corrupt(
                stream,
                MetaFault::StreamRuns(StreamRunsFault::Malformed {
                    bytes: bytes.len(),
                    most: RUNS_PER_BLOCK,
                }),
            )
        };
        let whole = bytes;
        let mut block = RunBlock {
            first_version,
            runs: Vec::new(),
        };
        let (mut version, mut end) = (first_version, 0u64);
        while !bytes.is_empty() {
            let (Some(gap), Some(count)) = (take_uleb128(&mut bytes), take_uleb128(&mut bytes))
            else {
                return Err(malformed(whole));
            };
            if block.runs.len() == RUNS_PER_BLOCK {
                return Err(malformed(whole));
            }
            let fits = |first: &u64| {
                count > 0
                    && first.checked_add(count).is_some()
                    && version.checked_add(count).is_some()
            };
            let Some(first_position) = end.checked_add(gap).filter(fits) else {
                return Err(corrupt(
                    stream,
                    MetaFault::StreamRuns(StreamRunsFault::RunOutOfRange {
                        count,
                        gap,
                        after: end,
                        version,
                    }),
                ));
            };
            block.runs.push(StreamRun {
                first_version: version,
                first_position,
                count,
            });
            version += count;
            end = first_position + count;
        }
        if block.runs.is_empty() {
            return Err(malformed(whole));
        }
        Ok(block)
    }
}

fn corrupt(stream: &str, fault: MetaFault) -> Error {
    Error::corrupt_meta(
        crate::error::MetaItem::StreamIndex {
            stream: Some(stream.to_owned()),
        },
        fault,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(runs: u64) -> RunBlock {
        let mut tail = RunBlock::empty();
        for i in 0..runs {
            assert_eq!(tail.push("s", 10 * i, 2).unwrap(), None);
        }
        tail
    }

    #[test]
    fn a_run_that_follows_the_last_in_the_log_extends_it() {
        let mut tail = RunBlock::empty();
        assert_eq!(tail.push("s", 5, 2).unwrap(), None);
        assert_eq!(tail.push("s", 7, 3).unwrap(), None);
        assert_eq!(tail.push("s", 20, 1).unwrap(), None);
        assert_eq!(
            tail.clone().into_runs(),
            [
                StreamRun {
                    first_version: 0,
                    first_position: 5,
                    count: 5
                },
                StreamRun {
                    first_version: 5,
                    first_position: 20,
                    count: 1
                },
            ]
        );
        assert_eq!(tail.end_version(), 6);
    }

    #[test]
    fn records_that_start_before_the_last_run_ends_are_refused_and_leave_the_tail() {
        // As a damaged tail whose last run (positions 20 and 21) lies past the head (21).
        let mut tail = filled(3);
        let error = tail.push("orders", 21, 1).unwrap_err();
        assert!(
            matches!(&error, Error::CorruptMeta {
                    item: crate::error::MetaItem::StreamIndex { stream: Some(stream) },
                    fault: crate::error::MetaFault::StreamRuns(
                        StreamRunsFault::EndsPastNext { end: 22, next: 21 }
                    ),
                } if stream == "orders"),
            "{error}"
        );
        assert_eq!(tail, filled(3));
        // Right after the last run, or anywhere later, is fine.
        assert_eq!(tail.push("orders", 22, 1).unwrap(), None);
        assert_eq!(tail.push("orders", 90, 1).unwrap(), None);
    }

    #[test]
    fn records_that_would_take_versions_past_2_64_are_refused() {
        // A tail that decodes (its own runs fit) but ends at the last version there is.
        let mut tail = RunBlock::decode("s", u64::MAX - 2, &[5, 2]).unwrap();
        assert_eq!(tail.end_version(), u64::MAX);
        let before = tail.clone();
        assert!(matches!(
            tail.push("s", 7, 1),
            Err(Error::CorruptMeta { .. })
        ));
        assert_eq!(tail, before);
    }

    #[test]
    fn a_full_tail_is_handed_back_and_restarts_with_the_new_run() {
        let mut tail = filled(RUNS_PER_BLOCK as u64);
        let archived = tail
            .push("s", 1_000, 4)
            .unwrap()
            .expect("a full tail is archived");
        assert_eq!(archived, filled(RUNS_PER_BLOCK as u64));
        assert_eq!(tail.first_version(), 2 * RUNS_PER_BLOCK as u64);
        assert_eq!(tail.clone().into_runs().len(), 1);
        assert_eq!(tail.end_version(), 2 * RUNS_PER_BLOCK as u64 + 4);
    }

    #[test]
    fn blocks_read_back_as_written() {
        let mut tail = filled(3);
        tail.push("s", 1_000, 1).unwrap();
        let decoded = RunBlock::decode_tail("s", &tail.encode_tail()).unwrap();
        assert_eq!(decoded, tail);
        let archived = RunBlock::decode("s", 0, &tail.encode_runs()).unwrap();
        assert_eq!(archived, tail);
    }

    #[test]
    fn interleaved_runs_take_a_few_bytes_each() {
        let mut tail = RunBlock::empty();
        for i in 0..RUNS_PER_BLOCK as u64 {
            assert_eq!(tail.push("s", 1_000_000 + 64 * i, 1).unwrap(), None);
        }
        // The first run's position in three bytes, then a gap and a count of one byte each.
        assert_eq!(tail.encode_runs().len(), 4 + 2 * (RUNS_PER_BLOCK - 1));
    }

    #[test]
    fn damaged_blocks_are_refused_naming_the_stream() {
        let good = filled(2).encode_runs();
        let no_records = [5, 0];
        let past_the_end = [
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 2,
        ];
        let overfull = filled(RUNS_PER_BLOCK as u64).encode_runs().repeat(2);
        for bytes in [
            &[][..],
            &good[..good.len() - 1],
            &no_records,
            &past_the_end,
            &overfull,
        ] {
            let error = RunBlock::decode("orders", 0, bytes).unwrap_err();
            assert!(error.to_string().contains("\"orders\""), "{error}");
        }
        assert!(RunBlock::decode("s", u64::MAX - 1, &good).is_err());
        assert!(RunBlock::decode_tail("s", &[0; 7]).is_err());
    }
}
