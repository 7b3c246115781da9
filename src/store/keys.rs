//! The key store beside a log (`<log>.keys`, `schema/FORMAT.md` 3.16): each subject's data
//! key, which seals its personal payloads, kept outside the log, its journal, its exports and
//! its messages, so that destroying it erases the subject (crypto-shredding).
//!
//! The file is small and rewritten whole on every change: written under a name of its own
//! (`<log>.keying.<pid>`, no more permissions than the log's and never more than `0600`),
//! synced, renamed over the key store, and its folder synced; the old file's bytes are then
//! overwritten with zeros and synced, so that after an erasure no file of the store holds the
//! key. Changes are made under the log's write lock (the store's write transaction), so two
//! writers never rewrite it at once; readers read it whole, the old file or the new one.
//! Keys are wiped from memory when dropped (`zeroize`). This file draws the keys and the
//! envelopes' nonces from the system's randomness: the command path, never an `apply`.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rand_core::{OsRng, RngCore};
use zeroize::Zeroizing;

use crate::error::{ErasureError, Error, Result};
use crate::output_path::{folder_of, keys_path, private_name};
use crate::record::envelope::{KEY_BYTES, NONCE_BYTES, check_subject};

/// The first bytes of a key store: its name and format version 1.
const KEYS_MAGIC: &[u8; 12] = b"annals.keys\x01";

/// The largest key store read (about 400,000 subjects): bounded before anything is allocated.
pub(crate) const KEY_STORE_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// Bytes of the blake3 checksum that ends the file.
const CHECKSUM_BYTES: usize = 32;

/// The derive-key context of the key store's checksum.
const CHECKSUM_CONTEXT: &str = "annals 2026 key store checksum v1";

/// A subject's data key, wiped from memory when dropped.
pub(crate) type DataKey = Zeroizing<[u8; KEY_BYTES]>;

/// A fresh nonce for one envelope, from the system's randomness.
pub(crate) fn fresh_nonce() -> Result<[u8; NONCE_BYTES]> {
    let mut nonce = [0u8; NONCE_BYTES];
    OsRng
        .try_fill_bytes(&mut nonce)
        .map_err(|error| Error::Io(std::io::Error::other(error.to_string())))?;
    Ok(nonce)
}

/// The keys of one log's subjects, as read from its key store.
pub(crate) struct KeyStore {
    log: PathBuf,
    keys: BTreeMap<String, DataKey>,
}

impl KeyStore {
    /// The key store of the log at `log`, empty when there is no file.
    pub(crate) fn load(log: &Path) -> Result<KeyStore> {
        let path = keys_path(log);
        // A writer zeroes the file it replaced, after the rename: a reader that opened the
        // old one just before reads it again under the new.
        let mut attempts = 0;
        loop {
            match read_keys(&path) {
                Err(Error::Erasure(ErasureError::Damaged { .. })) if attempts < 2 => {
                    attempts += 1;
                }
                read => {
                    return read.map(|keys| KeyStore {
                        log: log.to_path_buf(),
                        keys,
                    });
                }
            }
        }
    }

    /// `subject`'s key, if the store holds one.
    pub(crate) fn key(&self, subject: &str) -> Option<&[u8; KEY_BYTES]> {
        self.keys.get(subject).map(|key| &**key)
    }

    /// The subjects with a key, in order.
    pub(crate) fn subjects(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// `subject`'s key, drawn from the system's randomness and written durably to the key
    /// store first when it has none.
    pub(crate) fn key_or_new(&mut self, subject: &str) -> Result<DataKey> {
        if let Some(key) = self.keys.get(subject) {
            return Ok(key.clone());
        }
        let mut key: DataKey = Zeroizing::new([0u8; KEY_BYTES]);
        OsRng
            .try_fill_bytes(&mut *key)
            .map_err(|error| Error::Io(std::io::Error::other(error.to_string())))?;
        self.keys.insert(subject.to_owned(), key.clone());
        if let Err(error) = self.rewrite() {
            self.keys.remove(subject);
            return Err(error);
        }
        Ok(key)
    }

    /// Destroys `subject`'s key: the key store is rewritten without it, durably, and the old
    /// file's bytes overwritten. `false` when it held none (nothing is written).
    pub(crate) fn destroy(&mut self, subject: &str) -> Result<bool> {
        let Some(key) = self.keys.remove(subject) else {
            return Ok(false);
        };
        if let Err(error) = self.rewrite() {
            self.keys.insert(subject.to_owned(), key);
            return Err(error);
        }
        Ok(true)
    }

    /// Writes the keys to a new file, syncs it, renames it over the key store, syncs the
    /// folder, then zeroes the file replaced.
    fn rewrite(&self) -> Result<()> {
        let path = keys_path(&self.log);
        let bytes = encode(&self.keys);
        let temporary = private_name(&self.log, "keying");
        // Left by a failed rewrite of this process: it is ours to replace.
        match fs::remove_file(&temporary) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error.into()),
            _ => {}
        }
        let written = (|| -> Result<()> {
            let mut file = create_private(&temporary, &self.log)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            Ok(())
        })();
        if let Err(error) = written {
            let _ = fs::remove_file(&temporary);
            return Err(error);
        }
        // The file replaced, opened before the rename so its bytes can be zeroed after it.
        let replaced = match fs::symlink_metadata(&path) {
            Ok(found) if !found.file_type().is_file() => {
                let _ = fs::remove_file(&temporary);
                return Err(ErasureError::Damaged {
                    path,
                    problem: "it is not a regular file".to_owned(),
                }
                .into());
            }
            Ok(_) => Some(OpenOptions::new().write(true).open(&path)?),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => return Err(error.into()),
        };
        fs::rename(&temporary, &path)?;
        File::open(folder_of(&path))?.sync_all()?;
        // Zeroed only when no other name holds it: a copy someone linked elsewhere is a copy
        // taken before, which erasure does not reach (`docs/erasure.md`).
        if let Some(replaced) = replaced
            && replaced.metadata()?.nlink() == 0
        {
            wipe(replaced)?;
        }
        Ok(())
    }
}

