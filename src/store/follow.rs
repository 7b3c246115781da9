//! A read-only store beside a journaling writer in another process (`docs/design.md`,
//! "Readers in other processes"): each read pairs redb's latest commit with the frames the
//! writer synced past it, applied into an overlay of this store's own by the code recovery
//! uses, so that the reader sees exactly the acknowledged commits while the log file lags.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use redb::ReadableDatabase;

use super::{Store, WriteSession};
use crate::error::{JournalError, Result};
use crate::journal::frame::Frame;
use crate::journal::tail::Tail;
use crate::log::Head;
use crate::log::append::LogEnd;
use crate::log::read::Snapshot;
use crate::projection::Projections;
use crate::record::limits::Limits;
use crate::storage::{Commit, Generation, Reader, Writer};

/// How many times a read tries again while the writer drains and empties the journal under
/// it: a try fails only when a drain came between its first read of the file and its last,
/// which a writer does about once a second (every 1 MiB of frames), or, with a journal bound
/// of a few KB, every few commits: a thousand tries in a row is a writer draining faster
/// than a reader can read, which the error says.
const READ_ATTEMPTS: u32 = 1_000;

/// What a reader has made of the journal so far.
#[derive(Default)]
pub(crate) struct Follower {
    /// The journal, when there is one.
    tail: Option<Tail>,
    /// Where the frames applied so far lie: over which redb commit, in which of the journal's
    /// epochs, up to which offset; `None` before the first read, or when it must start over.
    applied: Option<Applied>,
}

impl Follower {
    /// Records that this process appended a frame ending at `offset`, its records taking
    /// the log to `head`, and published `generation` with it: the frames applied so far, as
    /// long as they were read over the same commit in the same epoch (`epoch`).
    pub(crate) fn advance(
        &mut self,
        epoch: u32,
        offset: u64,
        head: Head,
        end: Option<LogEnd>,
        generation: &Generation,
    ) {
        match &mut self.applied {
            Some(applied) if applied.epoch == epoch => {
                debug_assert!(offset > applied.offset, "a frame appended before the last");
                debug_assert!(head.next > applied.head.next, "a frame with no record");
                applied.offset = offset;
                applied.head = head;
                applied.end = end;
                applied.generation = generation.clone();
                // The command's session left every checkpoint following the head.
                applied.following = true;
            }
            // Read again from the start on the next read.
            _ => self.applied = None,
        }
    }

    /// The log's end through the frames applied so far, when known: what the next write over
    /// them starts from, sparing it a walk back through the log's last segments.
    pub(crate) fn end(&self) -> Option<LogEnd> {
        self.applied.as_ref().and_then(|applied| applied.end)
    }
}

struct Applied {
    /// The head of the redb commit the generation lies over.
    base: Head,
    epoch: u32,
    /// Where the next frame begins.
    offset: u64,
    /// The log's head through the generation.
    head: Head,
    /// The log's end through the generation, when known.
    end: Option<LogEnd>,
    generation: Generation,
    /// Whether every projection's checkpoint follows the head through the generation, so
    /// that a session over it need not read them: true once a session that appended has
    /// finished over it (its finish advanced them, or knew they followed); not known of a
    /// new base commit, which another writer's drain may have written.
    following: bool,
}

impl Applied {
    /// The frames applied so far (`kept`) when they lie over the commit headed `base` in the
    /// journal's epoch `epoch`; else none yet, from the start of `tail`'s frames.
    fn over(kept: Option<Applied>, base: Head, epoch: u32, tail: &Tail) -> Applied {
        match kept {
            Some(applied) if applied.base == base && applied.epoch == epoch => applied,
            _ => Applied {
                base,
                epoch,
                offset: tail.frames_start(),
                head: base,
                end: None,
                generation: Generation::default(),
                following: false,
            },
        }
    }
}

/// What one try of a read came to.
enum Attempt {
    /// A consistent read.
    Read(Reader),
    /// The journal or the file moved under the try: try again.
    Again,
}

/// Where a try found frames that do not continue the log: the head of the commit read, the
/// journal's epoch, the frame's offset.
type Divergence = (Head, u32, u64);

