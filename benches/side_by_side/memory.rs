//! Peak memory: of a rebuild in this process's child, at one and at two times the log; and of
//! each `annals` command run as a child process on demo logs of two sizes
//! ([`command_rss`]), read from GNU time's report of the child's `wait4` (its maximum
//! resident set), since the standard library reads no child's resource use.

use std::path::Path;
use std::process::{Command, Stdio};

use annals::Store;

use crate::Settings;
use crate::bulk::bulk_annals;
use crate::samples::disk_bytes;

/// Peak resident memory of a rebuild of the log at `path` (1x), then of the same log with as
/// many events again appended (2x); each in a child process of its own.
pub(crate) fn rebuild_rss(settings: &Settings, path: &Path) -> (f64, f64) {
    let one = rss_of_child(path);
    bulk_annals(path, settings.events, settings.events);
    let two = rss_of_child(path);
    (one, two)
}

pub(crate) fn rss_of_child(path: &Path) -> f64 {
    peak_of_child(&["--rss-child".as_ref(), path.as_os_str()])
}

/// Runs this program again with `args` (a child mode that prints its peak resident set in
/// bytes, [`peak_rss_bytes`]) and returns what it printed.
pub(crate) fn peak_of_child(args: &[&std::ffi::OsStr]) -> f64 {
    let output = std::process::Command::new(std::env::current_exe().expect("this program"))
        .args(args)
        .output()
        .expect("a child process");
    assert!(
        output.status.success(),
        "the child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("the child prints its peak in bytes")
}

/// In the child: rebuild every projection of the log at `path`, then print the peak resident
/// set (`VmHWM`) in bytes.
pub(crate) fn rss_child(path: &Path) {
    let store = Store::open_with(path, annals::StoreOptions::default()).expect("the log");
    annals::maintenance::Rebuild::of(&store)
        .run(None)
        .expect("a rebuild");
    println!("{}", peak_rss_bytes());
}

/// This process's peak resident set (`VmHWM`), in bytes.
pub(crate) fn peak_rss_bytes() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kib * 1024.0
}

/// GNU time, which reports a child's peak resident set (`-v`); without it the command rows
/// are skipped with a note.
const GNU_TIME: &str = "/usr/bin/time";

/// Memory each command may take at the larger demo log, in bytes (issue 14's target).
pub(crate) const COMMAND_RSS_BYTES_MAX: f64 = 100e6;
/// How much more a command may take at the larger log than at the smaller (twice as many
/// records): memory that stays flat.
pub(crate) const COMMAND_RSS_GROWTH_MAX: f64 = 1.2;

/// The commands measured, as `annals` arguments after the subcommand: `{db}` is the demo log,
/// `{export}` an export file of it, `{imported}` a path with no file yet. Their standard output
/// goes to /dev/null.
pub(crate) const MEASURED: [(&str, &[&str]); 20] = [
    ("verify", &["verify", "{db}"]),
    ("rebuild", &["rebuild", "{db}"]),
    ("export", &["export", "{db}", "{export}"]),
    ("import", &["import", "{export}", "{imported}"]),
    ("history", &["history", "{db}", "lease:deploy-lock"]),
    ("log", &["log", "{db}"]),
    ("log --json", &["log", "{db}", "--json"]),
    ("state registry", &["state", "{db}", "registry"]),
    (
        "state registry --json",
        &["state", "{db}", "registry", "--json"],
    ),
    ("state leases", &["state", "{db}", "leases"]),
    (
        "state leases --json",
        &["state", "{db}", "leases", "--json"],
    ),
    ("state outbox", &["state", "{db}", "outbox"]),
    (
        "state outbox --json",
        &["state", "{db}", "outbox", "--json"],
    ),
    ("state runs", &["state", "{db}", "runs"]),
    ("state runs --json", &["state", "{db}", "runs", "--json"]),
    ("state consumers", &["state", "{db}", "consumers"]),
    (
        "state consumers --json",
        &["state", "{db}", "consumers", "--json"],
    ),
    ("stats", &["stats", "{db}"]),
    ("streams", &["streams", "{db}"]),
    ("compact", &["compact", "{copy}"]),
];

/// The demo log's bytes against its export's, at one of the two sizes: the demo writes each
/// command as its own transaction, as a live host does.
pub(crate) struct DemoFootprint {
    pub(crate) records: usize,
    /// Blocks the demo log has on disk right after the demo wrote it.
    pub(crate) log_disk: f64,
    /// Its length, which redb grows by doubling and so may run ahead of the blocks written.
    pub(crate) log_file: f64,
    /// The export file's length: the records' canonical stored bytes.
    pub(crate) export: f64,
    /// Blocks on disk of the log `import` built from that export.
    pub(crate) imported_disk: f64,
}

/// How many times its export's bytes the live demo log may take on disk (issue 14's target,
/// at the smaller size, 500,000 records in a full run).
pub(crate) const DEMO_DISK_VS_EXPORT_MAX: f64 = 1.5;

/// One command's peak resident set at the two demo logs' sizes, in bytes.
pub(crate) struct CommandRss {
    pub(crate) command: &'static str,
    pub(crate) small: f64,
    pub(crate) large: f64,
}

