//! A cut survives a crash at any point: on the simulated disk, a crash at every sync and at
//! every write of the cut's transaction (losing all, some, or a torn part of what was not
//! synced), and an I/O error at each; and SIGKILL of the real `annals archive` at seeded
//! moments. Afterwards the log is either as before the cut or cut, it verifies, and when it
//! is cut its archive file is whole and is the log's history (`verify --archive`).

use std::path::Path;
use std::process::{Command, Stdio};

use annals::testing::internals::demo::Rng;
use annals::testing::sim::{Fault, SimDisk};
use annals::{ExpectedVersion, NewEvent, Position, Store, StoreOptions};

/// Records in the log cut, and where the cut falls.
const RECORDS: u64 = 300;
const CUT: Position = Position(170);

fn open_on(disk: &SimDisk) -> annals::Result<Store> {
    Store::open_with_backend(
        disk.backend(),
        StoreOptions {
            create: true,
            ..StoreOptions::default()
        },
    )
}

/// The image of a log of [`RECORDS`] records over interleaved streams.
fn base_image() -> Vec<u8> {
    let disk = SimDisk::new(Vec::new(), Fault::None);
    let store = open_on(&disk).expect("open");
    for n in 0..RECORDS {
        let mut event = NewEvent::new("test.event", n, format!("record {n}"));
        if n.is_multiple_of(4) {
            event = event.with_idempotency_key(format!("key-{n}"));
        }
        let _appended = store
            .append(&format!("s-{}", n % 7), ExpectedVersion::Any, &[event])
            .expect("append");
    }
    store.close().expect("close");
    disk.image_after_restart()
}

/// The log in `image` is either as before the cut or cut before [`CUT`]; it verifies, and a
/// cut one's archive at `archive` is whole and its history.
fn before_or_cut(image: Vec<u8>, archive: &Path, what: &str) -> bool {
    let disk = SimDisk::new(image, Fault::None);
    let store = open_on(&disk).unwrap_or_else(|error| panic!("{what}: reopen: {error}"));
    let report = store
        .verify()
        .unwrap_or_else(|error| panic!("{what}: verify: {error}"));
    assert!(report.is_sound(), "{what}: {:?}", report.problem);
    let snapshot = store.snapshot().expect("snapshot");
    let head = snapshot.head().expect("head").next;
    let start = snapshot.start();
    match (start, head) {
        (Position(0), Position(RECORDS)) => false,
        (CUT, Position(next)) if next == RECORDS + 1 => {
            let _whole = annals::export::check(archive, &mut |_| {})
                .unwrap_or_else(|error| panic!("{what}: the archive: {error}"));
            let found = store
                .verify_archives(&[archive.to_owned()], &mut |_| {})
                .unwrap_or_else(|error| panic!("{what}: verify --archive: {error}"));
            assert_eq!(found, None, "{what}");
            true
        }
        other => panic!("{what}: neither before nor cut: start and head {other:?}"),
    }
}

