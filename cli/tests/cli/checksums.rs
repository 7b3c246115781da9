//! Format v3: every stored value outside the segments carries a checksum, every read checks
//! it, and logs of v1 and v2 are upgraded by their first writable open (issue 29, point 4).
//!
//! The v1 and v2 logs in `tests/fixtures/format/` were written by the build before v3 (the
//! demo's 200 records, then 80 appends interleaving two streams, some with idempotency keys,
//! so that archived stream runs exist), with what its read commands printed beside them in
//! `before_v3/`; the v3 log is the v2 one as the build before v4 upgraded it (its tree still
//! blake3's). Format v4 rebuilds the tree with SHA-256, so `root` prints what RFC 6962 gives
//! for the same record hashes, computed here from the hashes `log` printed before.

use annals::testing::setup::ExpectDone;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use annals::{Error, Store, error::OpenError};
use sha2::{Digest as _, Sha256};

use crate::sha256;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/format");

/// The read commands whose output the fixtures keep, with the file each went to.
const KEPT_READS: [(&str, &[&str]); 8] = [
    ("log.jsonl", &["log", "--json"]),
    ("streams.jsonl", &["streams", "--json"]),
    ("state-registry.jsonl", &["state", "registry", "--json"]),
    ("state-leases.jsonl", &["state", "leases", "--json"]),
    ("state-outbox.jsonl", &["state", "outbox", "--json"]),
    ("state-runs.jsonl", &["state", "runs", "--json"]),
    ("state-consumers.jsonl", &["state", "consumers", "--json"]),
    ("state-ingest.jsonl", &["state", "ingest", "--json"]),
];

/// RFC 6962's root over `hashes` (the entries), computed as the RFC defines it: the reference
/// the upgraded tree is held to, written apart from the crate's tree code.
fn rfc6962_root(hashes: &[[u8; 32]]) -> [u8; 32] {
    fn node(bytes: &[&[u8]]) -> [u8; 32] {
        let mut hasher = Sha256::new();
        for part in bytes {
            hasher.update(part);
        }
        hasher.finalize().into()
    }
    match hashes {
        [] => node(&[]),
        [one] => node(&[&[0], one]),
        _ => {
            // The largest power of two below the count.
            let k = 1 << (usize::BITS - 1 - (hashes.len() - 1).leading_zeros());
            node(&[
                &[1],
                &rfc6962_root(&hashes[..k]),
                &rfc6962_root(&hashes[k..]),
            ])
        }
    }
}

/// The size and root `root --json` prints for the fixtures once upgraded to v4: the record
/// hashes the build before v3 printed, hashed as RFC 6962 says.
fn expected_head() -> (u64, String) {
    let log = std::fs::read_to_string(Path::new(FIXTURES).join("before_v3/log.jsonl")).unwrap();
    let hashes: Vec<[u8; 32]> = log
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let hex = record["hash"].as_str().unwrap();
            let mut hash = [0; 32];
            for (i, byte) in hash.iter_mut().enumerate() {
                *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
            }
            hash
        })
        .collect();
    let root: String = rfc6962_root(&hashes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    (hashes.len() as u64, root)
}

/// Runs `annals <command> <db> <rest…>` (the log goes second, as every command takes it).
fn annals(db: &Path, args: &[&str]) -> Output {
    let (command, rest) = args.split_first().expect("a command");
    Command::new(crate::ANNALS)
        .arg(command)
        .arg(db)
        .args(rest)
        .output()
        .expect("run the annals binary")
}

/// A copy of fixture `name` in `dir`.
fn fixture(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::copy(Path::new(FIXTURES).join(name), &path).unwrap();
    path
}

fn format_and_records(path: &Path) -> (u32, u32) {
    use annals::testing::internals::meta;
    use annals::testing::internals::tables::{FORMAT_KEY, RECORDS_KEY};
    let read = |key| {
        meta::get(path, key)
            .unwrap()
            .map_or(0, |bytes| u32::from_le_bytes(bytes.try_into().unwrap()))
    };
    (read(FORMAT_KEY), read(RECORDS_KEY))
}

