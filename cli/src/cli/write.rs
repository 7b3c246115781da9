//! `append`, `import`, `rebuild` and `demo`: the commands that write to a log. Each goes
//! through the store, which decides and checks; nothing here does.

use std::fs;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use super::args::{AppendArgs, DemoArgs, EraseArgs, ImportArgs, RebuildArgs, UpgradeArgs};
use super::audit::verify_showing_progress;
use super::command::{NamedFile, Run};
use super::failure::{Failure, Kind};
use super::open::{joining, open_for_writing, require_folder};
use super::progress::ProgressLine;
use super::render::{print_json, print_range};
use super::report::{AppendJson, DemoJson, RangeJson, RebuildJson};
use annals::Error;
use annals::NewEvent;
use annals::export::ExportError;
use annals::{AppendOutcome, error::AppendError, log::check_append};
use annals::{Durability, Store, StoreOptions, maintenance::ImportStage};
use annals::{error::LimitError, log::Field};

pub(crate) fn append(args: AppendArgs) -> Result<ExitCode, Failure> {
    // The event is made before the file is opened, so a bad payload file or clock leaves no
    // new log file behind.
    let options = StoreOptions {
        create: true,
        ..StoreOptions::default()
    };
    let payload = match args.payload.as_deref() {
        None => Vec::new(),
        Some(text) => match text.strip_prefix('@') {
            Some(file) => read_payload(Path::new(file), options.limits.payload_bytes_max)?,
            None => text.as_bytes().to_vec(),
        },
    };
    let at_ms = match args.at_ms {
        Some(at_ms) => at_ms,
        None => now_ms()?,
    };
    let mut event = NewEvent::new(args.kind.clone(), at_ms, payload);
    if let Some(key) = &args.key {
        event = event.with_idempotency_key(key.as_str());
    }
    if let Some(schema) = args.schema {
        event = event.with_schema(schema);
    }
    let events = [event];
    // Everything the append would refuse without reading the log is refused before the log
    // is opened writable: redb rewrites its bookkeeping in the file on every writable open.
    check_append(&args.stream, &events, &options.limits).map_err(Error::from)?;
    refuse_read_only(&args, &events, &options.limits)?;
    let store = open_for_writing(&args.db, true, &args.access)?;
    let outcome = match args.subject.as_deref() {
        Some(subject) => store.append_personal(subject, &args.stream, args.expect, &events)?,
        None => store.append(&args.stream, args.expect, &events)?,
    };
    store.close()?;
    let mut out = io::stdout().lock();
    if args.output.json {
        print_json(&mut out, &AppendJson::new(&outcome))?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    match outcome {
        AppendOutcome::Appended(appended) => writeln!(out, "{}", appended.first_position)?,
        AppendOutcome::Duplicate { .. } => writeln!(out, "duplicate {}", outcome.first_position())?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses, reading the log read-only, what the append would refuse (`Store::check_append`:
/// a reserved kind, an idempotency key used for other content, an expected version the stream
/// is not at), as of a moment just before it, without opening the file writable. A missing
/// log is refused as the empty log the append would create, before it is made; one this
/// cannot read (held exclusive, damaged) is left to the writable open to report.
fn refuse_read_only(
    args: &AppendArgs,
    events: &[NewEvent],
    limits: &annals::log::Limits,
) -> Result<(), Failure> {
    let (db, stream, expected) = (&args.db, args.stream.as_str(), args.expect);
    if let Some(subject) = args.subject.as_deref() {
        annals::erasure::check_subject(subject)?;
    }
    if !db.exists() {
        return Ok(annals::maintenance::check_append_to_new_log(
            stream, expected, events, limits,
        )?);
    }
    let Ok(reader) = Store::open_read_only(db) else {
        return Ok(());
    };
    if let Some(subject) = args.subject.as_deref() {
        reader.snapshot()?.check_not_erased(subject)?;
    }
    Ok(reader.check_append(stream, expected, events)?)
}

/// What `erase --json` prints.
#[derive(serde::Serialize)]
struct EraseJson<'a> {
    /// The subject erased.
    subject: &'a str,
    /// The position of its erasure event.
    position: u64,
    /// Whether this run appended the event (false: an earlier erasure had).
    appended: bool,
    /// Whether this run destroyed a key.
    key_destroyed: bool,
}

pub(crate) fn erase(args: EraseArgs) -> Result<ExitCode, Failure> {
    annals::erasure::check_subject(&args.subject)?;
    if !args.log.db.exists() {
        return Err(Error::Open(annals::error::OpenError::Missing { path: args.log.db }).into());
    }
    let at_ms = match args.at_ms {
        Some(at_ms) => at_ms,
        None => now_ms()?,
    };
    let store = open_for_writing(&args.log.db, false, &args.access)?;
    let erasure = store.erase(&args.subject, at_ms)?;
    store.close()?;
    let mut out = io::stdout().lock();
    if args.output.json {
        let json = EraseJson {
            subject: &erasure.subject,
            position: erasure.position.0,
            appended: erasure.appended,
            key_destroyed: erasure.key_destroyed,
        };
        print_json(&mut out, &json)?;
    } else {
        let note = if erasure.appended {
            ""
        } else {
            " (erased before)"
        };
        writeln!(out, "{}{note}", erasure.position)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Reads a payload file, reading no more than one byte past the store's payload limit: a
/// larger file is refused as the append would refuse it, without loading it whole. A regular
/// file's length is known and named; a device or pipe (`/dev/zero`, say) may never end, so
/// only the limit is.
fn read_payload(path: &Path, payload_bytes_max: u32) -> Result<Vec<u8>, Failure> {
    let unreadable = |error: io::Error| Failure::file(path, false, &error);
    let file = fs::File::open(path).map_err(unreadable)?;
    let mut payload = Vec::new();
    file.take(u64::from(payload_bytes_max) + 1)
        .read_to_end(&mut payload)
        .map_err(unreadable)?;
    let max = u64::from(payload_bytes_max);
    if payload.len() as u64 > max {
        let known = fs::metadata(path)
            .ok()
            .filter(|metadata| metadata.is_file() && metadata.len() > max)
            .map(|metadata| metadata.len());
        return Err(match known {
            Some(len) => {
                let limit = LimitError::TooLong {
                    field: Field::Payload,
                    len,
                    max,
                };
                Error::from(AppendError::from(limit)).into()
            }
            None => Failure::Finding(format!(
                "{}: the payload is over the limit of {} (read {} bytes and stopped)",
                path.display(),
                in_binary_units(max),
                payload.len()
            )),
        });
    }
    Ok(payload)
}

/// `1 MiB`, `64 KiB`, or a number of bytes when it is not a whole number of either.
fn in_binary_units(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

fn now_ms() -> Result<u64, Failure> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|since| u64::try_from(since.as_millis()).ok())
        .ok_or_else(|| {
            Failure::Usage("the system clock is before the Unix epoch; pass --at-ms".into())
        })
}

/// Refuses an import whose export file and log are one file, whose export file cannot be
/// read, or whose log's folder or file is not usable. The library's account of an unreadable
/// export file, a directory in the log's place or a missing folder names no path; these
/// checks do, before anything is read.
fn check_import_paths(args: &ImportArgs) -> Result<(), Failure> {
    if super::paths::same_file(&args.file, &args.db) {
        return Err(Failure::of(
            Kind::InvalidInput,
            format!(
                "{} and {} are the same file: give the export file first, then the log to \
                 import it into",
                args.file.display(),
                args.db.display()
            ),
        ));
    }
    require_folder(&args.db)?;
    fs::File::open(&args.file)
        .and_then(|file| file.metadata())
        .and_then(|metadata| match metadata.is_dir() {
            true => Err(io::Error::from(io::ErrorKind::IsADirectory)),
            false => Ok(()),
        })
        .map_err(|error| Failure::file(&args.file, false, &error))?;
    match super::failure::diagnose(&args.db, false) {
        Some(failure) => Err(failure),
        None => Ok(()),
    }
}

pub(crate) fn import(args: ImportArgs) -> Result<ExitCode, Failure> {
    check_import_paths(&args)?;
    // The header gives the total for the progress line; the import reads and checks it again.
    let records = annals::export::open(&args.file)
        .map(|reader| reader.header().to.0 - reader.header().from.0)
        .unwrap_or(0);
    let mut check = ProgressLine::new("check", records);
    let mut write = ProgressLine::new("import", records);
    // Whether the import failed on the export file's bytes, which its error does not name.
    let mut about_file = false;
    let summary = joining(&args.access, |sharing| {
        let options = StoreOptions {
            sharing,
            busy_timeout: args.access.wait,
            ..StoreOptions::default()
        };
        annals::maintenance::Import::run_with(&args.file, &args.db, options, &mut |stage, done| {
            match stage {
                ImportStage::Check => check.update(done),
                _ => {
                    check.finish();
                    write.update(done)
                }
            }
        })
        .map_err(|error| {
            about_file = matches!(&error, Error::Export(export)
                if !matches!(**export, ExportError::Mismatch { .. } | ExportError::Io(_)));
            error.no_space_at(&args.db)
        })
    });
    check.finish();
    write.finish();
    let summary = summary.map_err(|failure| match about_file {
        true => naming_export_file(failure, &args.file),
        false => failure,
    })?;
    let mut out = io::stdout().lock();
    if args.output.json {
        print_json(&mut out, &RangeJson::new(&summary.header, &args.db))?;
    } else {
        print_range(&mut out, &summary.header, "imported", "into", &args.db)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `failure`, about the export file's bytes, with the file's path in front: the library's
/// words (`not an annals export file`, `damaged at position 7`) name no file.
fn naming_export_file(failure: Failure, file: &Path) -> Failure {
    match failure {
        Failure::Of {
            kind,
            exit,
            message,
        } => Failure::Of {
            kind,
            exit,
            message: format!("{}: {message}", file.display()),
        },
        other => other,
    }
}

pub(crate) fn rebuild(args: RebuildArgs) -> Result<ExitCode, Failure> {
    // A projection the log does not keep is refused before the log is opened writable.
    if let Some(name) = args.projection.as_deref()
        && !annals::maintenance::builtin_projections()
            .iter()
            .any(|projection| projection.name() == name)
    {
        return Err(Error::from(annals::projection::ProjectionError::Unknown {
            name: name.to_owned(),
        })
        .into());
    }
    refuse_unused_archives(&args.log.db, &args.archive)?;
    let store = super::open::open_with_archives(&args.log.db, false, &args.access, &args.archive)?;
    let mut line = ProgressLine::new("rebuild", store.snapshot()?.head()?.next.0);
    let rebuilt = annals::maintenance::Rebuild::of(&store)
        .run_with(args.projection.as_deref(), &mut |done| line.update(done));
    line.finish();
    rebuilt?;
    let head = store.snapshot()?.head()?;
    let names: Vec<&str> = match &args.projection {
        Some(name) => vec![name.as_str()],
        None => store.projections().iter().map(|p| p.name()).collect(),
    };
    // Closing writes redb's allocator state: a failure there (a full disk) is the command's.
    store.close()?;
    let mut out = io::stdout().lock();
    if args.output.json {
        let report = RebuildJson {
            projections: names,
            through: head.next.0,
        };
        print_json(&mut out, &report)?;
    } else {
        writeln!(
            out,
            "rebuilt {} through position {}",
            names.join(", "),
            head.next
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// What `upgrade --json` prints.
#[derive(serde::Serialize)]
struct UpgradeJson {
    /// The log.
    path: String,
    /// The format version the log had.
    from: u32,
    /// The format version it has now.
    to: u32,
}

pub(crate) fn upgrade(args: UpgradeArgs) -> Result<ExitCode, Failure> {
    use annals::error::OpenError;
    use annals::log::FORMAT_VERSION;
    if !args.log.db.exists() {
        return Err(Error::Open(OpenError::Missing { path: args.log.db }).into());
    }
    // The read-only open tells the version without writing; only an earlier one is opened
    // writable, which upgrades it.
    let from = match Store::open_read_only(&args.log.db) {
        Ok(store) => {
            store.close()?;
            FORMAT_VERSION
        }
        Err(Error::Open(OpenError::NeedsUpgrade { found, .. })) => {
            open_for_writing(&args.log.db, false, &args.access)?.close()?;
            found
        }
        Err(error) => return Err(error.into()),
    };
    let mut out = BufWriter::new(io::stdout().lock());
    if args.json {
        let upgrade = UpgradeJson {
            path: args.log.db.display().to_string(),
            from,
            to: FORMAT_VERSION,
        };
        print_json(&mut out, &upgrade)?;
    } else if from == FORMAT_VERSION {
        writeln!(
            out,
            "{}: already format v{FORMAT_VERSION}",
            args.log.db.display()
        )?;
    } else {
        writeln!(
            out,
            "{}: upgraded from format v{from} to v{FORMAT_VERSION}",
            args.log.db.display()
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses a demo whose options do not go together, or that would write into an existing log
/// without `--force`.
fn check_demo_args(args: &DemoArgs) -> Result<(), Failure> {
    if args.durability == Durability::Deferred && args.access.sharing.is_shared() {
        return Err(Failure::of(
            Kind::Usage,
            format!(
                "--durability deferred needs --sharing exclusive: redb commits durably in {} mode",
                args.access.sharing
            ),
        ));
    }
    if args.db.exists() && !args.force {
        return Err(Failure::of(
            Kind::Exists,
            format!(
                "{}: already exists; the demo writes a new log: give another path, or --force \
                 to append the demo's records to this log",
                args.db.display()
            ),
        ));
    }
    Ok(())
}

pub(crate) fn demo(args: DemoArgs) -> Result<ExitCode, Failure> {
    check_demo_args(&args)?;
    let store = open_for_writing(&args.db, true, &args.access)?;
    let mut line = ProgressLine::new("demo", args.records);
    let report = annals::demo::run_with(&store, args.durability, args.records, |done| {
        line.update(done)
    });
    line.finish();
    let report = report?;
    let verified = verify_showing_progress(&store)?;
    // Closing writes redb's allocator state: a failure there (a full disk) is the command's.
    store.close()?;
    let mut out = BufWriter::new(io::stdout().lock());
    if args.output.json {
        let demo = DemoJson {
            path: args.db.display().to_string(),
            records: report.records,
            per_projection: report.per_projection.clone(),
            head: report.head.next.0,
            head_hash: report.head.hash.to_hex(),
            sound: verified.is_sound(),
            verified_records: verified.records,
            verified_streams: verified.streams,
        };
        print_json(&mut out, &demo)?;
    } else {
        writeln!(
            out,
            "wrote {} records to {}",
            report.records,
            args.db.display()
        )?;
        for (projection, records) in &report.per_projection {
            writeln!(out, "  {projection:<10} {records:>7} records")?;
        }
        writeln!(out, "head {} {}", report.head.next, report.head.hash)?;
    }
    match &verified.problem {
        None => {
            if !args.output.json {
                writeln!(
                    out,
                    "verify: sound ({} records, {} streams)",
                    verified.records, verified.streams
                )?;
                writeln!(
                    out,
                    "next: put annals on the PATH with `cargo install --locked --path cli`, then try"
                )?;
                writeln!(out, "  annals log {} --limit 5", args.db.display())?;
                writeln!(out, "  annals root {} --json", args.db.display())?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Some(finding) => {
            out.flush()?;
            Err(Failure::of(
                Kind::VerifyFailed,
                format!("verify failed at {finding}"),
            ))
        }
    }
}

/// Refuses `--archive` files a rebuild would not read, on a read-only look (the log's bytes
/// stay as they were): one that is not there, and any at all for a log no cut ever made,
/// which has no archive to read.
fn refuse_unused_archives(
    db: &std::path::Path,
    archives: &[std::path::PathBuf],
) -> Result<(), Failure> {
    if archives.is_empty() {
        return Ok(());
    }
    for archive in archives {
        if std::fs::symlink_metadata(archive).is_err() {
            return Err(Failure::of(
                super::failure::Kind::NotFound,
                format!("--archive {}: no such file", archive.display()),
            ));
        }
    }
    let Ok(reader) = Store::open_read_only(db) else {
        // The writable open says why in its own words.
        return Ok(());
    };
    if reader.snapshot()?.cut().is_none() {
        return Err(Failure::Usage(format!(
            "{}: never cut, so it has no archive to read: drop --archive",
            db.display()
        )));
    }
    Ok(())
}

impl Run for AppendArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        let payload = self.payload.as_deref();
        let payload = payload.and_then(|text| NamedFile::at_file(text, "a payload file"));
        std::iter::once(NamedFile::read(&self.db, "the log"))
            .chain(payload)
            .collect()
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        append(self)
    }
}

impl Run for ImportArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![
            NamedFile::read(&self.file, "an export file"),
            NamedFile::read(&self.db, "the log"),
        ]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        import(self)
    }
}

impl Run for RebuildArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        NamedFile::archives_then_log(&self.archive, &self.log.db)
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        rebuild(self)
    }
}

impl Run for EraseArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.log.db, "the log")]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        erase(self)
    }
}

impl Run for UpgradeArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.log.db, "the log")]
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        upgrade(self)
    }
}

impl Run for DemoArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.db, "the log")]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        demo(self)
    }
}
