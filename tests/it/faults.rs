//! Simulated storage faults (`annals::testing::sim`): for seeded scripts, a write or sync
//! fails once or forever, or the machine crashes losing unsynced writes (all, some, or
//! tearing the last); after a restart every acknowledged commit is there, nothing half
//! done is, the chain verifies and the projections equal a replay. Also the SQLite-style
//! I/O-error sweep and crashes during recovery. A failure prints its seed;
//! `ANNALS_FAULT_SEED=<n>` (`ANNALS_MODEL_SEED=<n>` for the model's) replays it first, before
//! the test's own seeds.

use annals::testing::faults::{
    Observed, base_image, check_recovered, crash_during_recovery, run_with_fault, scenario,
};
use annals::testing::harness::{FAULT_KINDS, check_against_model, fault_of_kind};
use annals::testing::internals::demo::Rng;

use annals::testing::model::Script;
use annals::testing::random::seed_to_replay;
use annals::testing::sim::{Fault, Loss, Trigger};

/// Fault scenarios run in CI that count: the fault struck after at least one acknowledged
/// commit. Seeds are drawn until this many counted.
const FAULT_SCENARIOS_COUNTED: u64 = 500;
/// Seeds of the model comparison run in CI: enough to reach rare rules (failure-reason
/// choice, cost freezing, sweeper sparing, prune batches), which a few hundred seeds missed
/// when bugs were planted in the model; about 5 s in the test profile.
const MODEL_SEEDS: u64 = 2_000;

/// One seeded scenario. A run without the fault first counts the script's operations, so
/// that the fault is placed after its first acknowledged commit (a fault before any commit
/// tests only a failed start) and before its end (a later one would never strike).
fn fault_case(seed: u64) -> Observed {
    let mut rng = Rng::new(seed);
    let script = Script::random(seed, 2 + rng.below(6));
    let (_, _, dry) = run_with_fault(base_image(), Fault::None, &script)
        .unwrap_or_else(|violation| panic!("fault seed {seed}, no fault: {violation}"));
    let on_sync = rng.chance(30);
    let (ops_before, syncs_before) = dry.first_acknowledged_at.unwrap_or((0, 0));
    let trigger = if on_sync && dry.syncs > syncs_before {
        Trigger::Sync(syncs_before + 1 + rng.below(dry.syncs - syncs_before))
    } else {
        Trigger::Op(ops_before + 1 + rng.below(dry.ops.saturating_sub(ops_before)))
    };
    let fault = fault_of_kind(
        rng.below(u64::from(FAULT_KINDS)) as u8,
        trigger,
        rng.next_u64(),
    );
    let power_loss = rng.chance(50);
    scenario(base_image(), fault, &script, power_loss).unwrap_or_else(|violation| {
        panic!("fault seed {seed} ({fault:?}, power loss {power_loss}): {violation}")
    })
}

#[test]
fn acknowledged_commits_survive_every_simulated_fault_and_nothing_half_done_appears() {
    if let Some(seed) = seed_to_replay("ANNALS_FAULT_SEED") {
        // The seed's checks run inside; what it observed only counts in the sweep below.
        let _ = fault_case(seed);
    }
    let (mut seed, mut counted) = (0, 0);
    while counted < FAULT_SCENARIOS_COUNTED {
        let observed = fault_case(seed);
        if observed.struck && observed.acknowledged_before_fault > 0 {
            counted += 1;
        }
        seed += 1;
        assert!(
            seed < 2 * FAULT_SCENARIOS_COUNTED,
            "only {counted} of {seed} scenarios struck after an acknowledged commit"
        );
    }
    eprintln!("fault scenarios: {counted} struck after an acknowledged commit, of {seed} run");
    assert!(counted >= FAULT_SCENARIOS_COUNTED);
}

