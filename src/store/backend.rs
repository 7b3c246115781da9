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
