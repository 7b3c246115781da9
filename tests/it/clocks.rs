//! ARCHITECTURE.md says what below the command line reads a clock or the system's randomness,
//! and why; this test holds the code to that list. A clock read where the list does not name
//! it, or a list entry the code no longer needs, fails here, so the map stays true.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// What reads the time or randomness, as the code spells it.
const READS: &[&str] = &["Instant::now(", "SystemTime::now(", "OsRng", "thread_rng("];

/// Every file under `src/` and `format/src/` (the `testing` helpers aside) allowed to read a clock or the
/// system's randomness, with how many reads and why; none is a domain, and none reads into
/// an event or a projection's row.
const ALLOWED: &[(&str, usize, &str)] = &[
    (
        "src/journal/header.rs",
        1,
        "a journal's random marker, telling one journal from another",
    ),
    (
        "src/journal/mod.rs",
        3,
        "the monotonic time since the last drain, which bounds its interval",
    ),
    (
        "src/store/open.rs",
        1,
        "the monotonic time an open has waited for a held file",
    ),
    (
        "src/store/keys.rs",
        2,
        "a subject's new data key and each personal envelope's nonce (erasure), on the command path",
    ),
    (
        "src/store/patient.rs",
        1,
        "the monotonic time a multi-writer has waited for another process's lock",
    ),
    (
        "src/replication/stream.rs",
        2,
        "the monotonic time a NATS connection or fetch has waited",
    ),
    (
        "format/src/tlog/note.rs",
        1,
        "a new signing key's seed (`keygen`)",
    ),
    (
        "src/witness/serve.rs",
        3,
        "the witness server's rate window, and a cosignature's timestamp",
    ),
];

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            if !path.ends_with("testing") {
                sources(&path, found);
            }
        } else if path.extension().is_some_and(|extension| extension == "rs")
            && !path.ends_with("tests.rs")
        {
            found.push(path);
        }
    }
}

/// How many reads of the time or randomness each file under `src/` and `format/src/` (the
/// format crate, below the library) holds, outside its tests.
fn reads(root: &Path) -> BTreeMap<String, usize> {
    let mut files = Vec::new();
    for folder in ["src", "format/src"] {
        if root.join(folder).is_dir() {
            sources(&root.join(folder), &mut files);
        }
    }
    let mut counted = BTreeMap::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("a source file");
        // A file's own tests may read a clock; only the code above them counts, and neither
        // comments nor imports.
        let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or("");
        let count = code
            .lines()
            .map(str::trim_start)
            .filter(|line| !line.starts_with("//") && !line.starts_with("use "))
            .map(|line| READS.iter().filter(|read| line.contains(*read)).count())
            .sum::<usize>();
        if count > 0 {
            let name = file.strip_prefix(root).expect("under the root");
            counted.insert(name.to_string_lossy().replace('\\', "/"), count);
        }
    }
    counted
}

#[test]
fn only_the_files_the_map_names_read_a_clock_or_randomness_below_the_command_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let allowed: BTreeMap<String, usize> = ALLOWED
        .iter()
        .map(|(file, count, _)| ((*file).to_owned(), *count))
        .collect();
    assert_eq!(
        reads(root),
        allowed,
        "update ALLOWED and ARCHITECTURE.md's list together"
    );
    let map = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("the map");
    for (file, _, _) in ALLOWED {
        assert!(
            map.contains(&format!("`{file}`")),
            "ARCHITECTURE.md names {file}"
        );
    }
}

#[test]
fn a_clock_read_in_a_domain_would_be_counted() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let leases = dir.path().join("src/leases");
    fs::create_dir_all(&leases).expect("a folder");
    fs::write(
        leases.join("apply.rs"),
        "fn apply() { let now = std::time::SystemTime::now(); }\n#[cfg(test)]\nmod tests { fn t() { std::time::Instant::now(); } }\n",
    )
    .expect("a file");
    assert_eq!(
        reads(dir.path()),
        BTreeMap::from([("src/leases/apply.rs".to_owned(), 1)])
    );
}
