//! The bodies of the fuzz targets, one function each, taking the fuzzer's bytes. The targets
//! in `fuzz/fuzz_targets/` only call these, and the stable test `tests/it/fuzz_replay.rs`
//! runs them over the committed corpus and seeded inputs. Each panics on a violation (that
//! is how a fuzzer learns of one) and on nothing else.

use arbitrary::{Arbitrary, Unstructured};
use redb::backends::InMemoryBackend;

use crate::event::DomainEvent;
use crate::log::append::ExpectedVersion;
use crate::projection::digest::digest;
use crate::record::segment::Segment;
use crate::record::{Format, NewEvent, Position, Record, StreamVersion, decode_stored};
use crate::store::{Store, StoreOptions};
use crate::testing::faults::{base_image, scenario};
use crate::testing::model::{Model, Outcome, Script, Written, run_on_store};
use crate::testing::sim::{Fault, Loss, Trigger};
use crate::{Direction, hash::Digest};

/// Commands per fuzz input, at most: keeps one execution cheap.
const SCRIPT_OPS_MAX: usize = 48;

fn memory_store() -> Store {
    let options = StoreOptions {
        create: true,
        ..StoreOptions::default()
    };
    match Store::open_with_backend(InMemoryBackend::new(), options) {
        Ok(store) => store,
        Err(error) => panic!("an in-memory store does not open: {error}"),
    }
}

/// Every event kind the domains own, each handed to every domain's decoder.
fn decode_as_every_kind(payload: &[u8], schema: u16) {
    let kinds = [
        "consumer.checkpointed",
        "ingest.accepted",
        "lease.acquired",
        "lease.lane_claimed",
        "lease.lane_cursor_advanced",
        "lease.lane_released",
        "lease.lane_renewed",
        "lease.released",
        "lease.renewed",
        "outbox.acked",
        "outbox.claimed",
        "outbox.delivered",
        "outbox.enqueued",
        "outbox.expired",
        "outbox.parked",
        "outbox.pruned",
        "outbox.retry_scheduled",
        "registry.fuel_charged",
        "registry.instance_added",
        "registry.instance_removed",
        "registry.instance_updated",
        "registry.knows_changed",
        "registry.setting_set",
        "registry.status_changed",
        "registry.topics_changed",
        "run.detail_pruned",
        "run.event_appended",
        "run.heartbeat",
        "run.rolled_up",
        "run.span_ended",
        "run.span_patched",
        "run.span_started",
    ];
    for kind in kinds {
        let record = Record {
            position: Position(0),
            stream: "s".into(),
            version: StreamVersion(0),
            kind: kind.into(),
            schema,
            at_ms: 0,
            idempotency_key: None,
            payload: payload.to_vec(),
            payload_hash: crate::hash::payload_hash(payload),
            prev: Digest::ZERO,
            hash: Digest::ZERO,
        };
        let _ = crate::registry::events::RegistryEvent::from_record(&record);
        let _ = crate::leases::events::LeaseEvent::from_record(&record);
        let _ = crate::outbox::events::OutboxEvent::from_record(&record);
        let _ = crate::runs::events::RunEvent::from_record(&record);
        let _ = crate::consumers::events::ConsumerEvent::from_record(&record);
        let _ = crate::ingest::events::IngestEvent::from_record(&record);
    }
}

/// `decode_record`: after a first byte naming the position, the bytes as a stored record
/// (as they are, and behind their own header hash so decoding gets past the hash check), as
/// a segment, as the payload of every domain event, and as a stream's tail or archived block
/// of runs. A typed error or a value; never a panic. (The allocation bound is the decoders' own: bincode with the header and payload
/// caps as limits.)
pub fn decode_record(data: &[u8]) {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let position = Position(u64::from(first));
    let _ = decode_stored(body, position);
    // A header hash in front: with an empty payload, decoding gets past the hash check.
    let mut rehashed = crate::hash::record_hash(body).0.to_vec();
    rehashed.extend_from_slice(body);
    let _ = decode_stored(&rehashed, position);
    for format in [Format::V1, Format::V2] {
        decode_segment(body, format);
    }
    decode_as_every_kind(body, u16::from(first % 3));
    parsers_agree(body);
    parsers_agree(&rehashed);
    run_blocks_round_trip(body, u64::from(first) << 56);
}