#[test]
fn a_v1_v2_or_v3_log_is_refused_read_only_and_upgraded_by_a_writable_open_reading_the_same() {
    for (version, name, layout) in [(1, "v1.redb", 1), (2, "v2.redb", 2), (3, "v3.redb", 2)] {
        let dir = tempfile::tempdir().unwrap();
        let path = fixture(dir.path(), name);
        let before = sha256(&path);
        // Read-only, the old format is refused, naming the upgrade, and the file unchanged.
        match Store::open_read_only(&path) {
            Err(Error::Open(OpenError::NeedsUpgrade { found, current, .. })) => {
                assert_eq!((found, current), (version, 4));
            }
            other => panic!("v{version}: {:?}", other.map(|_| ())),
        }
        let refused = annals(&path, &["log", "--json"]);
        assert_eq!(refused.status.code(), Some(2), "v{version}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains("annals upgrade") && said.contains(&format!("v{version}")),
            "v{version}: {said}"
        );
        assert_eq!(
            sha256(&path),
            before,
            "v{version}: a refused read wrote the file"
        );
        // `annals upgrade` upgrades it once, and says so.
        let upgraded = annals(&path, &["upgrade", "--json"]);
        assert_eq!(upgraded.status.code(), Some(0), "v{version}: {upgraded:?}");
        let said: serde_json::Value = serde_json::from_slice(&upgraded.stdout).unwrap();
        assert_eq!(
            (said["from"].as_u64(), said["to"].as_u64()),
            (Some(version.into()), Some(4))
        );
        assert_eq!(format_and_records(&path), (4, layout));
        let again = annals(&path, &["upgrade", "--json"]);
        let said: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
        assert_eq!(said["from"].as_u64(), Some(4), "v{version}: upgraded twice");
        // Every read prints what the build before v3 printed of the same log, and the root
        // is RFC 6962's over the same record hashes.
        for (kept, args) in KEPT_READS {
            let read = annals(&path, args);
            assert_eq!(read.status.code(), Some(0), "v{version} {args:?}: {read:?}");
            let expected = std::fs::read(Path::new(FIXTURES).join("before_v3").join(kept)).unwrap();
            assert!(
                read.stdout == expected,
                "v{version} {args:?} prints other than before the upgrade"
            );
        }
        let root = annals(&path, &["root", "--json"]);
        let said: serde_json::Value = serde_json::from_slice(&root.stdout).unwrap();
        let (size, expected_root) = expected_head();
        assert_eq!(said["size"].as_u64(), Some(size), "v{version}");
        assert_eq!(
            said["root"].as_str(),
            Some(expected_root.as_str()),
            "v{version}"
        );
        let verify = annals(&path, &["verify"]);
        assert_eq!(verify.status.code(), Some(0), "v{version}: {verify:?}");
        // And it takes writes, which read back.
        let store = Store::open(&path).unwrap();
        store
            .append(
                "after/upgrade",
                annals::ExpectedVersion::Any,
                &[annals::NewEvent::new("note", 1, b"x".to_vec()).with_idempotency_key("after-1")],
            )
            .unwrap()
            .expect_done();
        assert!(
            annals::Audit::of(&store).verify().unwrap().is_sound(),
            "v{version}"
        );
    }
}

#[test]
fn an_upgrade_in_a_library_open_keeps_every_projection_and_rebuilds_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let old = fixture(dir.path(), "v3.redb");
    let store = Store::open(&old).unwrap();
    let snapshot = store.snapshot().unwrap();
    let head = snapshot.head().unwrap();
    let (size, root) = expected_head();
    assert_eq!(head.next.0, size);
    assert_eq!(snapshot.merkle_root(head.next.0).unwrap().to_hex(), root);
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "{:?}", report.problem);
    // A key written before the upgrade is still a duplicate, not a new record.
    let repeat = store
        .append(
            "raw/a",
            annals::ExpectedVersion::Any,
            &[
                annals::NewEvent::new("note", 1_700_000_000_001, b"a1".to_vec())
                    .with_idempotency_key("ka1"),
            ],
        )
        .unwrap();
    assert!(
        matches!(repeat, annals::AppendOutcome::Duplicate { .. }),
        "{repeat:?}"
    );
}

/// A small deterministic generator (splitmix64): the flips are the same on every run.
struct Flips(u64);

