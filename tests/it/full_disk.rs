//! A full disk is an error, never a success. On the simulated disk filling up at every
//! operation of a workload (open, append, command, the async writer, rebuild, close), each
//! call either succeeds or fails with `Error::NoSpace` naming the log; a fault that struck is
//! reported by some call (closing included); the log restarts sound with everything
//! acknowledged, and takes writes once space is freed. The command line on a real, full
//! tmpfs is `cli/tests/cli/full_disk.rs`.

use annals::testing::setup::ExpectDone;
use std::sync::Arc;

use annals::leases::LeaseCommand;
use annals::testing::faults::base_image;
use annals::testing::sim::{Fault, SimDisk, Trigger};
use annals::writer::{Writer, WriterOptions};
use annals::{ExpectedVersion, Position, Store, StoreOptions, log::Head};

use crate::common::event;

fn options() -> StoreOptions {
    StoreOptions {
        create: true,
        ..StoreOptions::default()
    }
}

const NO_SPACE: &str = "no space left on the device holding";

/// Each call of the workload: `Ok` with the head it left when it wrote, or the error's text.
fn workload(disk: &SimDisk) -> Vec<Result<Option<Head>, String>> {
    let mut calls = Vec::new();
    let store = match Store::open_with_backend(disk.backend(), options()) {
        Ok(store) => Arc::new(store),
        Err(error) => return vec![Err(error.to_string())],
    };
    let head = |store: &Store| store.snapshot().and_then(|snapshot| snapshot.head()).ok();
    let appended = store.append(
        "disk/raw",
        ExpectedVersion::Any,
        &[event("disk.raw", 1, b"x")],
    );
    calls.push(appended.map(|_| head(&store)).map_err(|e| e.to_string()));
    let command = LeaseCommand::Acquire {
        resource: "disk".into(),
        holder: "a".into(),
        ttl_ms: 1_000,
        now_ms: 5_000,
    };
    calls.push(
        store
            .execute(&command)
            .map(|_| head(&store))
            .map_err(|e| e.to_string()),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    match Writer::start(Arc::clone(&store), WriterOptions::default()) {
        Ok(writer) => {
            let written = runtime.block_on(writer.append(
                "disk/writer",
                ExpectedVersion::Any,
                vec![event("disk.writer", 2, b"y")],
            ));
            calls.push(written.map(|_| head(&store)).map_err(|e| e.to_string()));
            let closed = runtime.block_on(writer.close());
            calls.push(closed.map(|()| None).map_err(|e| e.to_string()));
        }
        Err(error) => calls.push(Err(error.to_string())),
    }
    calls.push(
        annals::maintenance::Rebuild::of(&store)
            .run(None)
            .map(|()| head(&store))
            .map_err(|e| e.to_string()),
    );
    match Arc::try_unwrap(store) {
        Ok(store) => calls.push(store.close().map(|()| None).map_err(|e| e.to_string())),
        Err(_) => panic!("the writer still holds the store"),
    }
    calls
}

fn reopened(image: Vec<u8>) -> Store {
    Store::open_with_backend(SimDisk::new(image, Fault::None).backend(), options())
        .unwrap_or_else(|error| panic!("the log does not reopen: {error}"))
}

#[test]
fn a_simulated_disk_filling_up_at_any_operation_is_an_error_naming_it_and_loses_nothing() {
    let (mut k, mut struck, mut close_alone) = (1, 0, 0);
    loop {
        let disk = SimDisk::new(base_image().to_vec(), Fault::NoSpace(Trigger::Op(k)));
        let calls = workload(&disk);
        if !disk.struck() {
            assert!(calls.iter().all(Result::is_ok), "{calls:?}");
            break;
        }
        struck += 1;
        let failed: Vec<&String> = calls.iter().filter_map(|c| c.as_ref().err()).collect();
        assert!(
            !failed.is_empty(),
            "op {k}: the disk filled up, every call succeeded"
        );
        for error in &failed {
            assert!(error.contains(NO_SPACE), "op {k}: {error}: {calls:?}");
        }
        if failed.len() == 1 && calls.last().is_some_and(Result::is_err) {
            close_alone += 1;
        }
        // A restart finds every acknowledged write, and catches up what a failed rebuild
        // left behind.
        let store = reopened(disk.image_after_restart());
        let report = annals::Audit::of(&store).verify().unwrap();
        assert!(
            report.is_sound() && report.behind.is_empty(),
            "op {k}: {report:?}"
        );
        for head in calls.iter().filter_map(|c| c.clone().ok().flatten()) {
            let last = store
                .snapshot()
                .unwrap()
                .get(Position(head.next.0 - 1))
                .unwrap()
                .map(|r| r.hash);
            assert_eq!(
                last,
                Some(head.hash),
                "op {k}: an acknowledged write is lost"
            );
        }
        drop(store);
        // Without a restart: space freed, the same disk takes writes again.
        disk.free_space();
        let store = reopened(disk.image_after_restart());
        store
            .append(
                "disk/after",
                ExpectedVersion::Any,
                &[event("disk.after", 3, b"z")],
            )
            .unwrap()
            .expect_done();
        assert!(
            annals::Audit::of(&store).verify().unwrap().is_sound(),
            "op {k}"
        );
        k += 1;
        assert!(k < 5_000, "the workload never completes");
    }
    assert!(struck > 20, "the disk filled up only {struck} times");
    assert!(close_alone > 0, "no fault struck while the store closed");
    eprintln!("full simulated disk: {struck} fill points, {close_alone} reported only by close");
}
