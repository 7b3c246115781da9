//! `keygen`, reading a signer key file, and `keys export` / `keys import` (the subjects' data
//! keys for a trusted replica, `docs/erasure.md`): the only place the command line touches a
//! private key. A key file is written with mode 0600 and read only when no one else may read
//! it; no message here holds a byte of a key.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::ExitCode;

use super::args::{KeyAlgorithm, KeygenArgs, KeysExportArgs, KeysImportArgs};
use super::command::{NamedFile, Run};
use super::failure::{Failure, Kind};
use annals::output_path::Output;
use annals::tlog::{Cosigner, Signer};

/// The largest key file read: a private key text and its newline.
const KEY_FILE_BYTES_MAX: u64 = annals::tlog::note::KEY_TEXT_BYTES_MAX as u64 + 1;

/// `keygen --name ORIGIN KEYFILE`: writes a new signer key (mode 0600, a new file unless
/// `--force`) and prints its vkey.
pub(crate) fn keygen(args: KeygenArgs) -> Result<ExitCode, Failure> {
    let named = |error| Failure::of(Kind::InvalidInput, format!("--name: {error}"));
    // A witness's key (type 0x04, c2sp.org/tlog-cosignature) or a log's (type 0x01); with
    // ML-DSA-44, type 0x06 for either (a log signs with the cosignature form).
    let (mut text, verifier) = if args.cosigner {
        let generate = match args.alg {
            KeyAlgorithm::Ed25519 => Cosigner::generate,
            KeyAlgorithm::MlDsa44 => Cosigner::generate_ml_dsa_44,
        };
        let cosigner = generate(&args.name).map_err(named)?;
        (cosigner.to_private_key_text(), cosigner.verifier())
    } else {
        let generate = match args.alg {
            KeyAlgorithm::Ed25519 => Signer::generate,
            KeyAlgorithm::MlDsa44 => Signer::generate_ml_dsa_44,
        };
        let signer = generate(&args.name).map_err(named)?;
        (signer.to_private_key_text(), signer.verifier())
    };
    text.push('\n');
    write_key_file(&args.keyfile, text.as_bytes(), args.force)?;
    let mut out = io::stdout().lock();
    match args.json {
        true => super::render::print_json(
            &mut out,
            &serde_json::json!({
                "vkey": verifier.to_string(),
                "name": args.name,
                "keyfile": args.keyfile.display().to_string(),
                "kind": if args.cosigner { "cosigner" } else { "signer" },
                "alg": match args.alg {
                    KeyAlgorithm::Ed25519 => "ed25519",
                    KeyAlgorithm::MlDsa44 => "ml-dsa-44",
                },
            }),
        )?,
        false => writeln!(out, "{verifier}")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `keys export DB FILE`: the log's subjects' data keys written to a new file (mode 0600) by
/// [`annals::Store::export_keys`]; prints the subjects exported.
pub(crate) fn keys_export(args: KeysExportArgs) -> Result<ExitCode, Failure> {
    let store = annals::Store::open_read_only(&args.log.db)?;
    let exported = annals::erasure::Keys::of(&store).export(&args.file)?;
    let mut out = io::stdout().lock();
    match args.output.json {
        true => super::render::print_json(
            &mut out,
            &serde_json::json!({
                "file": args.file.display().to_string(),
                "subjects": exported.subjects,
                "erased": exported.erased,
            }),
        )?,
        false => print_subjects(&mut out, &exported.subjects)?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `keys import DB FILE`: the keys of a `keys export` file added to the log's key store by
/// [`annals::Store::import_keys`]; prints the subjects imported.
pub(crate) fn keys_import(args: KeysImportArgs) -> Result<ExitCode, Failure> {
    let store = super::open::open_for_writing(&args.log.db, false, &args.access)?;
    let import = annals::erasure::Keys::of(&store).import(&args.file)?;
    store.close()?;
    let mut out = io::stdout().lock();
    match args.output.json {
        true => super::render::print_json(
            &mut out,
            &serde_json::json!({
                "imported": import.imported,
                "held": import.held,
                "erased": import.erased,
            }),
        )?,
        false => print_subjects(&mut out, &import.imported)?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Subjects' ids, one a line (an id is checked: no control character).
fn print_subjects(out: &mut impl Write, subjects: &[String]) -> Result<(), Failure> {
    for subject in subjects {
        writeln!(out, "{subject}")?;
    }
    Ok(())
}

impl Run for KeysExportArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![
            NamedFile::read(&self.log.db, "the log"),
            NamedFile::written(Some(&self.log.db), &self.file, Output::File),
        ]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        keys_export(self)
    }
}

impl Run for KeysImportArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![
            NamedFile::read(&self.log.db, "the log"),
            NamedFile::read(&self.file, "a key export"),
        ]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        keys_import(self)
    }
}

/// Writes `bytes` to a file of mode 0600 created for them: over an existing file only with
/// `force`, and then through a new file renamed over it, so the key is never in a file with
/// the old file's permissions.
fn write_key_file(path: &Path, bytes: &[u8], force: bool) -> Result<(), Failure> {
    // `--force` replaces a key, never a log (keygen is given none to compare with).
    if force && annals::output_path::is_log_file(path) {
        return Err(
            annals::Error::from(annals::error::OutputPathError::StoreFile {
                path: path.to_path_buf(),
                log: path.to_path_buf(),
                file: annals::error::StoreFile::Log,
            })
            .into(),
        );
    }
    let target = if force {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".new-{}", std::process::id()));
        std::path::PathBuf::from(name)
    } else {
        path.to_path_buf()
    };
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&target)
        .map_err(|error| match error.kind() {
            io::ErrorKind::AlreadyExists => Failure::of(
                Kind::Exists,
                format!("{}: exists (give --force to replace it)", path.display()),
            ),
            _ => Failure::file(&target, true, &error),
        })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|error| Failure::file(&target, true, &error))?;
    if force {
        fs::rename(&target, path).map_err(|error| Failure::file(path, true, &error))?;
    }
    Ok(())
}