/// Whether `frame`, the first not applied yet, continues `applied`'s head (its first position
/// and the hash its first record links to). When it does not, the read tries again from a
/// fresh commit (`false`), a drain having come between the two; the same mismatch at `here`
/// twice in a row is another log's journal, [`JournalError::Diverged`].
fn continues_head(
    applied: &Applied,
    frame: &Frame,
    here: Divergence,
    path: &Path,
    diverged_at: &mut Option<Divergence>,
) -> Result<bool> {
    if frame.first() == applied.head.next && frame.records[0].prev == applied.head.hash {
        return Ok(true);
    }
    if *diverged_at == Some(here) {
        return Err(JournalError::Diverged {
            path: path.to_path_buf(),
            offset: frame.offset,
            first: frame.first(),
            end: frame.end(),
            head: applied.head.next,
            head_hash: applied.head.hash,
        }
        .into());
    }
    *diverged_at = Some(here);
    Ok(false)
}

/// What applying a journal's frames needs of the store: the log's path (the journal's is
/// beside it), the projections the frames' records are applied to, the limits they are checked
/// against.
pub(crate) struct Following<'s> {
    pub(crate) log: &'s Path,
    pub(crate) projections: &'s Projections,
    pub(crate) limits: &'s Limits,
}

impl Store {
    /// One consistent read of a read-only store: redb's latest commit, and over it the
    /// frames of a live journal past its head, as far as the writer synced them.
    pub(crate) fn read_beside_writer(
        &self,
        db: &redb::ReadOnlyDatabase,
        follower: &Mutex<Follower>,
    ) -> Result<Reader> {
        let following = Following {
            log: &self.path,
            projections: &self.projections,
            limits: &self.limits,
        };
        following.read(db, follower)
    }
}

