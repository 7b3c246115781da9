//! A simulated disk for fault tests: a redb [`StorageBackend`] over memory that keeps what a
//! real disk keeps — a durable image (what survives power loss) and the writes issued since
//! the last sync — and, driven by a [`Fault`], fails an operation with an I/O error, or
//! "crashes": from that moment every operation fails, and the image that survives is the
//! durable one plus some of the unsynced writes (none, a seeded subset, or all with the
//! last one torn).
//!
//! The disk holds two files on one timeline of operations: the log ([`SimDisk::backend`]) and
//! its commit journal ([`SimDisk::journal`]); a fault strikes whichever file the counted
//! operation is on, and a crash takes both down at once.
//!
//! Deterministic: the same image, fault and operations give the same result. Never touches
//! a file; never panics on any sequence of calls redb makes.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use redb::StorageBackend;

use crate::demo::Rng;

/// The most a simulated disk holds: a damaged file that makes redb ask for more (its
/// header read as a huge length, say) gets a full-disk error on the resize or the write,
/// not an allocation.
pub const DISK_BYTES_MAX: u64 = 256 << 20;

/// When a fault strikes: the k-th counted operation (every `write`, `set_len` and
/// `sync_data`, from 1), or the k-th `sync_data` alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The k-th write, set_len or sync.
    Op(u64),
    /// The k-th sync.
    Sync(u64),
}

/// Which unsynced writes survive a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// None of them: the durable image alone.
    DropUnsynced,
    /// Each one with even odds, chosen by the seed (a disk may reorder writes between syncs).
    KeepSome(u64),
    /// All of them, but the last write only in part: a seeded prefix of its bytes.
    TearLast(u64),
}

/// A fault to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// No fault.
    None,
    /// The triggering operation fails with an I/O error; the ones after it succeed.
    FailOnce(Trigger),
    /// The triggering operation and every operation after it (reads too) fail.
    FailForever(Trigger),
    /// A crash at the triggering operation, which does not happen: it and every operation
    /// after it fail, and what survives is decided by the [`Loss`].
    Crash(Trigger, Loss),
    /// The disk fills up at the triggering operation: from it on, every write and resize
    /// fails with "no space left on device" (`ErrorKind::StorageFull`, ENOSPC) until
    /// [`SimDisk::free_space`]; syncs and reads go on working.
    NoSpace(Trigger),
}

#[derive(Debug)]
enum Pending {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

/// One file of the disk.
#[derive(Debug, Default)]
struct File {
    /// What the program reads: every write so far.
    current: Vec<u8>,
    /// What survives power loss: every write up to the last sync.
    durable: Vec<u8>,
    /// The writes and resizes since the file's last sync, in order, each with its place in
    /// the disk's order of operations.
    pending: Vec<(u64, Pending)>,
}

/// The log's file and its journal's.
const FILES: usize = 2;
const LOG: usize = 0;
const JOURNAL: usize = 1;

#[derive(Debug)]
struct Disk {
    files: [File; FILES],
    fault: Fault,
    ops: u64,
    syncs: u64,
    /// Whether the fault has struck.
    struck: bool,
    /// Whether the disk is full ([`Fault::NoSpace`] struck and no space was freed since).
    full: bool,
    /// The images that survived the crash, once there was one.
    crashed: Option<[Vec<u8>; FILES]>,
}

/// A simulated disk; clones share it. [`SimDisk::backend`] hands redb a view of it.
#[derive(Clone, Debug)]
pub struct SimDisk {
    disk: Arc<Mutex<Disk>>,
}

/// The [`StorageBackend`] redb is given over a [`SimDisk`] (or a journal is).
#[derive(Debug)]
pub struct SimBackend {
    disk: Arc<Mutex<Disk>>,
    file: usize,
}

impl SimDisk {
    /// A disk holding the log's `image` (durably) and no journal, that will suffer `fault`.
    pub fn new(image: Vec<u8>, fault: Fault) -> SimDisk {
        SimDisk::with_journal(image, Vec::new(), fault)
    }