/// Every command of [`MEASURED`], and `demo` itself (which writes the logs and verifies
/// them), run by `binary` on demo logs of `sizes` records in `dir`. `None` without GNU time.
/// The demo commits with `--durability deferred`: the records are those of its default,
/// durable commits (the same head hash), written without one fsync per command.
pub(crate) fn command_rss(
    binary: &Path,
    dir: &Path,
    sizes: [usize; 2],
) -> Option<(Vec<CommandRss>, Vec<DemoFootprint>)> {
    if !Path::new(GNU_TIME).is_file() {
        return None;
    }
    let mut footprints = Vec::new();
    let mut peaks: Vec<(&'static str, [f64; 2])> = Vec::new();
    let mut record = |command: &'static str, at: usize, peak: f64| match peaks
        .iter_mut()
        .find(|(name, _)| *name == command)
    {
        Some((_, both)) => both[at] = peak,
        None => {
            let mut both = [f64::NAN; 2];
            both[at] = peak;
            peaks.push((command, both));
        }
    };
    for (at, records) in sizes.into_iter().enumerate() {
        let db = dir.join(format!("demo-{records}.redb"));
        let _ = std::fs::remove_file(&db);
        eprintln!("memory: demo --records {records}");
        record(
            "demo",
            at,
            peak_rss(
                binary,
                &[
                    "demo".into(),
                    db.clone().into(),
                    "--records".into(),
                    records.to_string().into(),
                    // The same records as a live host's single commits, durable every few
                    // thousand: a million in minutes rather than one fsync per command.
                    "--durability".into(),
                    "deferred".into(),
                    "--sharing".into(),
                    "exclusive".into(),
                ],
            ),
        );
        // Before `rebuild` and `compact` below rewrite pages of it.
        let (log_disk, log_file) = (disk_bytes(&db), file_bytes(&db));
        let export = dir.join(format!("demo-{records}.export"));
        let imported = dir.join(format!("demo-{records}-imported.redb"));
        let copy = dir.join(format!("demo-{records}-copy.redb"));
        for (command, args) in MEASURED {
            if command == "import" {
                let _ = std::fs::remove_file(&imported);
            }
            if command == "compact" {
                std::fs::copy(&db, &copy).expect("a copy of the demo log to compact");
            }
            let args: Vec<std::ffi::OsString> = args
                .iter()
                .map(|arg| match *arg {
                    "{db}" => db.clone().into(),
                    "{export}" => export.clone().into(),
                    "{imported}" => imported.clone().into(),
                    "{copy}" => copy.clone().into(),
                    other => other.into(),
                })
                .collect();
            eprintln!("memory: {command} at {records} records");
            record(command, at, peak_rss(binary, &args));
        }
        footprints.push(DemoFootprint {
            records,
            log_disk,
            log_file,
            export: file_bytes(&export),
            imported_disk: disk_bytes(&imported),
        });
        for path in [&db, &export, &imported, &copy] {
            let _ = std::fs::remove_file(path);
        }
    }
    let rows = peaks
        .into_iter()
        .map(|(command, [small, large])| CommandRss {
            command,
            small,
            large,
        })
        .collect();
    Some((rows, footprints))
}

fn file_bytes(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(f64::NAN, |m| m.len() as f64)
}

/// The peak resident set of `binary args`, in bytes, as GNU time reports it; the command
/// must succeed.
fn peak_rss(binary: &Path, args: &[std::ffi::OsString]) -> f64 {
    let output = Command::new(GNU_TIME)
        .arg("-v")
        .arg(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("GNU time runs");
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "annals {args:?} failed: {report}");
    let kib: f64 = report
        .lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix("Maximum resident set size (kbytes):")
        })
        .and_then(|kib| kib.trim().parse().ok())
        .expect("GNU time reports the maximum resident set size");
    kib * 1024.0
}

/// The demo logs' sizes for the command rows: 500,000 and 1,000,000 records in a full run.
pub(crate) fn command_sizes(quick: bool, smoke: bool) -> [usize; 2] {
    match (smoke, quick) {
        (true, _) => [2_000, 4_000],
        (_, true) => [20_000, 40_000],
        _ => [500_000, 1_000_000],
    }
}

/// The command rows of a run (see [`command_rss`]) as the report's JSON, on demo logs in a
/// temporary folder under the target directory (a real disk); `None`, with a note printed,
/// without the `annals` binary or GNU time.
pub(crate) fn command_memory(settings: &Settings) -> Option<serde_json::Value> {
    let Some(binary) = settings.tail_binary.as_deref() else {
        println!("note: no annals binary beside this bench; the commands' memory is skipped");
        return None;
    };
    let sizes = command_sizes(settings.quick, settings.smoke);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
    let Some((rows, footprints)) = command_rss(binary, dir.path(), sizes) else {
        println!("note: no GNU time at {GNU_TIME}; the commands' memory is skipped");
        return None;
    };
    Some(crate::report::memory_json(&rows, &footprints, sizes))
}
