//! What the command line says of a log whose rebuild stopped between two of its transactions,
//! its projections behind the log (`tests/it/rebuild.rs` kills a real rebuild there, and
//! checks the library's side): `state` refuses them and shows no row, `verify` calls the log
//! sound and says they are behind, `rebuild` finishes them equal to what they were; rows that
//! differ from a replay up to the projections' checkpoint are damage all the same.

use std::path::Path;

use annals::display::grouped;
use annals::leases::LeaseCommand;
use annals::testing::internals::rebuild_stopped_after;
use annals::testing::setup::{ExpectDone, fill_interleaved};
use annals::{Store, StoreOptions};

use super::{annals, exits, path, stderr, stdout};

/// Records in the log: more than one of the rebuild's 8,192-record transactions.
const RECORDS: u64 = 9_000;

/// A log of [`RECORDS`] records, a few of them leases, at `db`.
fn leases_log(db: &Path) {
    let store = Store::open(db).unwrap();
    fill_interleaved(&store, RECORDS - 20);
    for i in 0..20 {
        let acquire = LeaseCommand::Acquire {
            resource: format!("resource-{i}"),
            holder: "a".into(),
            ttl_ms: 1_000,
            now_ms: 1,
        };
        store.execute(&acquire).unwrap().expect_done();
    }
    store.close().unwrap();
}

/// Rebuilds the log at `db` and stops after the rebuild's first replaying transaction;
/// returns where the projections stand and the head.
fn rebuild_stopped(db: &Path) -> (u64, u64) {
    let store = Store::open_with(db, StoreOptions::default()).unwrap();
    let at = rebuild_stopped_after(&store, 1).unwrap();
    let head = store.snapshot().unwrap().head().unwrap().next.0;
    assert!(0 < at && at < head, "{at} of {head}");
    // Dropped, not closed through a catch-up: as a kill leaves it.
    drop(store);
    (at, head)
}

#[test]
fn a_half_rebuilt_log_is_refused_by_state_reported_behind_by_verify_and_finished_by_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("log.redb");
    leases_log(&db);
    let before = stdout(&exits(annals(&["state", path(&db), "leases", "--json"]), 0));
    assert!(before.contains("resource-19"), "{before}");
    let (at, head) = rebuild_stopped(&db);

    let message = format!(
        "projection leases is behind the log: at {} of {}",
        grouped(at),
        grouped(head)
    );
    let state = exits(annals(&["state", path(&db), "leases"]), 1);
    assert!(stdout(&state).is_empty(), "rows shown: {}", stdout(&state));
    assert!(stderr(&state).contains(&message), "{}", stderr(&state));
    let verify = stdout(&exits(annals(&["verify", path(&db)]), 0));
    assert!(verify.starts_with("sound:"), "{verify}");
    assert!(verify.contains(&message), "{verify}");
    assert!(!verify.contains("unsound"), "{verify}");

    exits(annals(&["rebuild", path(&db)]), 0);
    let verify = stdout(&exits(annals(&["verify", path(&db)]), 0));
    assert!(!verify.contains("behind"), "{verify}");
    let after = stdout(&exits(annals(&["state", path(&db), "leases", "--json"]), 0));
    assert_eq!(after, before);
}

#[test]
fn verify_calls_a_half_rebuilt_projection_with_a_forged_row_unsound_at_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("log.redb");
    leases_log(&db);
    let (at, _) = rebuild_stopped(&db);
    annals::testing::damage::forge_projection_row(&db, "leases.held", b"forged", b"row");
    let verify = stdout(&exits(annals(&["verify", path(&db)]), 1));
    assert!(
        verify.contains("unsound") && verify.contains("leases"),
        "{verify}"
    );
    assert!(
        verify.contains(&format!("first {at} records")),
        "not compared at the checkpoint: {verify}"
    );
}