/// `bytes` as a segment of `format` and each of its records, checked as a point read and as a
/// scan reads them, and, for a v2 segment, each record re-encoded as export writes it must
/// decode as v1 to the same fields.
fn decode_segment(bytes: &[u8], format: Format) {
    use crate::record::view::{RecordHashes, parse_at};
    let Ok(segment) = Segment::parse(bytes, format) else {
        return;
    };
    let _ = segment.digest_error();
    for at in segment.records_at() {
        let position = Position(u64::from(at.index));
        let _ = parse_at(bytes, &at, position, RecordHashes::Check);
        if let Ok(view) = parse_at(bytes, &at, position, RecordHashes::CoveredBySegmentDigest) {
            let mut stored = Vec::new();
            view.encode_v1_stored(&mut stored);
            let as_v1 = crate::record::view::parse_stored(
                &stored,
                position,
                RecordHashes::CoveredBySegmentDigest,
            );
            assert_eq!(as_v1, Ok(view), "a record re-encoded as v1 reads the same");
        }
    }
}

/// Stream index bytes (a tail, an archived block from `first_version`) decode or are refused;
/// what decodes encodes back to the same bytes.
fn run_blocks_round_trip(bytes: &[u8], first_version: u64) {
    use crate::log::stream_index::RunBlock;
    if let Ok(tail) = RunBlock::decode_tail("fuzz", bytes) {
        assert_eq!(tail.encode_tail(), bytes, "a tail re-encodes as read");
    }
    if let Ok(block) = RunBlock::decode("fuzz", first_version, bytes) {
        assert_eq!(block.encode_runs(), bytes, "a block re-encodes as read");
        assert_eq!(block.first_version(), first_version);
    }
}

/// The hand-written header parser reads exactly what bincode reads: whatever it accepts,
/// bincode decodes to the same fields and length; whatever it calls malformed, bincode refuses.
fn parsers_agree(stored: &[u8]) {
    use crate::record::view::{RecordHashes, parse_stored};
    use crate::record::{RecordError, header_by_bincode, header_fields};
    let header = stored.get(32..).unwrap_or_default();
    let position = header
        .get(1..9)
        .and_then(|bytes| bytes.try_into().ok())
        .map_or(0, u64::from_le_bytes);
    let by_bincode = header_by_bincode(header);
    match parse_stored(
        stored,
        Position(position),
        RecordHashes::CoveredBySegmentDigest,
    ) {
        Ok(view) => match by_bincode {
            Some((fields, len)) => {
                assert_eq!(fields, header_fields(&view), "fields differ");
                assert_eq!(
                    32 + len + view.payload.len(),
                    stored.len(),
                    "lengths differ"
                );
            }
            None => panic!("the parser accepts a header bincode refuses: {view:?}"),
        },
        Err(error @ RecordError::Header { .. }) => {
            assert!(
                by_bincode.is_none(),
                "bincode reads a header refused: {error}"
            );
        }
        Err(_) => {}
    }
}

/// The digest of every projection of `store`.
pub fn digests(store: &Store) -> Vec<Digest> {
    let state = match store.state() {
        Ok(state) => state,
        Err(error) => panic!("state: {error}"),
    };
    store
        .projections()
        .iter()
        .map(|p| match digest(&state, p.as_ref()) {
            Ok(digest) => digest,
            Err(error) => panic!("digest of {}: {error}", p.name()),
        })
        .collect()
}

/// Runs `script` against an in-memory store and the model; `Err` names the first command
/// whose outcomes differ, or a final check that fails.
pub fn check_against_model(script: &Script) -> Result<(), String> {
    check_against_model_in(&memory_store(), script)
}

/// [`check_against_model`] through the commit journal: the store commits to a simulated
/// disk's journal, drained every [`crate::testing::faults::JOURNAL_DRAIN_BYTES`]; and then
/// the disk as power loss leaves it (the log's file as last drained, the journal's synced
/// frames) reopens to the same log and the same projections, recovered from the journal.
pub fn check_against_model_journaled(script: &Script) -> Result<(), String> {
    let images = crate::testing::faults::Images::journaled(&[]);
    let disk = images.disk(Fault::None);
    let store = images
        .open(&disk)
        .map_err(|error| format!("a journaled store does not open: {error}"))?;
    check_against_model_in(&store, script)?;
    let (head, live) = (store.head().map_err(|e| e.to_string())?, digests(&store));
    let after = images.after(&disk, true);
    drop(store);
    let crashed = after.disk(Fault::None);
    let recovered = after
        .open(&crashed)
        .map_err(|error| format!("the power-loss image does not reopen: {error}"))?;
    if recovered.head().map_err(|e| e.to_string())? != head {
        return Err("the recovered log's head differs from the live one's".into());
    }
    if digests(&recovered) != live {
        return Err("the recovered projections differ from the live ones".into());
    }
    let report = recovered.verify().map_err(|error| error.to_string())?;
    if let Some(finding) = report.problem {
        return Err(format!("verify fails after recovery: {finding}"));
    }
    Ok(())
}

