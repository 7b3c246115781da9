//! The peak memory of a rebuild, at one and at two times the log.

use std::path::Path;

use annals::Store;

use crate::Settings;
use crate::bulk::bulk_annals;

/// Peak resident memory of a rebuild of the log at `path` (1x), then of the same log with as
/// many events again appended (2x); each in a child process of its own.
pub(crate) fn rebuild_rss(settings: &Settings, path: &Path) -> (f64, f64) {
    let one = rss_of_child(path);
    bulk_annals(path, settings.events, settings.events);
    let two = rss_of_child(path);
    (one, two)
}

pub(crate) fn rss_of_child(path: &Path) -> f64 {
    let output = std::process::Command::new(std::env::current_exe().expect("this program"))
        .arg("--rss-child")
        .arg(path)
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
    let store = Store::open_existing(path).expect("the log");
    store.rebuild(None).expect("a rebuild");
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    println!("{}", kib * 1024.0);
}