/// Overwrites every byte of `file` (unlinked already) with zeros and syncs it, so that its
/// blocks hold no key once freed (as far as the file system writes in place).
fn wipe(mut file: File) -> Result<()> {
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(0))?;
    let zeros = [0u8; 4096];
    let mut left = len;
    while left > 0 {
        let step = left.min(zeros.len() as u64);
        file.write_all(&zeros[..step as usize])?;
        left -= step;
    }
    file.sync_all()?;
    Ok(())
}

/// Creates the new key store at `path`: exclusive, never through a link, with the log's
/// permissions and never more than the owner's read and write.
fn create_private(path: &Path, log: &Path) -> Result<File> {
    let mode = fs::metadata(log).map_or(0o600, |log| log.mode() & 0o600);
    Ok(OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?)
}

/// The key store's bytes: magic, count, each subject (length, id) and key in order, checksum.
fn encode(keys: &BTreeMap<String, DataKey>) -> Zeroizing<Vec<u8>> {
    let mut bytes = Zeroizing::new(Vec::with_capacity(
        KEYS_MAGIC.len() + 4 + keys.len() * (1 + 32 + KEY_BYTES) + CHECKSUM_BYTES,
    ));
    bytes.extend_from_slice(KEYS_MAGIC);
    // Bounded by the file's limit, far below 2^32 entries.
    bytes.extend_from_slice(&(keys.len() as u32).to_le_bytes());
    for (subject, key) in keys {
        // A subject is checked (at most 128 bytes) before it gets a key.
        bytes.push(subject.len() as u8);
        bytes.extend_from_slice(subject.as_bytes());
        bytes.extend_from_slice(&**key);
    }
    let checksum = blake3::derive_key(CHECKSUM_CONTEXT, &bytes);
    bytes.extend_from_slice(&checksum);
    bytes
}

/// Reads the key store at `path` whole and checks it (missing: no keys).
fn read_keys(path: &Path) -> Result<BTreeMap<String, DataKey>> {
    let damaged = |problem: &str| -> Error {
        ErasureError::Damaged {
            path: path.to_path_buf(),
            problem: problem.to_owned(),
        }
        .into()
    };
    let file = match crate::output_path::open_regular(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(error) => return Err(error.into()),
    };
    let mut bytes = Zeroizing::new(Vec::new());
    file.take(KEY_STORE_BYTES_MAX + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > KEY_STORE_BYTES_MAX {
        return Err(damaged("it is over the key store's limit of 64 MiB"));
    }
    let Some(body_len) = bytes.len().checked_sub(CHECKSUM_BYTES) else {
        return Err(damaged("it is shorter than a key store's checksum"));
    };
    let (body, checksum) = bytes.split_at(body_len);
    if blake3::derive_key(CHECKSUM_CONTEXT, body) != checksum {
        return Err(damaged("its checksum does not match its bytes"));
    }
    let Some(mut rest) = body.strip_prefix(KEYS_MAGIC.as_slice()) else {
        return Err(damaged("it does not begin with the key store's magic"));
    };
    let count = take(&mut rest, 4)
        .map(|count| u32::from_le_bytes(count.try_into().expect("4 bytes")))
        .ok_or_else(|| damaged("it ends before its count"))?;
    let mut keys = BTreeMap::new();
    for _ in 0..count {
        let entry = (|| {
            let len = usize::from(*take(&mut rest, 1)?.first()?);
            let subject = std::str::from_utf8(take(&mut rest, len)?).ok()?;
            check_subject(subject).ok()?;
            let mut key: DataKey = Zeroizing::new([0u8; KEY_BYTES]);
            key.copy_from_slice(take(&mut rest, KEY_BYTES)?);
            Some((subject.to_owned(), key))
        })();
        let (subject, key) = entry.ok_or_else(|| damaged("an entry is cut short or malformed"))?;
        if keys.insert(subject, key).is_some() {
            return Err(damaged("a subject has two keys"));
        }
    }
    if !rest.is_empty() {
        return Err(damaged("bytes follow its last entry"));
    }
    Ok(keys)
}

/// The first `len` bytes of `rest`, which moves past them; `None` when it is shorter.
fn take<'a>(rest: &mut &'a [u8], len: usize) -> Option<&'a [u8]> {
    if rest.len() < len {
        return None;
    }
    let (taken, left) = rest.split_at(len);
    *rest = left;
    Some(taken)
}
