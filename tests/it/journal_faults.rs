//! The simulated disk through the commit journal: the same scripts as `faults.rs`, committed
//! by a store whose commits go to the journal (the disk's second file, on the same timeline
//! of operations) and are drained into the log every `JOURNAL_DRAIN_BYTES`. An I/O error at
//! every operation (once, and forever), a crash at every operation under each loss mode
//! (then at every sync of the recovery), and seeded faults: after each, every acknowledged
//! commit is there, nothing half done is, and `verify` passes. Each in the exclusive mode and
//! in the single-writer mode hosts run, whose drains commit in two phases under the engine's
//! locks (the journal's frames and synced mark are the same code in both).

use annals::testing::faults::{
    Images, Observed, base_image, check_recovered_on, crash_during_recovery_on, run_with_fault_on,
    scenario_on,
};
use annals::testing::harness::{FAULT_KINDS, check_against_model_journaled, fault_of_kind};
use annals::testing::internals::demo::Rng;
use annals::testing::model::Script;
use annals::testing::sim::{Fault, Loss, Trigger};

/// Seeded scenarios that count (struck after an acknowledged commit).
const SCENARIOS_COUNTED: u64 = 300;
const RECOVERY_SYNCS_MAX: u64 = 64;
const SWEEP_OPS_MAX: u64 = 4_000;

/// The disk as the exclusive mode commits to it.
fn exclusive() -> Images {
    Images::journaled(base_image())
}

/// The disk as the single-writer mode (the mode hosts run) commits to it: the same journal,
/// its drains two-phase, the engine's locks taken.
fn single_writer() -> Images {
    Images::journaled_single_writer(base_image())
}

fn sweep_script() -> Script {
    Script::random(2026, 16)
}

#[test]
fn through_the_journal_an_io_error_at_every_operation_leaves_a_durable_prefix() {
    io_error_sweep(&exclusive());
}

#[test]
fn in_single_writer_mode_an_io_error_at_every_operation_of_the_journal_and_its_two_phase_drains_leaves_a_durable_prefix()
 {
    io_error_sweep(&single_writer());
}

fn io_error_sweep(images: &Images) {
    let script = sweep_script();
    // The workload drains: the log's own file moves on, so faults strike drains too.
    let (disk, _, _) = run_with_fault_on(images, Fault::None, &script).unwrap();
    let drained = images.after(&disk, true);
    assert!(
        drained.log != images.log,
        "the workload never drained the journal"
    );
    for forever in [false, true] {
        let mut k = 1;
        loop {
            let trigger = Trigger::Op(k);
            let fault = if forever {
                Fault::FailForever(trigger)
            } else {
                Fault::FailOnce(trigger)
            };
            let (disk, expectation, observed) = run_with_fault_on(images, fault, &script)
                .unwrap_or_else(|violation| panic!("{fault:?}: {violation}"));
            for power_loss in [false, true] {
                let after = images.after(&disk, power_loss);
                if let Err(violation) = check_recovered_on(&after, &expectation) {
                    panic!("{fault:?}, power loss {power_loss}: {violation}");
                }
            }
            if !observed.struck {
                assert!(k > 10, "the workload made only {k} operations");
                eprintln!(
                    "journaled i/o sweep ({:?}, forever: {forever}): {k} operations",
                    images.sharing
                );
                break;
            }
            k += 1;
            assert!(k < SWEEP_OPS_MAX, "the workload never completes");
        }
    }
}

#[test]
fn through_the_journal_a_crash_at_every_operation_and_in_recovery_loses_nothing_acknowledged() {
    crash_sweep(&exclusive());
}

#[test]
fn in_single_writer_mode_a_crash_at_every_operation_and_in_recovery_loses_nothing_acknowledged() {
    crash_sweep(&single_writer());
}

fn crash_sweep(images: &Images) {
    let script = sweep_script();
    let losses = [Loss::DropUnsynced, Loss::KeepSome(7), Loss::TearLast(11)];
    let (mut k, mut recovery_syncs, mut acknowledged_max) = (1, 0, 0);
    loop {
        let loss = losses[(k % 3) as usize];
        let fault = Fault::Crash(Trigger::Op(k), loss);
        let (disk, expectation, observed) = run_with_fault_on(images, fault, &script)
            .unwrap_or_else(|violation| panic!("{fault:?}: {violation}"));
        if !observed.struck {
            break;
        }
        acknowledged_max = acknowledged_max.max(observed.acknowledged);
        let after = images.after(&disk, false);
        check_recovered_on(&after, &expectation)
            .unwrap_or_else(|violation| panic!("{fault:?}: {violation}"));
        let syncs = crash_during_recovery_on(&after, &expectation, loss, RECOVERY_SYNCS_MAX)
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
        acknowledged_max > 0,
        "no crash came after an acknowledged commit"
    );
    assert!(recovery_syncs > 0, "no recovery ever synced");
    eprintln!(
        "journaled crash sweep ({:?}): {k} crash points, {recovery_syncs} recovery syncs crashed at",
        images.sharing
    );
}

fn scenario_case(images: &Images, seed: u64) -> Observed {
    let mut rng = Rng::new(seed ^ 0x0035);
    let script = Script::random(seed, 2 + rng.below(6));
    let (_, _, dry) = run_with_fault_on(images, Fault::None, &script)
        .unwrap_or_else(|violation| panic!("journaled seed {seed}, no fault: {violation}"));
    let (ops_before, syncs_before) = dry.first_acknowledged_at.unwrap_or((0, 0));
    let trigger = if rng.chance(30) && dry.syncs > syncs_before {
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
    scenario_on(images, fault, &script, power_loss).unwrap_or_else(|violation| {
        panic!(
            "journaled seed {seed} ({:?}, {fault:?}, power loss {power_loss}): {violation}",
            images.sharing
        )
    })
}

#[test]
fn through_the_journal_seeded_faults_lose_nothing_acknowledged() {
    seeded_faults(&exclusive(), "ANNALS_JOURNAL_FAULT_SEED");
}

#[test]
fn in_single_writer_mode_seeded_faults_lose_nothing_acknowledged() {
    seeded_faults(&single_writer(), "ANNALS_SINGLE_WRITER_FAULT_SEED");
}

fn seeded_faults(images: &Images, replay: &str) {
    if let Some(seed) = annals::testing::random::seed_to_replay(replay) {
        // The seed's checks run inside; what it observed only counts in the sweep below.
        let _ = scenario_case(images, seed);
    }
    let (mut seed, mut counted) = (0, 0);
    while counted < SCENARIOS_COUNTED {
        let observed = scenario_case(images, seed);
        if observed.struck && observed.acknowledged_before_fault > 0 {
            counted += 1;
        }
        seed += 1;
        assert!(
            seed < 3 * SCENARIOS_COUNTED,
            "only {counted} of {seed} struck after a commit"
        );
    }
}

/// Seeds of the model comparison through the journal.
const MODEL_SEEDS: u64 = 500;

#[test]
fn through_the_journal_store_outcomes_agree_with_the_model_and_power_loss_recovers_them() {
    for seed in 0..MODEL_SEEDS {
        let script = Script::random(seed, 1 + seed % 40);
        if let Err(violation) = check_against_model_journaled(&script) {
            panic!("journaled model seed {seed}: {violation}");
        }
    }
}
