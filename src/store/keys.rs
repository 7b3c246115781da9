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

/// What a file of keys is, by its first bytes and its checksum's context: a log's key store
/// (`schema/FORMAT.md` 3.16), or a key export for a trusted replica (3.17).
#[derive(Clone, Copy)]
pub(crate) struct KeysFile {
    /// Its first bytes: its name and format version 1.
    magic: &'static [u8; 12],
    /// The derive-key context of its blake3 checksum.
    checksum_context: &'static str,
}

/// The key store beside a log.
pub(crate) const KEY_STORE: KeysFile = KeysFile {
    magic: b"annals.keys\x01",
    checksum_context: "annals 2026 key store checksum v1",
};

/// A key export ([`crate::erasure::Keys::export`]): the key store's layout under its own name.
pub(crate) const KEY_EXPORT: KeysFile = KeysFile {
    magic: b"annals.keyx\x01",
    checksum_context: "annals 2026 key export checksum v1",
};

/// The largest key store read (about 400,000 subjects): bounded before anything is allocated.
pub(crate) const KEY_STORE_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// Bytes of the blake3 checksum that ends the file.
const CHECKSUM_BYTES: usize = 32;

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
            match read_keys(&path, KEY_STORE) {
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

    /// The keys of `subjects` it holds, to export (`schema/FORMAT.md` 3.17).
    pub(crate) fn keys_of<'s>(
        &self,
        subjects: impl Iterator<Item = &'s str>,
    ) -> BTreeMap<String, DataKey> {
        subjects
            .filter_map(|subject| {
                let key = self.keys.get(subject)?;
                Some((subject.to_owned(), key.clone()))
            })
            .collect()
    }

    /// Adds `keys` (of subjects it holds no key for), rewriting the key store once, durably;
    /// as it was when the rewrite fails.
    pub(crate) fn insert_all(&mut self, keys: BTreeMap<String, DataKey>) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let added: Vec<String> = keys.keys().cloned().collect();
        self.keys.extend(keys);
        if let Err(error) = self.rewrite() {
            for subject in &added {
                self.keys.remove(subject);
            }
            return Err(error);
        }
        Ok(())
    }

    /// Writes the keys to a new file, syncs it, renames it over the key store, syncs the
    /// folder, then zeroes the file replaced.
    fn rewrite(&self) -> Result<()> {
        let path = keys_path(&self.log);
        let bytes = encode(&self.keys, KEY_STORE);
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

/// Writes `keys` as a key export (`schema/FORMAT.md` 3.17) to a new file at `path` (never
/// over one there, never through a link), mode `0600`, synced with its folder. A failed write
/// leaves no file.
pub(crate) fn write_export(path: &Path, keys: &BTreeMap<String, DataKey>) -> Result<()> {
    let bytes = encode(keys, KEY_EXPORT);
    let exists = || -> Error {
        ErasureError::KeyExportExists {
            path: path.to_path_buf(),
        }
        .into()
    };
    if fs::symlink_metadata(path).is_ok() {
        return Err(exists());
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => exists(),
            _ => error.into(),
        })?;
    let written = (|| -> Result<()> {
        file.write_all(&bytes)?;
        file.sync_all()?;
        File::open(folder_of(path))?.sync_all()?;
        Ok(())
    })();
    if written.is_err() {
        let _ = fs::remove_file(path);
    }
    written
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

/// A file of keys' bytes: magic, count, each subject (length, id) and key in order, checksum.
fn encode(keys: &BTreeMap<String, DataKey>, layout: KeysFile) -> Zeroizing<Vec<u8>> {
    let mut bytes = Zeroizing::new(Vec::with_capacity(
        layout.magic.len() + 4 + keys.len() * (1 + 32 + KEY_BYTES) + CHECKSUM_BYTES,
    ));
    bytes.extend_from_slice(layout.magic);
    // Bounded by the file's limit, far below 2^32 entries.
    bytes.extend_from_slice(&(keys.len() as u32).to_le_bytes());
    for (subject, key) in keys {
        // A subject is checked (at most 128 bytes) before it gets a key.
        bytes.push(subject.len() as u8);
        bytes.extend_from_slice(subject.as_bytes());
        bytes.extend_from_slice(&**key);
    }
    let checksum = blake3::derive_key(layout.checksum_context, &bytes);
    bytes.extend_from_slice(&checksum);
    bytes
}

/// Reads the file of keys at `path` whole and checks it as `layout` (missing: no keys).
pub(crate) fn read_keys(path: &Path, layout: KeysFile) -> Result<BTreeMap<String, DataKey>> {
    let damaged = |problem: &str| -> Error {
        let (path, problem) = (path.to_path_buf(), problem.to_owned());
        match layout.magic == KEY_STORE.magic {
            true => ErasureError::Damaged { path, problem },
            false => ErasureError::KeyExport { path, problem },
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
        return Err(damaged("it is over the limit of 64 MiB"));
    }
    let Some(body_len) = bytes.len().checked_sub(CHECKSUM_BYTES) else {
        return Err(damaged("it is shorter than a checksum"));
    };
    let (body, checksum) = bytes.split_at(body_len);
    if blake3::derive_key(layout.checksum_context, body) != checksum {
        return Err(damaged("its checksum does not match its bytes"));
    }
    let Some(mut rest) = body.strip_prefix(layout.magic.as_slice()) else {
        return Err(damaged("it does not begin with its magic bytes"));
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