/// Reads the signer key at `path`, refusing a file that anyone but its owner may read or
/// write (permissions wider than 0600), as ssh does.
pub(crate) fn read_signer_key(path: &Path) -> Result<Signer, Failure> {
    let text = read_key_file(path)?;
    Signer::parse(&text).map_err(|error| key_failure(path, "signer", &error, "`annals keygen`"))
}

/// [`read_signer_key`] for a witness's cosigning key (`keygen --cosigner`).
#[cfg(feature = "witness")]
pub(crate) fn read_cosigner_key(path: &Path) -> Result<annals::tlog::Cosigner, Failure> {
    let text = read_key_file(path)?;
    annals::tlog::Cosigner::parse(&text)
        .map_err(|error| key_failure(path, "cosigner", &error, "`annals keygen --cosigner`"))
}

/// Why the key file at `path` is not a `kind` key; a key of the other kind is told how one of
/// the right kind is made (`make`).
fn key_failure(path: &Path, kind: &str, error: &annals::tlog::KeyError, make: &str) -> Failure {
    let hint = match error {
        annals::tlog::KeyError::OtherKind { .. } => format!("; make a {kind} key with {make}"),
        _ => String::new(),
    };
    Failure::of(
        Kind::InvalidInput,
        format!("{}: not a {kind} key: {error}{hint}", path.display()),
    )
}

/// The private key text in the file at `path` (its final newline dropped), once the file is
/// its owner's alone.
fn read_key_file(path: &Path) -> Result<zeroize::Zeroizing<String>, Failure> {
    let file = fs::File::open(path).map_err(|error| Failure::file(path, false, &error))?;
    // The permissions of the file opened, not of whatever the path names a moment later.
    let metadata = file
        .metadata()
        .map_err(|error| Failure::file(path, false, &error))?;
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(Failure::of(
            Kind::PermissionDenied,
            format!(
                "{}: a key file readable or writable by others (mode {mode:04o}) is refused: \
                 chmod 600 it",
                path.display()
            ),
        ));
    }
    let mut text = zeroize::Zeroizing::new(String::new());
    file.take(KEY_FILE_BYTES_MAX + 1)
        .read_to_string(&mut text)
        .map_err(|error| Failure::file(path, false, &error))?;
    if text.ends_with('\n') {
        text.pop();
    }
    Ok(text)
}

impl Run for KeygenArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        // The key file is created, never opened as it is; it is of no log.
        vec![NamedFile::written(None, &self.keyfile, Output::File)]
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        keygen(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_file_is_0600_new_and_read_back_only_when_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.key");
        let signer = Signer::from_seed("example.com/log", [8; 32]).unwrap();
        let text = format!("{}\n", signer.to_private_key_text().as_str());
        assert!(write_key_file(&path, text.as_bytes(), false).is_ok());
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(write_key_file(&path, text.as_bytes(), false).is_err());
        assert!(write_key_file(&path, text.as_bytes(), true).is_ok());
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let Ok(read) = read_signer_key(&path) else {
            panic!("the key file of mode 0600 was refused");
        };
        assert_eq!(read.verifier(), signer.verifier());
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let Err(Failure::Of { kind, message, .. }) = read_signer_key(&path) else {
            panic!("a key file of mode 0640 was read");
        };
        assert_eq!(kind, Kind::PermissionDenied);
        assert!(message.contains("0640"), "{message}");
        let material = text.trim_end().rsplit('+').next().unwrap();
        assert!(!message.contains(material));
    }
}
