//! Simulated storage faults (`annals::testing::sim`): for seeded scripts, a write or sync
//! fails once or forever, or the machine crashes losing unsynced writes (all, some, or
//! tearing the last); after a restart every acknowledged commit is there, nothing half
//! done is, the chain verifies and the projections equal a replay. Also the SQLite-style
//! I/O-error sweep and crashes during recovery. A failure prints its seed;
//! `ANNALS_FAULT_SEED=<n>` replays one.

use annals::demo::Rng;
use annals::testing::faults::{base_image, scenario};
use annals::testing::harness::{check_against_model, pick_fault};
use annals::testing::model::Script;

/// Seeds of the fault simulation run in CI.
const FAULT_SEEDS: u64 = 500;
/// Seeds of the model comparison run in CI.
const MODEL_SEEDS: u64 = 300;

fn only_seed(variable: &str) -> Option<u64> {
    std::env::var(variable).ok().and_then(|s| s.parse().ok())
}

fn fault_case(seed: u64) {
    let mut rng = Rng::new(seed);
    let script = Script::random(seed, 2 + rng.below(6));
    let kind = rng.below(5) as u8;
    let range = if rng.chance(30) { 8 } else { 120 };
    let fault = pick_fault(kind, rng.below(range), rng.chance(30), rng.next_u64());
    let power_loss = rng.chance(50);
    if let Err(violation) = scenario(base_image(), fault, &script, power_loss) {
        panic!("fault seed {seed} ({fault:?}, power loss {power_loss}): {violation}");
    }
}

#[test]
fn acknowledged_commits_survive_every_simulated_fault_and_nothing_half_done_appears() {
    if let Some(seed) = only_seed("ANNALS_FAULT_SEED") {
        return fault_case(seed);
    }
    for seed in 0..FAULT_SEEDS {
        fault_case(seed);
    }
}

#[test]
fn store_outcomes_agree_with_the_reference_model() {
    let case = |seed: u64| {
        let script = Script::random(seed, 1 + seed % 12);
        if let Err(violation) = check_against_model(&script) {
            panic!("model seed {seed}: {violation}");
        }
    };
    if let Some(seed) = only_seed("ANNALS_MODEL_SEED") {
        return case(seed);
    }
    for seed in 0..MODEL_SEEDS {
        case(seed);
    }
}
