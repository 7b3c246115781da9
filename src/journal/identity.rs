//! Which file a journal is (its device and inode), asked of the kernel without its times.
//!
//! On Linux 6.13 and later a look at a file's change time (`stat`, or `statx` asking for it,
//! as `std::fs::metadata` does) makes the next write record a fine-grained one, which leaves the
//! inode dirty for `fdatasync`: on ext4 every commit's sync then writes the inode too, a second
//! synchronous write. A reader checking the journal before each read, and a writer of a shared
//! journal at each turn, did exactly that: the writer's commits fell from 6,250/s to 5,420/s on
//! this project's machine. `statx` asking for the inode alone leaves the times unasked.

use std::fs::File;
use std::io;
use std::path::Path;

/// A file's device and inode: two names for the same identity are the same file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    device: (u32, u32),
    inode: u64,
}

impl FileIdentity {
    /// The identity of the open `file`.
    #[cfg(target_os = "linux")]
    pub(crate) fn of_file(file: &File) -> io::Result<FileIdentity> {
        use rustix::fs::{AtFlags, StatxFlags, statx};
        Ok(Self::from_statx(&statx(
            file,
            "",
            AtFlags::EMPTY_PATH,
            StatxFlags::INO,
        )?))
    }

    /// The identity of the file `path` names, following links as opening it would.
    #[cfg(target_os = "linux")]
    pub(crate) fn of_path(path: &Path) -> io::Result<FileIdentity> {
        use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
        Ok(Self::from_statx(&statx(
            CWD,
            path,
            AtFlags::empty(),
            StatxFlags::INO,
        )?))
    }

    #[cfg(target_os = "linux")]
    fn from_statx(found: &rustix::fs::Statx) -> FileIdentity {
        // The device comes with every answer, asked for or not.
        FileIdentity {
            device: (found.stx_dev_major, found.stx_dev_minor),
            inode: found.stx_ino,
        }
    }

    /// The identity of the open `file`.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn of_file(file: &File) -> io::Result<FileIdentity> {
        Ok(Self::from_metadata(&file.metadata()?))
    }

    /// The identity of the file `path` names, following links as opening it would.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn of_path(path: &Path) -> io::Result<FileIdentity> {
        Ok(Self::from_metadata(&std::fs::metadata(path)?))
    }

    #[cfg(not(target_os = "linux"))]
    fn from_metadata(found: &std::fs::Metadata) -> FileIdentity {
        use std::os::unix::fs::MetadataExt;
        let device = found.dev();
        FileIdentity {
            device: ((device >> 32) as u32, device as u32),
            inode: found.ino(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FileIdentity;

    #[test]
    fn a_file_and_its_name_are_one_identity_and_a_file_made_again_is_another() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal");
        let file = std::fs::File::create(&path).unwrap();
        let first = FileIdentity::of_file(&file).unwrap();
        assert_eq!(FileIdentity::of_path(&path).unwrap(), first);
        // Made again under the same name while the first is open: another inode.
        std::fs::remove_file(&path).unwrap();
        let _again = std::fs::File::create(&path).unwrap();
        assert_ne!(FileIdentity::of_path(&path).unwrap(), first);
        assert_eq!(FileIdentity::of_file(&file).unwrap(), first);
    }
}
