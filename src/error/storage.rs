//! A failure of the storage engine under the log, kept opaque: which engine annals stores in is
//! not part of its interface, so a caller sees what it can act on ([`StorageError::io`], the
//! message, [`crate::Error::kind`]) and the engine's own error only as a `source`.

/// The storage engine failed: its message, and the I/O error under it if there was one.
#[derive(Debug)]
pub struct StorageError(pub(crate) redb::Error);

impl StorageError {
    /// The file system's error under this one, if the engine failed reading or writing.
    pub fn io(&self) -> Option<&std::io::Error> {
        match &self.0 {
            redb::Error::Io(error) => Some(error),
            _ => None,
        }
    }
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl From<redb::Error> for super::Error {
    fn from(error: redb::Error) -> Self {
        // A lock of a multi-writer store's file that another process held too long.
        if let redb::Error::Io(io) = &error
            && let Some(waited) = io
                .get_ref()
                .and_then(|cause| cause.downcast_ref::<super::store::WaitedTooLong>())
        {
            return super::StoreError::WriterBusy {
                path: waited.path.clone(),
                waited: waited.waited,
            }
            .into();
        }
        super::Error::Storage(StorageError(error))
    }
}