fn check_against_model_in(store: &Store, script: &Script) -> Result<(), String> {
    let mut model = Model::default();
    let (mut store_now, mut model_now) = (1_000, 1_000);
    for (t, transaction) in script.transactions.iter().enumerate() {
        let mut mismatch = None;
        let first = model.next();
        let committed = store.write(|session| {
            for (c, op) in transaction.iter().enumerate() {
                let actual = run_on_store(op, session, &mut store_now);
                let expected = model.run(op, &mut model_now);
                let head = session.head().next.0;
                if expected == Outcome::Unmodelled {
                    model.observe_head(head);
                }
                if let Outcome::Failed(error) = &actual {
                    mismatch.get_or_insert(format!("transaction {t}, command {c} {op:?}: {error}"));
                } else if actual != expected && expected != Outcome::Unmodelled {
                    mismatch.get_or_insert(format!(
                        "transaction {t}, command {c} {op:?}: the store says {actual:?}, \
                         the model {expected:?}"
                    ));
                } else if head != model.next() {
                    mismatch.get_or_insert(format!(
                        "transaction {t}, command {c} {op:?}: the store's head is at {head}, \
                         the model's at {}",
                        model.next()
                    ));
                }
            }
            Ok(())
        });
        if let Err(error) = committed {
            return Err(format!("transaction {t} does not commit: {error}"));
        }
        if let Some(mismatch) = mismatch {
            return Err(mismatch);
        }
        check_written(store, first, model.take_written())
            .map_err(|error| format!("transaction {t}: {error}"))?;
    }
    let report = store.verify().map_err(|error| error.to_string())?;
    if let Some(finding) = report.problem {
        return Err(format!("verify fails: {finding}"));
    }
    let live = digests(store);
    store.rebuild(None).map_err(|error| error.to_string())?;
    if live != digests(store) {
        return Err("the projections differ from a rebuild's".into());
    }
    Ok(())
}

/// Checks that the records the store wrote from `first` on are, at each position the model
/// predicts one, in the stream, at the version and of the kind (where stated) predicted.
fn check_written(store: &Store, first: u64, written: Vec<Written>) -> Result<(), String> {
    let Some(last) = written.last() else {
        return Ok(());
    };
    let count = usize::try_from(last.position - first + 1).map_err(|e| e.to_string())?;
    let records = store
        .read_all(Position(first), Direction::Forward, count)
        .map_err(|error| error.to_string())?;
    for predicted in written {
        let Some(record) = records.iter().find(|r| r.position.0 == predicted.position) else {
            return Err(format!("no record at {}", predicted.position));
        };
        let matches = record.stream == predicted.stream
            && record.version.0 == predicted.version
            && predicted.kind.is_none_or(|kind| record.kind == kind);
        if !matches {
            return Err(format!(
                "at {} the store wrote {} #{} {}, the model predicts {predicted:?}",
                predicted.position, record.stream, record.version.0, record.kind
            ));
        }
    }
    Ok(())
}

/// `commands_vs_model`: the bytes as a script of commands, run against the store and the
/// model; their outcomes agree command by command, and at the end the projections equal a
/// rebuild's and `verify` passes.
pub fn commands_vs_model(data: &[u8]) {
    let Ok(script) = Script::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    if let Err(violation) = check_against_model(&script.bounded(SCRIPT_OPS_MAX)) {
        panic!("{violation}");
    }
}

/// A fault scenario drawn from fuzzer bytes.
#[derive(Arbitrary, Debug)]
struct FaultInput {
    /// The operation or sync the fault strikes at.
    at: u16,
    on_sync: bool,
    kind: u8,
    loss_seed: u64,
    power_loss: bool,
    script: Script,
}

/// The fault a seed or fuzzer byte picks: fail once, fail forever, crash with one of the
/// three losses, or a full disk.
pub fn pick_fault(kind: u8, at: u64, on_sync: bool, loss_seed: u64) -> Fault {
    let trigger = if on_sync {
        Trigger::Sync(1 + at % 64)
    } else {
        Trigger::Op(1 + at % 512)
    };
    fault_of_kind(kind, trigger, loss_seed)
}

/// Fault kinds [`fault_of_kind`] tells apart.
pub const FAULT_KINDS: u8 = 6;

/// Fault `kind` (modulo [`FAULT_KINDS`]) striking at `trigger`.
pub fn fault_of_kind(kind: u8, trigger: Trigger, loss_seed: u64) -> Fault {
    match kind % FAULT_KINDS {
        0 => Fault::FailOnce(trigger),
        1 => Fault::FailForever(trigger),
        2 => Fault::Crash(trigger, Loss::DropUnsynced),
        3 => Fault::Crash(trigger, Loss::KeepSome(loss_seed)),
        4 => Fault::Crash(trigger, Loss::TearLast(loss_seed)),
        _ => Fault::NoSpace(trigger),
    }
}