#[test]
fn a_cut_crashed_or_failed_at_any_write_or_sync_leaves_the_log_before_or_cut() {
    let image = base_image();
    let dir = tempfile::tempdir().expect("folder");
    // A dry run counts the operations of the open and of the cut.
    let dry = SimDisk::new(image.clone(), Fault::None);
    let store = open_on(&dry).expect("open");
    let (ops_open, syncs_open) = (dry.ops(), dry.syncs());
    let _cut = store
        .archive_before(CUT, dir.path().join("dry"))
        .expect("cut");
    let (ops_cut, syncs_cut) = (dry.ops(), dry.syncs());
    drop(store);
    assert!(syncs_cut > syncs_open, "the cut syncs");
    let (mut cut, mut before) = (0, 0);
    let faults = crate::common::sweep_faults(syncs_open + 1..=syncs_cut, ops_open + 1..=ops_cut);
    for (n, fault) in faults.into_iter().enumerate() {
        let what = format!("{fault:?}");
        let archive = dir.path().join(format!("archive-{n}"));
        let disk = SimDisk::new(image.clone(), fault);
        let store = open_on(&disk).unwrap_or_else(|error| panic!("{what}: open: {error}"));
        let result = store.archive_before(CUT, &archive);
        drop(store);
        let survived = match fault {
            Fault::FailOnce(_) => disk.image_after_restart(),
            _ => disk.image_after_power_loss(),
        };
        if result.is_ok() && !matches!(fault, Fault::Crash(..)) {
            // Acknowledged: it must be there.
            assert!(
                before_or_cut(survived, &archive, &what),
                "{what}: acknowledged, not cut"
            );
            cut += 1;
            continue;
        }
        if before_or_cut(survived, &archive, &what) {
            cut += 1;
        } else {
            before += 1;
        }
    }
    // Both outcomes were reached: the sweep crossed the commit.
    assert!(cut > 0 && before > 0, "cut {cut}, before {before}");
}

fn crash_seed() -> u64 {
    let seed = std::env::var("ANNALS_CRASH_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(0x000C_0A7C_0034);
    eprintln!("crash seed {seed} (ANNALS_CRASH_SEED={seed} replays it)");
    seed
}

/// Kills of `annals archive`.
const KILLS: u64 = 16;

#[test]
fn annals_archive_killed_at_seeded_moments_leaves_the_log_before_or_cut() {
    let seed = crash_seed();
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().expect("folder");
    let source = dir.path().join("source.redb");
    let store = Store::open(&source).expect("open");
    annals::testing::internals::demo::run(&store, 3_000, |_| {}).expect("demo");
    let head = store.head().expect("head").next;
    store.close().expect("close");
    let before = Position(head.0 / 2);
    let (mut cut, mut uncut) = (0, 0);
    for kill in 0..KILLS {
        let log = dir.path().join(format!("log-{kill}.redb"));
        std::fs::copy(&source, &log).expect("copy the log");
        let archive = dir.path().join(format!("log-{kill}.archive"));
        let mut child = Command::new(crate::annals_bin::annals())
            .arg("archive")
            .arg(&log)
            .arg("--before")
            .arg(before.0.to_string())
            .arg(&archive)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start annals");
        // Not a timing assertion: the pause only picks the moment of the kill (the first
        // kill at once, so one is always cut short).
        let delay =
            std::time::Duration::from_micros(if kill == 0 { 0 } else { rng.below(400_000) });
        std::thread::sleep(delay);
        child.kill().expect("kill");
        let _status = child.wait().expect("reap");
        let what = format!("kill {kill} after {delay:?} (seed {seed})");
        let store = Store::open(&log).unwrap_or_else(|error| panic!("{what}: open: {error}"));
        let report = store.verify().expect("verify");
        assert!(report.is_sound(), "{what}: {:?}", report.problem);
        let snapshot = store.snapshot().expect("snapshot");
        match (snapshot.start(), snapshot.head().expect("head").next) {
            (Position(0), found) if found == head => {
                uncut += 1;
                // Not cut: whatever archive it left is whole or absent, never half a file
                // under its name.
                if archive.exists() {
                    let _whole = annals::export::check(&archive, &mut |_| {})
                        .unwrap_or_else(|error| panic!("{what}: a half archive: {error}"));
                }
            }
            (start, found) if start == before && found.0 == head.0 + 1 => {
                cut += 1;
                assert_eq!(
                    store
                        .verify_archives(std::slice::from_ref(&archive), &mut |_| {})
                        .unwrap_or_else(|error| panic!("{what}: {error}")),
                    None,
                    "{what}"
                );
            }
            other => panic!("{what}: neither before nor cut: {other:?}"),
        }
    }
    eprintln!("annals archive killed {KILLS} times: {cut} cut, {uncut} before");
    assert!(uncut > 0, "the first kill, at once, leaves the log uncut");
}
