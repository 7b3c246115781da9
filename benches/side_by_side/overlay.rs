//! `-- --overlay-only`: what a command of the reference mix costs in CPU when it commits no
//! redb transaction of its own (issue 51's overlay), side by side in one run with what it
//! costs through redb's in-memory commit and what SQLite spends on it. No figure syncs: the
//! journal's one `fdatasync` per commit is the same for all three and is measured by
//! `--journal-only`'s floors.
//!
//! - `overlay.mix1_overlay`: the sequential mix decided and applied in a write session over
//!   the overlay and published, the overlay drained into the file (one non-durable redb
//!   commit) every 4,096 commands;
//! - `overlay.mix1_redb_in_memory`: the same commands each in its own redb write transaction
//!   committed with `Durability::Deferred` (in memory, exclusive), made durable every 4,096:
//!   today's journaled commit less its journal write;
//! - `overlay.mix1_sqlite_unsynced`: SQLite (WAL) with `synchronous=OFF`, one transaction per
//!   command.

use std::path::Path;
use std::time::{Duration, Instant};

use annals::testing::internals::overlay::OverlayStore;
use annals::{Sharing, Store, StoreOptions};

use crate::mixed::{Client, execute_deferred, execute_overlay};
use crate::mixed_sqlite::{command as sqlite_command, open};
use crate::samples::{Samples, per_second};

/// A new exclusive store at `path` without a journal: the overlay's and redb's contenders
/// write to the file alone.
fn exclusive(path: &Path) -> Store {
    let options = StoreOptions {
        create: true,
        sharing: Sharing::Exclusive,
        journal: None,
        ..StoreOptions::default()
    };
    Store::open_with(path, options).expect("a store")
}

fn overlay(path: &Path, run_for: Duration) -> f64 {
    let store = exclusive(path);
    let mut overlay = OverlayStore::new(&store);
    let mut client = Client::new(0);
    let started = Instant::now();
    while started.elapsed() < run_for {
        let token = execute_overlay(&mut overlay, client.command());
        client.advance(token);
    }
    overlay.drain().expect("the last drain");
    per_second(client.done, started.elapsed())
}

fn redb_in_memory(path: &Path, run_for: Duration) -> f64 {
    let store = exclusive(path);
    let mut client = Client::new(0);
    let started = Instant::now();
    while started.elapsed() < run_for {
        let token = execute_deferred(&store, client.command());
        client.advance(token);
        if client.done.is_multiple_of(4_096) {
            store.flush().expect("a flush");
        }
    }
    store.flush().expect("the last flush");
    per_second(client.done, started.elapsed())
}

fn sqlite_unsynced(path: &Path, run_for: Duration) -> f64 {
    let mut conn = open(path);
    conn.pragma_update(None, "synchronous", "OFF")
        .expect("synchronous=OFF");
    let mut client = Client::new(0);
    let started = Instant::now();
    while started.elapsed() < run_for {
        let token = sqlite_command(&mut conn, &client);
        client.advance(token);
    }
    per_second(client.done, started.elapsed())
}

type Contender<'a> = (&'static str, Box<dyn Fn() -> f64 + 'a>);

/// One round: the three contenders, their order turned by `round`.
pub(crate) fn run_overlay(run_for: Duration, round: usize, samples: &mut Samples) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
    let at = |name: &str| dir.path().join(name);
    let mut contenders: Vec<Contender<'_>> = vec![
        (
            "overlay.mix1_overlay",
            Box::new(|| overlay(&at("overlay.redb"), run_for)),
        ),
        (
            "overlay.mix1_redb_in_memory",
            Box::new(|| redb_in_memory(&at("in-memory.redb"), run_for)),
        ),
        (
            "overlay.mix1_sqlite_unsynced",
            Box::new(|| sqlite_unsynced(&at("unsynced.sqlite"), run_for)),
        ),
    ];
    let turn = round % contenders.len();
    contenders.rotate_left(turn);
    for (key, run) in &contenders {
        samples.push(key, run());
    }
}

/// The figures, in commands per second and µs of CPU per command, with the ratios.
pub(crate) fn print_overlay(samples: &Samples, rounds: usize) {
    println!("commit path CPU, {rounds} rounds, medians (range over rounds); nothing synced\n");
    println!("| figure | commands/s | µs per command | range |");
    println!("|---|---:|---:|---|");
    for key in [
        "overlay.mix1_overlay",
        "overlay.mix1_redb_in_memory",
        "overlay.mix1_sqlite_unsynced",
    ] {
        let median = samples.median(key);
        let (low, high) = samples.spread(key);
        println!(
            "| {key} | {median:.0} | {:.1} | {low:.0}–{high:.0} |",
            1e6 / median
        );
    }
    let ratio = |a: &str, b: &str| samples.median(a) / samples.median(b);
    println!(
        "\noverlay / redb in memory: {:.2}×; overlay / SQLite unsynced: {:.2}×; redb in memory / SQLite unsynced: {:.2}×",
        ratio("overlay.mix1_overlay", "overlay.mix1_redb_in_memory"),
        ratio("overlay.mix1_overlay", "overlay.mix1_sqlite_unsynced"),
        ratio(
            "overlay.mix1_redb_in_memory",
            "overlay.mix1_sqlite_unsynced"
        ),
    );
}
