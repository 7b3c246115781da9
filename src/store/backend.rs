//! Where a store keeps its bytes when they are not a file of its own: [`Backend`], for
//! [`Store::open_with_backend`](super::Store::open_with_backend) (in memory, or a disk that
//! injects faults). annals' own trait, so that the engine under the log stays out of its
//! interface; every storage engine backend implements it as it is.

use std::fmt::Debug;
use std::io;

/// A store's bytes as one growable array: what a file gives, and no more. A backend is the
/// opening process's own (the store opens it exclusively), so it needs no locks.
///
/// ```
/// use annals::{Store, StoreOptions};
///
/// // redb's in-memory backend is one as it is.
/// let store = Store::open_with_backend(
///     redb::backends::InMemoryBackend::new(),
///     StoreOptions { create: true, ..StoreOptions::default() },
/// )?;
/// assert_eq!(store.snapshot()?.head()?.next.0, 0);
/// # Ok::<(), annals::Error>(())
/// ```
pub trait Backend: 'static + Debug + Send + Sync {
    /// Its length in bytes.
    fn len(&self) -> io::Result<u64>;

    /// Whether it holds no bytes.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Fills `out` with the bytes from `offset`.
    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()>;

    /// Grows or shrinks it to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Makes every write before it durable.
    fn sync_data(&self) -> io::Result<()>;

    /// Writes `data` at `offset`.
    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()>;

    /// Releases what it holds, when the store closes.
    fn close(&self) -> io::Result<()> {
        Ok(())
    }
}

impl<T: redb::StorageBackend> Backend for T {
    fn len(&self) -> io::Result<u64> {
        redb::StorageBackend::len(self)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        redb::StorageBackend::read(self, offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        redb::StorageBackend::set_len(self, len)
    }

    fn sync_data(&self) -> io::Result<()> {
        redb::StorageBackend::sync_data(self)
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        redb::StorageBackend::write(self, offset, data)
    }

    fn close(&self) -> io::Result<()> {
        redb::StorageBackend::close(self)
    }
}

/// A [`Backend`] as the engine takes one.
#[derive(Debug)]
pub(crate) struct Engine<B>(pub(crate) B);

impl<B: Backend> redb::StorageBackend for Engine<B> {
    fn len(&self) -> io::Result<u64> {
        self.0.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.0.read(offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.0.write(offset, data)
    }

    fn close(&self) -> io::Result<()> {
        self.0.close()
    }
}

/// A [`Backend`] that the engine opens in a sharing mode as if it were a file no other process
/// has open: every byte-range lock is granted and none is held elsewhere. The simulated disk
/// runs the single-writer mode's commits (two-phase, with the locks the engine takes for them)
/// through it, as one process alone on the file sees them.
#[cfg(feature = "testing")]
#[derive(Debug)]
pub(crate) struct Alone<B>(pub(crate) Engine<B>);

#[cfg(feature = "testing")]
impl<B: Backend> redb::StorageBackend for Alone<B> {
    fn len(&self) -> io::Result<u64> {
        redb::StorageBackend::len(&self.0)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        redb::StorageBackend::read(&self.0, offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        redb::StorageBackend::set_len(&self.0, len)
    }

    fn sync_data(&self) -> io::Result<()> {
        redb::StorageBackend::sync_data(&self.0)
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        redb::StorageBackend::write(&self.0, offset, data)
    }

    fn close(&self) -> io::Result<()> {
        redb::StorageBackend::close(&self.0)
    }

    fn try_lock_range(
        &self,
        _start: std::ops::Bound<u64>,
        _end: std::ops::Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        Ok(true)
    }

    fn try_lock_shared_range(
        &self,
        _start: std::ops::Bound<u64>,
        _end: std::ops::Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        Ok(true)
    }

    fn lock_range(
        &self,
        _start: std::ops::Bound<u64>,
        _end: std::ops::Bound<u64>,
    ) -> Result<(), redb::BackendError> {
        Ok(())
    }

    fn lock_shared_range(
        &self,
        _start: std::ops::Bound<u64>,
        _end: std::ops::Bound<u64>,
    ) -> Result<(), redb::BackendError> {
        Ok(())
    }

    fn unlock_range(
        &self,
        _start: std::ops::Bound<u64>,
        _end: std::ops::Bound<u64>,
    ) -> Result<(), redb::BackendError> {
        Ok(())
    }

    fn query_lock_range(
        &self,
        _start: std::ops::Bound<u64>,
        _end: std::ops::Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        // No other process holds any lock.
        Ok(false)
    }
}