#[test]
fn store_outcomes_agree_with_the_reference_model() {
    let case = |seed: u64| {
        let script = Script::random(seed, 1 + seed % 40);
        if let Err(violation) = check_against_model(&script) {
            panic!("model seed {seed}: {violation}");
        }
    };
    if let Some(seed) = seed_to_replay("ANNALS_MODEL_SEED") {
        case(seed);
    }
    for seed in 0..MODEL_SEEDS {
        case(seed);
    }
}

/// The workload of the sweeps: fixed, a few transactions across every domain.
fn sweep_script() -> Script {
    Script::random(2026, 16)
}

/// Syncs of one recovery crashed at, at most; a recovery makes fewer, so every one of its
/// sync points is crashed at (the test checks the sweep ended by itself).
const RECOVERY_SYNCS_MAX: u64 = 64;

/// Ops past which the sweeps stop even if the fault still struck (it must not).
const SWEEP_OPS_MAX: u64 = 2_000;

#[test]
fn io_error_sweep_fails_each_operation_once_and_forever_and_the_log_stays_a_durable_prefix() {
    let script = sweep_script();
    for forever in [false, true] {
        let mut k = 1;
        loop {
            let trigger = Trigger::Op(k);
            let fault = if forever {
                Fault::FailForever(trigger)
            } else {
                Fault::FailOnce(trigger)
            };
            let (disk, expectation, observed) = run_with_fault(base_image(), fault, &script)
                .unwrap_or_else(|violation| panic!("{fault:?}: {violation}"));
            for (what, image) in [
                ("restart", disk.image_after_restart()),
                ("power loss", disk.image_after_power_loss()),
            ] {
                if let Err(violation) = check_recovered(&image, &expectation) {
                    panic!("{fault:?}, after {what}: {violation}");
                }
            }
            if !observed.struck {
                // The workload completed before the k-th operation: the sweep is over.
                assert!(k > 10, "the workload made only {k} operations");
                eprintln!("i/o sweep (forever: {forever}): {k} operations");
                break;
            }
            k += 1;
            assert!(k < SWEEP_OPS_MAX, "the workload never completes");
        }
    }
}

#[test]
fn a_crash_at_every_operation_then_at_every_sync_of_recovery_loses_nothing_acknowledged() {
    let script = sweep_script();
    let losses = [Loss::DropUnsynced, Loss::KeepSome(7), Loss::TearLast(11)];
    let (mut k, mut recovery_syncs) = (1, 0);
    loop {
        let loss = losses[(k % 3) as usize];
        let fault = Fault::Crash(Trigger::Op(k), loss);
        let (disk, expectation, observed) = run_with_fault(base_image(), fault, &script)
            .unwrap_or_else(|violation| panic!("{fault:?}: {violation}"));
        if !observed.struck {
            break;
        }
        let image = disk.image_after_restart();
        check_recovered(&image, &expectation)
            .unwrap_or_else(|violation| panic!("{fault:?}: {violation}"));
        let syncs = crash_during_recovery(&image, &expectation, loss, RECOVERY_SYNCS_MAX)
            .unwrap_or_else(|violation| panic!("{fault:?}: {violation}"));
        assert!(
            syncs < RECOVERY_SYNCS_MAX,
            "{fault:?}: recovery never completed"
        );
        recovery_syncs += syncs;
        k += 1;
        assert!(k < SWEEP_OPS_MAX, "the workload never completes");
    }
    assert!(k > 10, "the workload made only {k} operations");
    assert!(
        recovery_syncs > 0,
        "no recovery ever synced: nothing was crashed"
    );
    eprintln!("crash sweep: {k} crash points, {recovery_syncs} recovery syncs crashed at");
}

#[test]
fn the_fault_checker_notices_a_lost_acknowledged_commit() {
    let script = sweep_script();
    let (_, expectation, observed) = run_with_fault(base_image(), Fault::None, &script).unwrap();
    assert!(observed.acknowledged > 0);
    // The base image lacks every commit the run acknowledged.
    let violation = check_recovered(base_image(), &expectation).unwrap_err();
    assert!(violation.contains("is lost"), "{violation}");
}
