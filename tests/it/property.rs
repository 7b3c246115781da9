//! The property that makes projections trustworthy: for random command sequences across all
//! the domains (and raw appends), run in random transaction groupings, the live tables equal
//! a full rebuild's byte for byte, and `verify` passes. 1,000 seeded cases; a failure prints
//! its seed, which `ANNALS_PROPERTY_SEED=<n>` replays first, before the 1,000.

use annals::Store;
use annals::testing::internals::audit::digest;
use annals::testing::internals::demo::Rng;
use annals::testing::random::random_command;

const CASES: u64 = 1_000;

fn digests(store: &Store) -> Vec<annals::log::Digest> {
    let state = store.snapshot().unwrap().state();
    store
        .projections()
        .iter()
        .map(|p| digest(&state, p.as_ref()).unwrap())
        .collect()
}

fn check_case(seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("log.redb")).unwrap();
    let mut rng = Rng::new(seed);
    let mut now_ms = 1_000;
    let commands = 10 + rng.below(50);
    let mut done = 0;
    while done < commands {
        let group = (1 + rng.below(8)).min(commands - done);
        store
            .write(|session| {
                for _ in 0..group {
                    now_ms += rng.below(40);
                    random_command(&mut rng, session, now_ms);
                }
                Ok(())
            })
            .unwrap();
        done += group;
    }
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "seed {seed}: {:?}", report.problem);
    let live = digests(&store);
    annals::maintenance::Rebuild::of(&store).run(None).unwrap();
    assert_eq!(
        live,
        digests(&store),
        "seed {seed}: a rebuild changed the tables"
    );
}

#[test]
fn random_commands_leave_tables_equal_to_a_rebuild() {
    if let Some(seed) = annals::testing::random::seed_to_replay("ANNALS_PROPERTY_SEED") {
        check_case(seed);
    }
    for seed in 0..CASES {
        check_case(seed);
    }
}
