//! Fault scenarios on the simulated disk: run a script of commands while a [`Fault`]
//! strikes, restart, and check what must hold after any fault:
//!
//! - every transaction acknowledged as durable is present (its head is in the log with its
//!   hash);
//! - nothing unacknowledged is half there: the log ends exactly at the last acknowledged
//!   head or at the head one of the failed transactions since would have made;
//! - the chain verifies and every projection equals a replay of the log (`verify`);
//! - no panic escapes the store, and an injected error reaches the caller.
//!
//! A violation is returned as `Err(description)`; the callers (tests, fuzz targets) add the
//! seed and fail.
//!
//! Each scenario runs on the store's file alone ([`Images::file`]) or through the commit
//! journal ([`Images::journaled`]: the disk's second file, drained every
//! [`JOURNAL_DRAIN_BYTES`] so that drains are as deterministic as the rest).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use crate::journal::JournalOptions;
use crate::log::Head;
use crate::store::{Sharing, Store, StoreOptions};
use crate::testing::model::{Script, run_on_store};
use crate::testing::sim::{Fault, Loss, SimDisk, Trigger};

/// What a scenario observed, for the sweeps to know when to stop.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// Whether the fault struck at all.
    pub struck: bool,
    /// Transactions acknowledged as durable.
    pub acknowledged: usize,
    /// Syncs the run made, up to the fault.
    pub syncs: u64,
    /// Transactions acknowledged as durable before the fault struck: a scenario in which the
    /// fault struck with none is a test of a failed start, not of a fault after commits.
    pub acknowledged_before_fault: usize,
    /// Counted operations (writes, resizes and syncs) the run made in all.
    pub ops: u64,
    /// Counted operations and syncs made when the first transaction was acknowledged, if
    /// one was: a fault triggered after them strikes after an acknowledged commit.
    pub first_acknowledged_at: Option<(u64, u64)>,
}

/// What the log may look like after a restart.
#[derive(Clone, Debug)]
pub struct Expectation {
    /// Heads of acknowledged durable commits, oldest first (the base image's first).
    pub acknowledged: Vec<Head>,
    /// Heads the transactions that failed after the last acknowledgement would have made.
    pub candidates: Vec<Head>,
}

fn options() -> StoreOptions {
    StoreOptions {
        create: true,
        ..StoreOptions::default()
    }
}

/// How many bytes of frames a journaled scenario's journal holds before it is drained.
pub const JOURNAL_DRAIN_BYTES: u64 = 1_024;

/// What a simulated disk holds before a scenario: the log's image, and whether the store
/// commits through a journal (the disk's second file) and what that holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Images {
    /// The log's file.
    pub log: Vec<u8>,
    /// The journal's file (empty: none yet).
    pub journal: Vec<u8>,
    /// Whether commits go through the journal.
    pub journaled: bool,
    /// The mode the store opens the disk in: exclusive, or single-writer (its drains
    /// two-phase, as beside reader processes). Journaled images only.
    pub sharing: Sharing,
}

impl Images {
    /// The log's `image`, committed to directly.
    pub fn file(image: &[u8]) -> Images {
        Images {
            log: image.to_vec(),
            journal: Vec::new(),
            journaled: false,
            sharing: Sharing::Exclusive,
        }
    }

    /// The log's `image` with an empty journal that commits go through.
    pub fn journaled(image: &[u8]) -> Images {
        Images {
            journaled: true,
            ..Images::file(image)
        }
    }

    /// The log's `image` with an empty journal that commits go through, opened in
    /// single-writer mode: the mode hosts run, its drains two-phase.
    pub fn journaled_single_writer(image: &[u8]) -> Images {
        Images {
            sharing: Sharing::SingleWriter,
            ..Images::journaled(image)
        }
    }

    /// A disk holding these images, to suffer `fault`.
    pub fn disk(&self, fault: Fault) -> SimDisk {
        SimDisk::with_journal(self.log.clone(), self.journal.clone(), fault)
    }

    /// What `disk` holds after a restart (after power loss when `power_loss`), committed to
    /// the same way.
    pub fn after(&self, disk: &SimDisk, power_loss: bool) -> Images {
        let (log, journal) = if power_loss {
            (
                disk.image_after_power_loss(),
                disk.journal_after_power_loss(),
            )
        } else {
            (disk.image_after_restart(), disk.journal_after_restart())
        };
        Images {
            log,
            journal,
            journaled: self.journaled,
            sharing: self.sharing,
        }
    }