    /// A disk holding the log's `image` and its `journal` (both durably), that will suffer
    /// `fault`.
    pub fn with_journal(image: Vec<u8>, journal: Vec<u8>, fault: Fault) -> SimDisk {
        let file = |bytes: Vec<u8>| File {
            durable: bytes.clone(),
            current: bytes,
            pending: Vec::new(),
        };
        let disk = Disk {
            files: [file(image), file(journal)],
            fault,
            ops: 0,
            syncs: 0,
            struck: false,
            full: false,
            crashed: None,
        };
        SimDisk {
            disk: Arc::new(Mutex::new(disk)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Disk> {
        lock(&self.disk)
    }

    /// A backend over this disk's log file, for `Store::open_with_backend`.
    pub fn backend(&self) -> SimBackend {
        SimBackend {
            disk: Arc::clone(&self.disk),
            file: LOG,
        }
    }

    /// A backend over this disk's journal file, for `Store::open_with_backends`.
    pub fn journal(&self) -> SimBackend {
        SimBackend {
            disk: Arc::clone(&self.disk),
            file: JOURNAL,
        }
    }

    /// Whether the fault has struck.
    pub fn struck(&self) -> bool {
        self.lock().struck
    }

    /// Frees space on a disk that [`Fault::NoSpace`] filled: writes succeed again, and the
    /// fault strikes no more.
    pub fn free_space(&self) {
        let mut disk = self.lock();
        disk.full = false;
        disk.fault = Fault::None;
    }

    /// Counted operations so far (writes, resizes and syncs).
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// Syncs so far.
    pub fn syncs(&self) -> u64 {
        self.lock().syncs
    }

    /// The log's image a restart finds: after a crash, what survived it; otherwise everything
    /// written (the program stopped, the machine did not).
    pub fn image_after_restart(&self) -> Vec<u8> {
        self.after_restart(LOG)
    }

    /// The log's image power loss would leave now: the durable image alone.
    pub fn image_after_power_loss(&self) -> Vec<u8> {
        self.after_power_loss(LOG)
    }

    /// [`SimDisk::image_after_restart`] of the journal.
    pub fn journal_after_restart(&self) -> Vec<u8> {
        self.after_restart(JOURNAL)
    }

    /// [`SimDisk::image_after_power_loss`] of the journal.
    pub fn journal_after_power_loss(&self) -> Vec<u8> {
        self.after_power_loss(JOURNAL)
    }

    fn after_restart(&self, file: usize) -> Vec<u8> {
        let disk = self.lock();
        match &disk.crashed {
            Some(images) => images[file].clone(),
            None => disk.files[file].current.clone(),
        }
    }

    fn after_power_loss(&self, file: usize) -> Vec<u8> {
        let disk = self.lock();
        match &disk.crashed {
            Some(images) => images[file].clone(),
            None => disk.files[file].durable.clone(),
        }
    }
}

fn lock(disk: &Mutex<Disk>) -> MutexGuard<'_, Disk> {
    // A panic while the lock was held left the disk's bytes whole (every change is one
    // statement), so a poisoned lock is read through.
    disk.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("simulated fault: {what}"))
}

fn apply(image: &mut Vec<u8>, pending: &Pending) {
    match pending {
        Pending::SetLen(len) => image.resize(*len as usize, 0),
        Pending::Write { offset, data } => write_at(image, *offset, data),
    }
}

fn write_at(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let start = offset as usize;
    let end = start + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(data);
}

impl Disk {
    /// Applies a write or resize to `file` as the program sees it, pending until its sync.
    fn issue(&mut self, file: usize, pending: Pending) {
        let order = self.ops;
        let file = &mut self.files[file];
        apply(&mut file.current, &pending);
        file.pending.push((order, pending));
    }