impl Following<'_> {
    /// One consistent read of `db`: its latest commit, and over it the frames of the journal
    /// past its head, as far as their writers synced them.
    pub(crate) fn read(
        &self,
        db: &impl ReadableDatabase,
        follower: &Mutex<Follower>,
    ) -> Result<Reader> {
        self.read_from(&|| Ok(Commit::shared(db.begin_read()?)), false, follower)
    }

    /// [`Following::read`] holding redb's write lock, over `latest`, redb's latest commit:
    /// neither the file nor the journal moves meanwhile, so the first try holds.
    pub(crate) fn read_locked(
        &self,
        latest: &Arc<Commit>,
        follower: &Mutex<Follower>,
    ) -> Result<Reader> {
        self.read_from(&|| Ok(Arc::clone(latest)), true, follower)
    }

    /// One consistent read of the commits `begin` reads and the frames past them; `locked`
    /// when neither moves meanwhile (redb's write lock held), which spares the second looks
    /// that tell a moving journal or file.
    fn read_from(
        &self,
        begin: &dyn Fn() -> Result<Arc<Commit>>,
        locked: bool,
        follower: &Mutex<Follower>,
    ) -> Result<Reader> {
        let mut guard = follower.lock().unwrap_or_else(PoisonError::into_inner);
        let follower: &mut Follower = &mut guard;
        let path = crate::journal::journal_path(self.log);
        let mut diverged_at = None;
        for _ in 0..READ_ATTEMPTS {
            let attempt = self.try_read(begin, locked, follower, &path, &mut diverged_at)?;
            if let Attempt::Read(reader) = attempt {
                return Ok(reader);
            }
        }
        Err(JournalError::Unsettled {
            path,
            attempts: READ_ATTEMPTS,
        }
        .into())
    }

    /// One try of [`Following::read_from`]: redb's commit `begin` reads, and over it the
    /// frames of the journal at `path` past it, unless the journal or the file moved under
    /// the try. `diverged_at` is where the last try found frames that do not continue the log.
    fn try_read(
        &self,
        begin: &dyn Fn() -> Result<Arc<Commit>>,
        locked: bool,
        follower: &mut Follower,
        path: &Path,
        diverged_at: &mut Option<Divergence>,
    ) -> Result<Attempt> {
        let txn = begin()?;
        let base = Snapshot::head_read(&Reader::new(Arc::clone(&txn)))?;
        if !follower.tail.as_ref().is_some_and(Tail::is_current) {
            follower.tail = Tail::open(path)?;
            follower.applied = None;
        }
        let Some(tail) = &follower.tail else {
            return Ok(Attempt::Read(Reader::new(txn)));
        };
        let Some(synced) = tail.synced()? else {
            // The mark was read as it was written, or a new header is being written:
            // read the header again on the next try.
            follower.tail = None;
            std::thread::yield_now();
            return Ok(Attempt::Again);
        };
        let mut applied = Applied::over(follower.applied.take(), base, synced.epoch, tail);
        let read = tail.frames(applied.offset, synced.end)?;
        if !locked && tail.synced()?.map(|again| again.epoch) != Some(synced.epoch) {
            // Emptied while it was read: its frames are in the file now.
            std::thread::yield_now();
            return Ok(Attempt::Again);
        }
        if let Some((offset, problem)) = &read.stopped {
            return Err(tail.damaged(*offset, problem, synced.end).into());
        }
        // The journal read in one epoch may still be one emptied after a drain this read's
        // commit predates (its frames gone from the journal, not in the commit): a newer
        // head in the file says so.
        if !locked && Snapshot::head_read(&Reader::new(begin()?))? != base {
            std::thread::yield_now();
            return Ok(Attempt::Again);
        }
        let offset = read.frames.last().map(|frame| frame.offset + frame.len);
        let unapplied: Vec<Frame> = read
            .frames
            .into_iter()
            .filter(|frame| frame.end() > applied.head.next)
            .collect();
        if let Some(frame) = unapplied.first() {
            let here = (base, synced.epoch, frame.offset);
            if !continues_head(&applied, frame, here, path, diverged_at)? {
                return Ok(Attempt::Again);
            }
        }
        self.apply_unapplied(&txn, &mut applied, &unapplied, offset)?;
        let reader = Reader::over(txn, applied.generation.clone());
        follower.applied = Some(applied);
        Ok(Attempt::Read(reader))
    }

    /// Applies the frames of `unapplied` (each ending past `applied`'s head) over `txn` into
    /// `applied`, and moves `applied` to the offset `offset` where the frames read end.
    fn apply_unapplied(
        &self,
        txn: &Arc<Commit>,
        applied: &mut Applied,
        unapplied: &[Frame],
        offset: Option<u64>,
    ) -> Result<()> {
        if let Some(last) = unapplied.last() {
            let before = applied.head;
            applied.head = self.apply_frames(txn, applied, unapplied)?;
            // Postcondition of `append_sealed`, which takes each record at the next position
            // only: the follower's head only grows, to the end of the last frame applied.
            assert!(
                applied.head.next > before.next && applied.head.next == last.end(),
                "a follower's head grows to its last frame's end: {} to {}, frame ends at {}",
                before.next.0,
                applied.head.next.0,
                last.end().0
            );
        }
        if let Some(offset) = offset {
            // The journal is read forward only: frames past the offset applied so far.
            debug_assert!(
                offset >= applied.offset,
                "a follower's journal offset only grows"
            );
            applied.offset = offset;
        }
        Ok(())
    }

    /// Applies `frames` (continuing the log through `applied`'s generation) over redb's
    /// commit `txn`, into that generation, as recovery appends them, one transaction a frame
    /// as their writers committed them (a drain of the generation then stores the log's
    /// segments as theirs would have): the log's head after them. `applied`'s end, the log's
    /// end through the generation when known, is moved past the frames when they leave it
    /// known.
    fn apply_frames(
        &self,
        txn: &Arc<Commit>,
        applied: &mut Applied,
        frames: &[Frame],
    ) -> Result<Head> {
        let mut head = None;
        for frame in frames {
            let over = Reader::over(Arc::clone(txn), applied.generation.clone());
            let writer = Writer::overlay(over);
            let mut session =
                WriteSession::open(&writer, None, self.projections, self.limits, applied.end)?;
            if applied.following {
                session.checkpoints_follow();
            }
            for run in super::journaled::runs_of_one_stream(&frame.records) {
                session.append_sealed(run)?;
            }
            head = Some(session.head());
            let finished = session.finish()?;
            debug_assert!(finished.appended, "a frame holds records");
            applied.end = finished.end;
            // Its finish advanced every checkpoint to the head, or knew they were there.
            applied.following = true;
            if let Some(scratch) = writer.into_scratch() {
                applied.generation = applied.generation.with(scratch);
            }
        }
        Ok(head.expect("frames to apply"))
    }
}