    /// Opens the store on `disk` as these images are committed to.
    pub fn open(&self, disk: &SimDisk) -> crate::error::Result<Store> {
        if self.journaled {
            let options = StoreOptions {
                journal: Some(JournalOptions {
                    checkpoint_ms: u64::MAX,
                    checkpoint_bytes: JOURNAL_DRAIN_BYTES,
                }),
                sharing: self.sharing,
                ..options()
            };
            Store::open_with_backends(disk.backend(), disk.journal(), options)
        } else {
            Store::open_with_backend(disk.backend(), options())
        }
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// The image of a fresh annals log with a few records, made once per process.
pub fn base_image() -> &'static [u8] {
    static BASE: OnceLock<Vec<u8>> = OnceLock::new();
    BASE.get_or_init(|| {
        let disk = SimDisk::new(Vec::new(), Fault::None);
        {
            let Ok(store) = Store::open_with_backend(disk.backend(), options()) else {
                return Vec::new();
            };
            let script = Script::random(u64::MAX, 3);
            let mut now_ms = 1_000;
            for transaction in &script.transactions {
                let _ = store.write(|session| {
                    for op in transaction {
                        run_on_store(op, session, &mut now_ms);
                    }
                    Ok(())
                });
            }
        }
        disk.image_after_restart()
    })
}

/// Head of the log in `images`, opened cleanly.
fn head_of(images: &Images) -> Result<Head, String> {
    let disk = images.disk(Fault::None);
    let store = images
        .open(&disk)
        .map_err(|error| format!("the base image does not open: {error}"))?;
    store.head().map_err(|error| error.to_string())
}

/// Runs `script` on a disk holding `image` while `fault` strikes. Returns the disk (to take
/// its image from), what the run may have left, and what it observed; `Err` for a panic or
/// an injected error that never reached the caller.
pub fn run_with_fault(
    image: &[u8],
    fault: Fault,
    script: &Script,
) -> Result<(SimDisk, Expectation, Observed), String> {
    run_with_fault_on(&Images::file(image), fault, script)
}

/// [`run_with_fault`] on a disk holding `images`.
pub fn run_with_fault_on(
    images: &Images,
    fault: Fault,
    script: &Script,
) -> Result<(SimDisk, Expectation, Observed), String> {
    let base = head_of(images)?;
    let disk = images.disk(fault);
    let mut expectation = Expectation {
        acknowledged: vec![base],
        candidates: Vec::new(),
    };
    let mut errors = 0;
    let mut acknowledged_before_fault = 0;
    let mut first_acknowledged_at = None;
    let run = catch_unwind(AssertUnwindSafe(|| {
        let store = match images.open(&disk) {
            Ok(store) => store,
            Err(_) => {
                errors += 1;
                return;
            }
        };
        let mut now_ms = 10_000;
        for transaction in &script.transactions {
            let mut prospective = None;
            let result = store.write(|session| {
                for op in transaction {
                    run_on_store(op, session, &mut now_ms);
                }
                prospective = Some(session.head());
                Ok(())
            });
            match (result, prospective) {
                (Ok(()), Some(head)) => {
                    if expectation.acknowledged.last() != Some(&head) {
                        expectation.acknowledged.push(head);
                    }
                    expectation.candidates.clear();
                }
                (Ok(()), None) => {}
                (Err(_), prospective) => {
                    errors += 1;
                    expectation.candidates.extend(prospective);
                }
            }
            let acknowledged = expectation.acknowledged.len() - 1;
            if !disk.struck() {
                acknowledged_before_fault = acknowledged;
            }
            if acknowledged > 0 && first_acknowledged_at.is_none() {
                first_acknowledged_at = Some((disk.ops(), disk.syncs()));
            }
        }
        let before_drop = disk.ops();
        drop(store);
        // A fault that strikes only while redb closes the file reaches no caller.
        if disk.struck() && errors == 0 && disk.ops() > before_drop {
            errors += 1;
        }
    }));
    if let Err(payload) = run {
        return Err(format!("a panic escaped: {}", panic_text(payload.as_ref())));
    }
    let observed = Observed {
        struck: disk.struck(),
        acknowledged: expectation.acknowledged.len() - 1,
        syncs: disk.syncs(),
        acknowledged_before_fault,
        ops: disk.ops(),
        first_acknowledged_at,
    };
    if observed.struck && errors == 0 {
        return Err("an injected fault struck, but no call returned an error".into());
    }
    Ok((disk, expectation, observed))
}

/// Opens `image` after a restart and checks every invariant against `expectation`.
pub fn check_recovered(image: &[u8], expectation: &Expectation) -> Result<Head, String> {
    check_recovered_on(&Images::file(image), expectation)
}

/// [`check_recovered`] of a disk holding `images`.
pub fn check_recovered_on(images: &Images, expectation: &Expectation) -> Result<Head, String> {
    let opened = catch_unwind(AssertUnwindSafe(|| {
        let disk = images.disk(Fault::None);
        let store = images
            .open(&disk)
            .map_err(|error| format!("the log does not reopen: {error}"))?;
        let report = store.verify().map_err(|error| error.to_string())?;
        if let Some(finding) = report.problem {
            return Err(format!("verify fails after recovery: {finding}"));
        }
        let head = report.head;
        for acknowledged in &expectation.acknowledged {
            let Some(last) = acknowledged.next.0.checked_sub(1) else {
                continue;
            };
            let found = store
                .get(crate::record::Position(last))
                .map_err(|error| error.to_string())?
                .map(|record| record.hash);
            if found != Some(acknowledged.hash) {
                return Err(format!(
                    "acknowledged head {} / {} is lost (found {found:?})",
                    acknowledged.next, acknowledged.hash
                ));
            }
        }
        let last = expectation.acknowledged.last().copied().unwrap_or_default();
        if head != last && !expectation.candidates.contains(&head) {
            return Err(format!(
                "the log ends at {} / {}: neither the last acknowledged head {} nor a \
                 whole failed transaction",
                head.next, head.hash, last.next
            ));
        }
        Ok(head)
    }));
    opened.unwrap_or_else(|payload| {
        Err(format!(
            "a panic escaped recovery: {}",
            panic_text(payload.as_ref())
        ))
    })
}

/// The crash-during-recovery sweep: restarts `image` crashing at its first, second, …
/// sync (with `loss`), and after each crash restarts again and checks `expectation`, until
/// a recovery completes without reaching that sync (at most `syncs_max` crashes).
pub fn crash_during_recovery(
    image: &[u8],
    expectation: &Expectation,
    loss: Loss,
    syncs_max: u64,
) -> Result<u64, String> {
    crash_during_recovery_on(&Images::file(image), expectation, loss, syncs_max)
}

/// [`crash_during_recovery`] of a disk holding `images`.
pub fn crash_during_recovery_on(
    images: &Images,
    expectation: &Expectation,
    loss: Loss,
    syncs_max: u64,
) -> Result<u64, String> {
    for sync in 1..=syncs_max {
        let disk = images.disk(Fault::Crash(Trigger::Sync(sync), loss));
        let recovery = catch_unwind(AssertUnwindSafe(|| {
            if let Ok(store) = images.open(&disk) {
                let _ = store.verify();
            }
        }));
        if let Err(payload) = recovery {
            return Err(format!(
                "a panic escaped a recovery that crashed at sync {sync}: {}",
                panic_text(payload.as_ref())
            ));
        }
        if !disk.struck() {
            return Ok(sync - 1);
        }
        check_recovered_on(&images.after(&disk, false), expectation)
            .map_err(|error| format!("after a crash at sync {sync} of recovery: {error}"))?;
    }
    Ok(syncs_max)
}

/// One whole scenario: the script under the fault, a restart (after power loss when
/// `power_loss`), the checks, and, when the fault was a crash, crashes during recovery.
pub fn scenario(
    image: &[u8],
    fault: Fault,
    script: &Script,
    power_loss: bool,
) -> Result<Observed, String> {
    scenario_on(&Images::file(image), fault, script, power_loss)
}

/// [`scenario`] on a disk holding `images`.
pub fn scenario_on(
    images: &Images,
    fault: Fault,
    script: &Script,
    power_loss: bool,
) -> Result<Observed, String> {
    let (disk, expectation, observed) = run_with_fault_on(images, fault, script)?;
    let after = images.after(&disk, power_loss);
    check_recovered_on(&after, &expectation)?;
    if let Fault::Crash(_, loss) = fault {
        crash_during_recovery_on(&after, &expectation, loss, 4)?;
    }
    Ok(observed)
}