    /// Counts an operation and applies the fault if it strikes now: `Err` when the operation
    /// must fail.
    fn step(&mut self, is_sync: bool) -> io::Result<()> {
        if self.crashed.is_some() {
            return Err(injected("the machine is down"));
        }
        self.ops += 1;
        if is_sync {
            self.syncs += 1;
        }
        let due = |trigger: Trigger| match trigger {
            Trigger::Op(k) => self.ops == k,
            Trigger::Sync(k) => is_sync && self.syncs == k,
        };
        match self.fault {
            Fault::None => Ok(()),
            Fault::FailOnce(trigger) if due(trigger) => {
                self.struck = true;
                Err(injected("one operation fails"))
            }
            Fault::FailOnce(_) => Ok(()),
            Fault::FailForever(trigger) if self.struck || due(trigger) => {
                self.struck = true;
                Err(injected("every operation fails from here on"))
            }
            Fault::FailForever(_) => Ok(()),
            Fault::Crash(trigger, loss) if due(trigger) => {
                self.struck = true;
                self.crashed = Some(self.surviving(loss));
                Err(injected("crash"))
            }
            Fault::Crash(..) => Ok(()),
            Fault::NoSpace(trigger) if self.full || due(trigger) => {
                self.full = true;
                // A sync needs no space: the fault strikes only at the writes it fails.
                if is_sync {
                    return Ok(());
                }
                self.struck = true;
                Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "simulated disk: no space left on device",
                ))
            }
            Fault::NoSpace(_) => Ok(()),
        }
    }

    /// What survives a crash of both files: the unsynced writes chosen by `loss`, the last
    /// write of the disk (whichever file it was to) the one a tear cuts.
    fn surviving(&self, loss: Loss) -> [Vec<u8>; FILES] {
        let last_write = self
            .files
            .iter()
            .flat_map(|file| file.pending.iter())
            .filter(|(_, p)| matches!(p, Pending::Write { .. }))
            .map(|(order, _)| *order)
            .max();
        let mut rng = Rng::new(match loss {
            Loss::DropUnsynced => 0,
            Loss::KeepSome(seed) | Loss::TearLast(seed) => seed,
        });
        let mut images = [Vec::new(), Vec::new()];
        for (file, image) in self.files.iter().zip(images.iter_mut()) {
            *image = file.surviving(loss, last_write, &mut rng);
        }
        images
    }

    fn fail_reads(&self) -> bool {
        self.crashed.is_some() || matches!(self.fault, Fault::FailForever(_)) && self.struck
    }
}

impl File {
    fn surviving(&self, loss: Loss, last_write: Option<u64>, rng: &mut Rng) -> Vec<u8> {
        let mut image = self.durable.clone();
        for (order, pending) in &self.pending {
            match (pending, loss) {
                // A resize is file metadata; the simulation lets it survive.
                (Pending::SetLen(_), _) => apply(&mut image, pending),
                (Pending::Write { .. }, Loss::DropUnsynced) => {}
                (Pending::Write { .. }, Loss::KeepSome(_)) => {
                    if rng.chance(50) {
                        apply(&mut image, pending);
                    }
                }
                (Pending::Write { offset, data }, Loss::TearLast(_)) => {
                    if Some(*order) == last_write {
                        let kept = rng.below(data.len() as u64 + 1) as usize;
                        write_at(&mut image, *offset, &data[..kept]);
                    } else {
                        apply(&mut image, pending);
                    }
                }
            }
        }
        image
    }
}