/// `storage_faults`: the bytes as a fault and a script, run on the simulated disk, then a
/// restart and the checks of [`crate::testing::faults`].
pub fn storage_faults(data: &[u8]) {
    let Ok(input) = FaultInput::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let fault = pick_fault(
        input.kind,
        u64::from(input.at),
        input.on_sync,
        input.loss_seed,
    );
    let script = input.script.bounded(SCRIPT_OPS_MAX / 2);
    if let Err(violation) = scenario(base_image(), fault, &script, input.power_loss) {
        panic!("{fault:?}: {violation}");
    }
}

/// Splits `data` at zero bytes into at most `n` fields, as arguments arrive.
fn fields(data: &[u8], n: usize) -> Vec<String> {
    data.splitn(n, |b| *b == 0)
        .map(|field| String::from_utf8_lossy(field).into_owned())
        .collect()
}

/// `cli_input`: the bytes as the values of `annals append` (expected version, stream, kind,
/// payload, key, time, schema) and of `annals log`/`state` (from, limit, projection, at),
/// handed to the library calls the command line makes. An error or a value, never a panic;
/// and whatever was accepted leaves a log that verifies. Also the bytes as whole files: a
/// database handed to open and verify (as `annals verify` would), an export file read as
/// `annals import` checks it, and a proof file for `annals check-proof`. Refused, or read
/// without a panic.
pub fn cli_input(data: &[u8]) {
    let values = fields(data, 11);
    let value = |i: usize| values.get(i).map(String::as_str).unwrap_or("");
    let store = memory_store();
    let expected = value(0).parse::<ExpectedVersion>().ok();
    let at_ms = value(5).parse::<u64>().unwrap_or(0);
    let mut event = NewEvent::new(value(2), at_ms, value(3).as_bytes().to_vec());
    if !value(4).is_empty() {
        event = event.with_idempotency_key(value(4));
    }
    if let Ok(schema) = value(6).parse::<u16>() {
        event = event.with_schema(schema);
    }
    if let Some(expected) = expected {
        let _ = store.append(value(1), expected, std::slice::from_ref(&event));
        let _ = store.append(value(1), ExpectedVersion::Any, &[event]);
    }
    let from = value(7).parse::<u64>().unwrap_or(0);
    let limit = value(8).parse::<usize>().unwrap_or(10).min(1_000);
    let _ = store.read_all(Position(from), Direction::Backward, limit);
    let _ = store.read_stream(value(1), StreamVersion(from), Direction::Forward, limit);
    let at = value(10).parse::<u64>().ok().map(Position);
    let _ = store.state_json(value(9), at);
    match store.verify() {
        Ok(report) if report.is_sound() => {}
        Ok(report) => panic!("accepted input left a log that fails verify: {report:?}"),
        Err(error) => panic!("verify errs on an in-memory log: {error}"),
    }
    as_database_file(data);
    as_import_file(data);
    as_proof_file(data);
}

/// Records of an import file read per fuzz input, at most.
const IMPORT_RECORDS_MAX: usize = 4_096;

/// The bytes as an export file, read as `annals import` reads it before writing anything:
/// a header, checked records, a trailer. An error or a summary, never a panic.
fn as_import_file(data: &[u8]) {
    let Ok(mut reader) = crate::export::ExportReader::new(data) else {
        return;
    };
    for _ in 0..IMPORT_RECORDS_MAX {
        match reader.next_record() {
            Ok(Some(_)) => {}
            Ok(None) => {
                let _ = reader.finish();
                return;
            }
            Err(_) => return,
        }
    }
}

/// The bytes as a proof file for `annals check-proof`: it parses and checks, or it does not.
fn as_proof_file(data: &[u8]) {
    if let Ok(proof) = crate::audit::proof_file::ProofFile::from_json(data) {
        let _ = proof.check_self_consistency();
        let trusted = crate::merkle::TrustedHead::Head(proof.tree_head());
        let _ = proof.check(&crate::merkle::Trust::from(trusted));
    }
}

/// The bytes as a database file: opening refuses it with a typed error, or opens it and
/// reads and verifies it without a panic.
fn as_database_file(data: &[u8]) {
    let disk = crate::testing::sim::SimDisk::new(data.to_vec(), Fault::None);
    let options = StoreOptions::default();
    if let Ok(store) = Store::open_with_backend(disk.backend(), options) {
        let _ = store.verify();
        let _ = store.read_all(Position(0), Direction::Forward, 100);
    }
}