impl Flips {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Every read command, each as a user would run it on the demo log.
const READS: [&[&str]; 15] = [
    &["log", "--json"],
    &["log", "--json", "--stream", "lease/billing-export"],
    &["streams", "--json"],
    &["stats", "--json"],
    &["root", "--json"],
    &["verify", "--json"],
    &["state", "registry", "--json"],
    &["state", "leases", "--json"],
    &["state", "outbox", "--json"],
    &["state", "runs", "--json"],
    &["state", "consumers", "--json"],
    &["state", "ingest", "--json"],
    &["history", "lease:billing-export", "--json"],
    &["prove", "--position", "700", "--json"],
    &["prove", "--from-size", "300", "--json"],
];

/// Issue 29, point 4: one-bit flips over the whole file of a demo log, each read by every read
/// command; no read exits 0 printing other than it prints of the undamaged log, and none
/// panics. In eight shards, each its own test, so that none runs long on a loaded machine
/// (each flip is a process per read command).
///
/// Two flips in three land in a byte that is not zero, where the file's structure and records
/// are; the third anywhere (zeros inside a record or a page header matter as much). Picked
/// uniformly, 1,000 flips put about 590 in such bytes and the rest mostly on free pages that
/// no read reads; these 640 put about 550 where the reads read, in two thirds of the time.
const FLIPS: u64 = 640;
const FLIP_SHARDS: u64 = 8;

macro_rules! flip_shards {
    ($($name:ident: $shard:literal,)*) => {
        $(
            #[test]
            fn $name() {
                flipped_reads($shard);
            }
        )*
    };
}

flip_shards! {
    no_read_of_a_flipped_log_exits_0_with_output_that_differs_1_of_8: 0,
    no_read_of_a_flipped_log_exits_0_with_output_that_differs_2_of_8: 1,
    no_read_of_a_flipped_log_exits_0_with_output_that_differs_3_of_8: 2,
    no_read_of_a_flipped_log_exits_0_with_output_that_differs_4_of_8: 3,
    no_read_of_a_flipped_log_exits_0_with_output_that_differs_5_of_8: 4,
    no_read_of_a_flipped_log_exits_0_with_output_that_differs_6_of_8: 5,
    no_read_of_a_flipped_log_exits_0_with_output_that_differs_7_of_8: 6,
    no_read_of_a_flipped_log_exits_0_with_output_that_differs_8_of_8: 7,
}

/// The demo log the flips damage, and what every read prints of it undamaged: made once
/// for all the shards that run in one process.
fn pristine() -> &'static (Vec<u8>, Vec<Vec<u8>>) {
    static PRISTINE: std::sync::OnceLock<(Vec<u8>, Vec<Vec<u8>>)> = std::sync::OnceLock::new();
    PRISTINE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pristine.redb");
        let demo = Command::new(crate::ANNALS)
            .args(["demo", path.to_str().unwrap(), "--records", "2000"])
            .output()
            .unwrap();
        assert!(demo.status.success(), "{demo:?}");
        let pristine = std::fs::read(&path).unwrap();
        // Written out as each flipped copy is (no holes, so `stats`' disk bytes are the same).
        std::fs::write(&path, &pristine).unwrap();
        let expected = READS
            .iter()
            .map(|args| {
                let read = annals(&path, args);
                assert_eq!(read.status.code(), Some(0), "{args:?}: {read:?}");
                read.stdout
            })
            .collect();
        (pristine, expected)
    })
}

/// Shard `shard` of the flips: every [`FLIP_SHARDS`]th of the [`FLIPS`] bits the seed picks.
fn flipped_reads(shard: u64) {
    let dir = tempfile::tempdir().unwrap();
    let (pristine, expected) = pristine();
    let used: Vec<u64> = (0..pristine.len() as u64)
        .filter(|&at| pristine[at as usize] != 0)
        .collect();
    let mut flips = Flips(29);
    let bits: Vec<u64> = (0..FLIPS)
        .map(|n| {
            let pick = flips.next();
            if n % 3 == 2 {
                pick % (pristine.len() as u64 * 8)
            } else {
                used[(pick / 8 % used.len() as u64) as usize] * 8 + pick % 8
            }
        })
        .skip(shard as usize)
        .step_by(FLIP_SHARDS as usize)
        .collect();
    let workers = 2;
    let caught: Vec<(usize, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                let bits = &bits;
                let path = dir.path().join(format!("flipped-{worker}.redb"));
                scope.spawn(move || {
                    let (mut refused, mut same) = (0, 0);
                    for &bit in bits.iter().skip(worker).step_by(workers) {
                        let mut damaged = pristine.clone();
                        damaged[(bit / 8) as usize] ^= 1 << (bit % 8);
                        for (args, expected) in READS.iter().zip(expected) {
                            // Each read gets the damaged bytes afresh: a read-only open may
                            // repair a file that looks crashed.
                            std::fs::write(&path, &damaged).unwrap();
                            let read = annals(&path, args);
                            let said = String::from_utf8_lossy(&read.stderr);
                            assert!(
                                !said.contains("panicked"),
                                "bit {bit}, {args:?}: a panic: {said}"
                            );
                            match read.status.code() {
                                Some(0) => {
                                    assert!(
                                        read.stdout == *expected,
                                        "bit {bit} (byte {}), {args:?}: exit 0 with other \
                                         output:\n{}",
                                        bit / 8,
                                        String::from_utf8_lossy(&read.stdout)
                                    );
                                    same += 1;
                                }
                                Some(1 | 2) => refused += 1,
                                other => panic!("bit {bit}, {args:?}: exit {other:?}: {said}"),
                            }
                        }
                    }
                    (refused, same)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let refused: usize = caught.iter().map(|(refused, _)| refused).sum();
    let same: usize = caught.iter().map(|(_, same)| same).sum();
    assert_eq!(refused + same, bits.len() * READS.len());
    // The flips reach what the reads read: some are refused (most land on free or unread
    // pages, which every read passes over unchanged).
    assert!(refused > 0, "no flip was noticed: {same} reads unchanged");
}