impl StorageBackend for SimBackend {
    fn len(&self) -> io::Result<u64> {
        let disk = lock(&self.disk);
        if disk.fail_reads() {
            return Err(injected("the disk is gone"));
        }
        Ok(disk.files[self.file].current.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let disk = lock(&self.disk);
        if disk.fail_reads() {
            return Err(injected("the disk is gone"));
        }
        let source = usize::try_from(offset)
            .ok()
            .and_then(|start| {
                let current = &disk.files[self.file].current;
                current.get(start..start.checked_add(out.len())?)
            })
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "read out of range"))?;
        out.copy_from_slice(source);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut disk = lock(&self.disk);
        disk.step(false)?;
        if len > DISK_BYTES_MAX {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!("simulated disk: {len} bytes asked, {DISK_BYTES_MAX} the most it holds"),
            ));
        }
        disk.issue(self.file, Pending::SetLen(len));
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut disk = lock(&self.disk);
        disk.step(true)?;
        let file = &mut disk.files[self.file];
        for (_, pending) in std::mem::take(&mut file.pending) {
            apply(&mut file.durable, &pending);
        }
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut disk = lock(&self.disk);
        disk.step(false)?;
        if offset.saturating_add(data.len() as u64) > DISK_BYTES_MAX {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!("simulated disk: a write at {offset} past its {DISK_BYTES_MAX} bytes"),
            ));
        }
        disk.issue(
            self.file,
            Pending::Write {
                offset,
                data: data.to_vec(),
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(fault: Fault) -> SimDisk {
        let disk = SimDisk::new(vec![0; 8], fault);
        let backend = disk.backend();
        let _ = backend.write(0, &[1, 1]);
        let _ = backend.sync_data();
        let _ = backend.write(2, &[2, 2, 2, 2]);
        let _ = backend.write(6, &[3, 3]);
        disk
    }

    #[test]
    fn power_loss_keeps_only_what_was_synced() {
        let disk = written(Fault::None);
        assert_eq!(disk.image_after_restart(), [1, 1, 2, 2, 2, 2, 3, 3]);
        assert_eq!(disk.image_after_power_loss(), [1, 1, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn a_crash_fails_the_operation_and_every_later_one() {
        let disk = written(Fault::Crash(Trigger::Op(4), Loss::DropUnsynced));
        assert!(disk.struck());
        let backend = disk.backend();
        assert!(backend.write(0, &[9]).is_err());
        assert!(backend.sync_data().is_err());
        let mut out = [0; 1];
        assert!(backend.read(0, &mut out).is_err());
        assert_eq!(disk.image_after_restart(), [1, 1, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn a_torn_crash_keeps_the_earlier_writes_and_a_prefix_of_the_last() {
        let disk = SimDisk::new(
            vec![0; 8],
            Fault::Crash(Trigger::Sync(1), Loss::TearLast(3)),
        );
        let backend = disk.backend();
        backend.write(0, &[1, 1]).unwrap();
        backend.write(2, &[2, 2, 2, 2]).unwrap();
        assert!(backend.sync_data().is_err());
        let image = disk.image_after_restart();
        assert_eq!(image[..2], [1, 1]);
        let kept = image[2..6].iter().take_while(|b| **b == 2).count();
        assert!(image[2 + kept..].iter().all(|b| *b == 0), "{image:?}");
    }

    #[test]
    fn a_full_disk_fails_writes_until_space_is_freed_and_keeps_syncing() {
        let disk = SimDisk::new(vec![0; 4], Fault::NoSpace(Trigger::Op(2)));
        let backend = disk.backend();
        assert!(backend.write(0, &[1]).is_ok());
        let full = backend.write(1, &[1]).unwrap_err();
        assert_eq!(full.kind(), io::ErrorKind::StorageFull);
        assert!(backend.set_len(8).is_err());
        assert!(backend.sync_data().is_ok());
        let mut out = [0; 1];
        assert!(backend.read(0, &mut out).is_ok());
        disk.free_space();
        assert!(backend.write(2, &[1]).is_ok());
        assert_eq!(disk.image_after_restart(), [1, 0, 1, 0]);
    }

    #[test]
    fn a_crash_takes_both_files_down_and_tears_the_disks_last_write() {
        let disk = SimDisk::with_journal(
            vec![0; 4],
            Vec::new(),
            Fault::Crash(Trigger::Op(5), Loss::TearLast(7)),
        );
        let (log, journal) = (disk.backend(), disk.journal());
        log.write(0, &[1, 1]).unwrap();
        journal.write(0, &[5; 4]).unwrap();
        journal.sync_data().unwrap();
        journal.write(4, &[6; 4]).unwrap();
        assert!(log.sync_data().is_err());
        assert!(journal.write(8, &[7]).is_err());
        assert_eq!(disk.image_after_restart(), [1, 1, 0, 0]);
        let survived = disk.journal_after_restart();
        assert_eq!(survived[..4], [5; 4]);
        assert!(
            survived.len() <= 8 && survived[4..].iter().all(|b| *b == 6),
            "{survived:?}"
        );
    }

    #[test]
    fn a_failed_once_operation_fails_alone() {
        let disk = SimDisk::new(vec![0; 4], Fault::FailOnce(Trigger::Op(2)));
        let backend = disk.backend();
        assert!(backend.write(0, &[1]).is_ok());
        assert!(backend.write(1, &[1]).is_err());
        assert!(backend.write(2, &[1]).is_ok());
        assert_eq!(disk.image_after_restart(), [1, 0, 1, 0]);
    }
}
