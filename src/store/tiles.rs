//! The log as static tiles (`c2sp.org/tlog-tiles`) in a directory any web server can serve:
//! [`crate::maintenance::Tiles::write`] signs a checkpoint of the head and writes the hash tiles and entry
//! bundles it needs (each entry the record's 32-byte hash, so the tiles' leaves are the
//! tree's), then the checkpoint, last.
//!
//! A directory written before is updated incrementally, from the checkpoint it holds: once
//! that checkpoint opens against the log's key and its root is the log's at its size, every
//! tile it holds is one of this tree's, and only the tiles completed since and the new partial
//! ones are written. A directory of another history is refused before anything is written.

use std::collections::BTreeSet;
use std::fs;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use crate::hash::Digest;
use crate::log::read::Snapshot;
use crate::merkle::leaf_hash;
use crate::output_path::{self, Output};
use crate::record::Position;
use crate::tlog::tiles::{TILE_HEIGHT, TileId, entry_bundle, tile_bytes, tiles_between, tiles_of};
use crate::tlog::{Checkpoint, Signer};

use crate::error::{OtherLogProblem, TilesError};

use super::Store;

/// The name of the checkpoint file in a tiles directory.
pub(crate) const CHECKPOINT_FILE: &str = "checkpoint";

/// What [`crate::maintenance::Tiles::write`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TilesWritten {
    /// The size of the tree now served.
    pub size: u64,
    /// The size the directory served before (0 for a new one).
    pub from_size: u64,
    /// Hash tiles written now.
    pub tiles: usize,
    /// Entry bundles written now.
    pub bundles: usize,
    /// Tiles of the tree the directory already held.
    pub kept: usize,
    /// The checkpoint written, a signed note.
    pub checkpoint: String,
}

impl Store {
    /// The work of [`Tiles::write`].
    pub(crate) fn write_tiles(
        &self,
        dir: &Path,
        signer: &Signer,
    ) -> Result<TilesWritten, TilesError> {
        let served = served_size(self, dir, signer)?;
        let target = Target {
            dir,
            files: self.files()?,
        };
        let signed = self.checkpoint(signer)?;
        // The witnesses' cosignatures go with it when the log keeps a cosigned checkpoint of
        // the same tree (`annals witness request` at this head).
        let text = match self.cosigned_checkpoint()? {
            Some(kept) if same_body(&kept, &signed) => kept,
            _ => signed,
        };
        let size = Checkpoint::open(&text, &[signer.verifier()])
            .map_err(|error| {
                crate::Error::undecodable_meta(crate::error::MetaItem::CosignedCheckpoint, error)
            })?
            .checkpoint
            .size;
        let snapshot = self.snapshot()?;
        let mut folders = BTreeSet::new();
        let mut written = TilesWritten {
            size,
            from_size: served,
            tiles: 0,
            bundles: 0,
            kept: 0,
            checkpoint: text.clone(),
        };
        for tile in tiles_between(served, size) {
            let (hashes, entries) = tile_contents(&snapshot, tile)?;
            write_file(
                &target,
                &dir.join(tile.path()),
                &tile_bytes(&hashes),
                &mut folders,
            )?;
            written.tiles += 1;
            if let Some(entries) = entries {
                let entries: Vec<&[u8]> = entries.iter().map(|e| e.as_slice()).collect();
                write_file(
                    &target,
                    &dir.join(tile.entries_path()),
                    &entry_bundle(&entries),
                    &mut folders,
                )?;
                written.bundles += 1;
            }
        }
        written.kept = tiles_of(size).len().saturating_sub(written.tiles);
        for folder in &folders {
            sync_folder(folder)?;
        }
        let mut root_folder = BTreeSet::new();
        write_file(
            &target,
            &dir.join(CHECKPOINT_FILE),
            text.as_bytes(),
            &mut root_folder,
        )?;
        for folder in &root_folder {
            sync_folder(folder)?;
        }
        Ok(written)
    }
}

