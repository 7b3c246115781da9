//! `annals-testing`: the children the crash and race tests start and kill, kept out of the
//! `annals` command line (built only with the `testing` feature).
//!
//! - `annals-testing crash-writer DB [--tasks N] [--records N] [--sharing MODE]
//!   [--checkpoint-bytes N]`: appends through the async writer from `N` tasks (default 8),
//!   printing `durable <position> <hash>` for each append answered, until killed or
//!   `--records` (default 1,000,000); in exclusive mode through the commit journal, drained
//!   every `--checkpoint-bytes` of frames.
//! - `annals-testing rebuild DB`: rebuilds every projection, printing `rebuild at
//!   <position>` on standard error after clearing them and after each batch, then waiting
//!   for a line on standard input, so that a test can kill it between two of the rebuild's
//!   transactions (end of input: go on without waiting).
//! - `annals-testing read DB`: a reader beside a writer, in a process of its own: opens the log
//!   read-only, verifies it (exit 1 naming the problem unless sound), then prints the position
//!   of every record in one snapshot, a line each; `absent` when there is no log yet.
//! - `annals-testing erase DB SUBJECT`: the whole erasure of the subject (`Store::erase`, at
//!   1 ms), as `annals erase` makes it, so that a test can kill it at any moment of it.
//! - `annals-testing erase-halfway DB SUBJECT`: the first half of an erasure (the subject's
//!   erasure event, durable; its key left), then `appended <position>` on standard output and
//!   a wait for a line on standard input, so that a test can kill it between the two halves.
//!
//! Exit codes: 0 done, 1 a failure of annals (printed), 2 bad arguments.

use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use annals::{Sharing, Store, StoreOptions};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("crash-writer") => crash_writer(&args[1..]),
        Some("rebuild") => rebuild(&args[1..]),
        Some("read") => read(&args[1..]),
        Some("erase") => erase(&args[1..]),
        Some("erase-halfway") => erase_halfway(&args[1..]),
        _ => Err(Usage(
            "the subcommand: crash-writer, rebuild, read, erase or erase-halfway".to_owned(),
        )
        .into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(Usage(what))) => {
            eprintln!("annals-testing: bad arguments: {what}");
            ExitCode::from(2)
        }
        Err(Failure::Annals(error)) => {
            eprintln!("annals-testing: {error}");
            ExitCode::from(1)
        }
        Err(Failure::Unsound) => ExitCode::from(1),
    }
}

/// What the arguments got wrong.
struct Usage(String);

enum Failure {
    Usage(Usage),
    Annals(annals::Error),
    /// `read` found the log unsound (the problem printed).
    Unsound,
}

impl From<Usage> for Failure {
    fn from(usage: Usage) -> Self {
        Failure::Usage(usage)
    }
}

impl From<annals::Error> for Failure {
    fn from(error: annals::Error) -> Self {
        Failure::Annals(error)
    }
}

/// `--name value` pairs, in the order given.
type Options<'a> = Vec<(&'a str, &'a str)>;

/// The log path first, then `--name value` options, each known to `known`.
fn parse<'a>(args: &'a [String], known: &[&str]) -> Result<(PathBuf, Options<'a>), Usage> {
    let (db, rest) = args
        .split_first()
        .ok_or_else(|| Usage("the log file".to_owned()))?;
    let mut options = Vec::new();
    let mut rest = rest.iter();
    while let Some(name) = rest.next() {
        if !known.contains(&name.as_str()) {
            return Err(Usage(format!("unknown option {name:?}")));
        }
        let value = rest
            .next()
            .ok_or_else(|| Usage(format!("a value for {name}")))?;
        options.push((name.as_str(), value.as_str()));
    }
    Ok((PathBuf::from(db), options))
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, Usage> {
    value
        .parse()
        .map_err(|_| Usage(format!("{name} {value:?} is not a number")))
}

fn crash_writer(args: &[String]) -> Result<(), Failure> {
    let (db, options) = parse(
        args,
        &["--tasks", "--records", "--sharing", "--checkpoint-bytes"],
    )?;
    let (mut tasks, mut records, mut sharing) = (8, 1_000_000, Sharing::SingleWriter);
    let mut journal = annals::journal::JournalOptions::default();
    for (name, value) in options {
        match name {
            "--tasks" => tasks = number(name, value)?,
            "--records" => records = number(name, value)?,
            "--checkpoint-bytes" => journal.checkpoint_bytes = number(name, value)?,
            _ => {
                sharing = value
                    .parse()
                    .map_err(|error: annals::error::UnknownSharing| Usage(error.to_string()))?
            }
        }
    }
    let mut out = io::stdout().lock();
    annals::testing::crash::write_and_report(&db, sharing, journal, tasks, records, &mut out)?;
    Ok(())
}

fn rebuild(args: &[String]) -> Result<(), Failure> {
    let (db, _) = parse(args, &[])?;
    let store = Store::open_with(
        &db,
        StoreOptions {
            create: false,
            ..StoreOptions::default()
        },
    )?;
    let mut stdin = io::stdin().lock();
    annals::maintenance::Rebuild::of(&store).run_with(None, &mut |done| {
        eprintln!("rebuild at {done}");
        let mut line = String::new();
        let _ = stdin.read_line(&mut line);
    })?;
    store.close()?;
    Ok(())
}

fn read(args: &[String]) -> Result<(), Failure> {
    let [db] = args else {
        return Err(Usage("read DB".to_owned()).into());
    };
    let store = match Store::open_read_only(db) {
        Err(error) if error.kind() == annals::ErrorKind::NotFound => {
            println!("absent");
            return Ok(());
        }
        opened => opened?,
    };
    let report = annals::Audit::of(&store).verify()?;
    if let Some(problem) = report.problem {
        eprintln!("annals-testing: unsound: {problem}");
        return Err(Failure::Unsound);
    }
    let mut out = io::stdout().lock();
    for record in store
        .snapshot()?
        .records(annals::Position(0), annals::Direction::Forward)?
    {
        writeln!(out, "{}", record?.position).map_err(annals::Error::from)?;
    }
    Ok(())
}

fn erase(args: &[String]) -> Result<(), Failure> {
    let [db, subject] = args else {
        return Err(Usage("erase DB SUBJECT".to_owned()).into());
    };
    let store = Store::open_with(db, annals::StoreOptions::default())?;
    store.erase(subject, 1)?;
    store.close()?;
    Ok(())
}

fn erase_halfway(args: &[String]) -> Result<(), Failure> {
    let [db, subject] = args else {
        return Err(Usage("erase-halfway DB SUBJECT".to_owned()).into());
    };
    let store = Store::open_with(db, annals::StoreOptions::default())?;
    let position = annals::testing::internals::append_erasure_event(&store, subject, 1)?;
    println!("appended {position}");
    let mut line = String::new();
    let _ = io::stdin().lock().read_line(&mut line);
    Ok(())
}