impl Store {
    /// The work of [`Tiles::check`].
    pub(crate) fn check_tiles(&self, dir: &Path, signer: &Signer) -> Result<u64, TilesError> {
        served_size(self, dir, signer)
    }
}

/// The size of the tree `dir` serves (0 for a directory with none), once it is this log's.
fn served_size(store: &Store, dir: &Path, signer: &Signer) -> Result<u64, TilesError> {
    // The folder, and the checkpoint read back and replaced, go through the rule every
    // output does: a FIFO there is refused by its metadata, before anything opens it.
    let files = store.files()?;
    output_path::check(dir, Output::Folder, files.as_ref()).map_err(crate::Error::from)?;
    if !dir.exists() {
        // A new folder, made as the tiles are written: it serves nothing yet.
        return Ok(0);
    }
    let path = dir.join(CHECKPOINT_FILE);
    output_path::check(&path, Output::File, files.as_ref()).map_err(crate::Error::from)?;
    let text = match read_checkpoint(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let tiles = dir.join("tile");
            if tiles.exists() {
                return Err(TilesError::Foreign {
                    dir: dir.to_path_buf(),
                });
            }
            return Ok(0);
        }
        Err(error) => return Err(TilesError::Io { path, error }),
    };
    let other = |problem: OtherLogProblem| TilesError::OtherLog {
        dir: dir.to_path_buf(),
        problem,
    };
    let text = String::from_utf8(text).map_err(|_| other(OtherLogProblem::NotUtf8))?;
    let opened = Checkpoint::open(&text, &[signer.verifier()])
        .map_err(|error| other(OtherLogProblem::Unopened(error)))?;
    let checkpoint = opened.checkpoint;
    if checkpoint.origin != signer.name() {
        return Err(other(OtherLogProblem::Origin {
            origin: checkpoint.origin,
        }));
    }
    let snapshot = store.snapshot()?;
    let head = snapshot.head()?.next.0;
    if checkpoint.size > head {
        return Err(TilesError::Ahead {
            dir: dir.to_path_buf(),
            size: checkpoint.size,
            head,
        });
    }
    let root = snapshot.merkle_root(checkpoint.size)?;
    if root.0 != checkpoint.root {
        return Err(TilesError::Forked {
            dir: dir.to_path_buf(),
            size: checkpoint.size,
            served: Digest(checkpoint.root),
            root,
        });
    }
    Ok(checkpoint.size)
}

/// Whether two notes have the same text (the same checkpoint, whatever their signatures).
fn same_body(one: &str, other: &str) -> bool {
    match (
        crate::tlog::Note::parse(one),
        crate::tlog::Note::parse(other),
    ) {
        (Ok(one), Ok(other)) => one.text() == other.text(),
        _ => false,
    }
}

/// A tile's hashes, and for a level-0 tile its entries (the record hashes).
type TileContents = (Vec<[u8; 32]>, Option<Vec<[u8; 32]>>);

fn tile_contents(snapshot: &Snapshot, tile: TileId) -> crate::Result<TileContents> {
    let width = usize::from(tile.width);
    if tile.level == 0 {
        let entries: Vec<[u8; 32]> = snapshot
            .record_hashes(Position(tile.first()), width)?
            .into_iter()
            .map(|hash| hash.0)
            .collect();
        let hashes: Vec<[u8; 32]> = entries
            .iter()
            .map(|entry| leaf_hash(&crate::hash::Digest(*entry)).0)
            .collect();
        return Ok((hashes, Some(entries)));
    }
    let level = tile.level * TILE_HEIGHT;
    let hashes = (tile.first()..tile.first() + width as u64)
        .map(|index| snapshot.merkle_node(level, index).map(|node| node.0))
        .collect::<crate::Result<Vec<_>>>()?;
    Ok((hashes, None))
}

/// The bytes of the checkpoint file at `path`, bounded: opened without blocking and read
/// only when it is a regular file (whatever appeared there since it was checked).
fn read_checkpoint(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = output_path::open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(CHECKPOINT_BYTES_MAX + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > CHECKPOINT_BYTES_MAX {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("holds more than {CHECKPOINT_BYTES_MAX} bytes, more than a checkpoint"),
        ));
    }
    Ok(bytes)
}

/// The largest checkpoint file read back: a note's text and far more cosignatures than a log
/// has witnesses.
const CHECKPOINT_BYTES_MAX: u64 = 1 << 20;

/// Where [`write_file`] writes: the tiles folder, and the files of the store its files must
/// never be.
struct Target<'a> {
    dir: &'a Path,
    files: Option<output_path::StoreFiles>,
}

/// Writes `bytes` to `path` under a temporary name (a new file, never through a link, with no
/// more permissions than the log's), synced, then renamed into place; notes the folder, to be
/// synced once all its files are in.
fn write_file(
    target: &Target<'_>,
    path: &Path,
    bytes: &[u8],
    folders: &mut BTreeSet<PathBuf>,
) -> Result<(), TilesError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |error| TilesError::Io { path, error }
    };
    let files = target.files.as_ref();
    let folder = path.parent().expect("a tile path has a folder");
    fs::create_dir_all(folder).map_err(io(folder))?;
    output_path::check(path, Output::File, files).map_err(crate::Error::from)?;
    let name = path
        .file_name()
        .expect("a tile path has a name")
        .to_string_lossy();
    let temporary = folder.join(format!(".{name}.{}.tmp", std::process::id()));
    output_path::check(&temporary, Output::File, files).map_err(crate::Error::from)?;
    // One a killed run of the same id left is replaced; a link there is refused, not followed.
    if fs::symlink_metadata(&temporary).is_ok_and(|found| found.is_file()) {
        fs::remove_file(&temporary).map_err(io(&temporary))?;
    }
    let mut file = output_path::create_new(&temporary, files.map(output_path::StoreFiles::log))
        .map_err(io(&temporary))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io(&temporary))?;
    fs::rename(&temporary, path).map_err(io(path))?;
    // The folder and each one made for it up to `dir`, whose entries must reach the disk too.
    for ancestor in folder.ancestors() {
        folders.insert(ancestor.to_path_buf());
        if ancestor == target.dir {
            break;
        }
    }
    Ok(())
}

fn sync_folder(folder: &Path) -> Result<(), TilesError> {
    fs::File::open(folder)
        .and_then(|handle| handle.sync_all())
        .map_err(|error| TilesError::Io {
            path: folder.to_path_buf(),
            error,
        })
}

/// A store's log as static tiles (`c2sp.org/tlog-tiles`) in a directory: written, or checked
/// against the log.
#[derive(Clone, Copy, Debug)]
pub struct Tiles<'s> {
    store: &'s Store,
}

impl<'s> Tiles<'s> {
    /// The tiles of `store`'s log.
    pub fn of(store: &'s Store) -> Tiles<'s> {
        Tiles { store }
    }
}

impl Tiles<'_> {
    /// Signs a checkpoint of the head with `signer` (as [`crate::maintenance::Checkpoints::sign`]) and writes the
    /// log's tiles, entry bundles and that checkpoint (with the witnesses' cosignatures when the
    /// log keeps a cosigned checkpoint of the same tree) into `dir` (`c2sp.org/tlog-tiles`),
    /// updating a directory written before from the checkpoint it holds. Each file is written
    /// under a temporary name, synced and renamed into place, and the checkpoint last, so a
    /// reader never sees a checkpoint whose tiles are missing.
    pub fn write(&self, dir: &Path, signer: &Signer) -> Result<TilesWritten, TilesError> {
        self.store.write_tiles(dir, signer)
    }

    /// Whether [`crate::maintenance::Tiles::write`] would write into `dir` for `signer`'s log: the size of
    /// the tree the directory serves now (0 for a new one), or its refusal. Works on a
    /// read-only store, so that a refusal leaves the log's file as it was.
    pub fn check(&self, dir: &Path, signer: &Signer) -> Result<u64, TilesError> {
        self.store.check_tiles(dir, signer)
    }
}
