//! Personal data through replication (issue 55, point 4; `docs/erasure.md`): the messages carry
//! the envelopes and never a key; a follower without the key reads every personal payload as
//! erased and verifies; one given the writer's key export reads them, and lets its copy of a
//! key go when the subject's erasure reaches it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use annals::replication::ReplicatingWriter;
use annals::{ExpectedVersion, NewEvent, Position, Store, erasure::Payload};

use crate::cluster::{Cluster, follower, log};
use crate::files::{contains, files_under};

/// The plaintext personal to `alice`: searched for in every message and file.
const PLAINTEXT: &[u8] = b"ada.lovelace@example.com replicated-marker-91c2";

/// The keys of the key store beside the log at `log` (`schema/FORMAT.md` 3.16), by subject.
fn keys_of(log: &Path) -> Vec<(String, Vec<u8>)> {
    let mut name = log.as_os_str().to_owned();
    name.push(".keys");
    let bytes = std::fs::read(PathBuf::from(name)).expect("the key store");
    let count = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    let (mut at, mut keys) = (16, Vec::new());
    for _ in 0..count {
        let len = usize::from(bytes[at]);
        let subject = String::from_utf8(bytes[at + 1..at + 1 + len].to_vec()).unwrap();
        at += 1 + len;
        keys.push((subject, bytes[at..at + 32].to_vec()));
        at += 32;
    }
    keys
}

fn personal(store: &Store, subject: &str, payload: &[u8]) -> Position {
    let event = NewEvent::new("email.set", 1_000, payload.to_vec());
    let stream = format!("people/{subject}");
    store
        .append_personal(subject, &stream, ExpectedVersion::Any, &[event])
        .expect("a personal append")
        .first_position()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_reads_personal_payloads_as_erased_without_the_key_and_no_message_holds_it() {
    let cluster = Cluster::single("");
    let (writer_dir, follower_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let log = log("erasure").with_replicas(1);
    let writer_path = writer_dir.path().join("writer.redb");
    let writer_store = Arc::new(Store::open(&writer_path).unwrap());
    let writer = ReplicatingWriter::start(
        Arc::clone(&writer_store),
        cluster.jetstream().await,
        log.clone(),
    );
    let alice = personal(&writer_store, "alice", PLAINTEXT);
    let bob = personal(&writer_store, "bob", b"bob's own words");
    let plain = writer_store
        .append(
            "notes",
            ExpectedVersion::Any,
            &[NewEvent::new("note", 1, "hi")],
        )
        .unwrap()
        .first_position();
    let head = writer_store.snapshot().unwrap().head().unwrap().next;
    writer.replicated(head).await.unwrap();
    let keys = keys_of(&writer_path);
    assert_eq!(keys.len(), 2, "alice's and bob's keys");

    let follower_path = follower_dir.path().join("follower.redb");
    let store = Arc::new(Store::open(&follower_path).unwrap());
    let follower = Arc::new(follower(&store, cluster.jetstream().await, &log));
    let running = Arc::clone(&follower);
    let task = tokio::spawn(async move { running.run().await });
    follower.head().wait_for(|at| *at >= head).await.unwrap();
    let replica = follower.store();
    for (position, subject) in [(alice, "alice"), (bob, "bob")] {
        let sealed = writer_store
            .snapshot()
            .unwrap()
            .get(position)
            .unwrap()
            .unwrap();
        assert_eq!(
            replica.snapshot().unwrap().get(position).unwrap().unwrap(),
            sealed
        );
        assert_eq!(
            annals::erasure::PayloadReader::of(replica)
                .unwrap()
                .open(&sealed)
                .unwrap(),
            Payload::Erased { subject }
        );
    }
    let note = replica.snapshot().unwrap().get(plain).unwrap().unwrap();
    assert_eq!(
        annals::erasure::PayloadReader::of(replica)
            .unwrap()
            .open(&note)
            .unwrap(),
        Payload::Plain(b"hi")
    );
    assert!(annals::Audit::of(replica).verify().unwrap().is_sound());

    // The stream's messages carry the envelopes, never a key nor the plaintext.
    let jetstream = cluster.jetstream().await;
    let stream = jetstream.get_stream(log.stream_name()).await.unwrap();
    let last = stream.get_info().await.unwrap().state.last_sequence;
    let mut messages = Vec::new();
    for sequence in 1..=last {
        let message = stream.get_raw_message(sequence).await.unwrap();
        messages.extend_from_slice(&message.payload);
    }
    let envelope = writer_store
        .snapshot()
        .unwrap()
        .get(alice)
        .unwrap()
        .unwrap()
        .payload;
    assert!(
        contains(&messages, &envelope),
        "the messages hold the envelope"
    );
    let mut files = Vec::new();
    files_under(follower_dir.path(), &mut files);
    files_under(cluster.dir(), &mut files);
    assert!(files.iter().any(|file| file.starts_with(cluster.dir())));
    let mut searched = vec![("the stream's messages".to_owned(), messages)];
    for file in files {
        searched.push((file.display().to_string(), std::fs::read(&file).unwrap()));
    }
    for (what, bytes) in &searched {
        assert!(!contains(bytes, PLAINTEXT), "{what} holds the plaintext");
        for (subject, key) in &keys {
            assert!(!contains(bytes, key), "{what} holds {subject}'s key");
        }
    }
    assert!(!follower_path.with_extension("redb.keys").exists());

    // A trusted replica, given the writer's key export, reads them; alice's erasure, when it
    // reaches it, destroys its copy of her key.
    let export = writer_dir.path().join("keys.export");
    assert_eq!(
        annals::erasure::Keys::of(&writer_store)
            .export(&export)
            .unwrap()
            .subjects,
        ["alice", "bob"]
    );
    assert_eq!(
        annals::erasure::Keys::of(replica)
            .import(&export)
            .unwrap()
            .imported,
        ["alice", "bob"]
    );
    let sealed = writer_store
        .snapshot()
        .unwrap()
        .get(alice)
        .unwrap()
        .unwrap();
    assert_eq!(
        annals::erasure::PayloadReader::of(replica)
            .unwrap()
            .open(&sealed)
            .unwrap()
            .data(),
        Some(PLAINTEXT)
    );
    let erasure = writer_store.erase("alice", 2_000).unwrap();
    let head = writer_store.snapshot().unwrap().head().unwrap().next;
    writer.replicated(head).await.unwrap();
    follower.head().wait_for(|at| *at >= head).await.unwrap();
    assert_eq!(
        replica
            .snapshot()
            .unwrap()
            .get(erasure.position)
            .unwrap()
            .unwrap()
            .kind,
        "subject.erased"
    );
    assert_eq!(
        annals::erasure::PayloadReader::of(replica)
            .unwrap()
            .open(&sealed)
            .unwrap(),
        Payload::Erased { subject: "alice" }
    );
    let held = keys_of(&follower_path);
    assert_eq!(
        held.iter()
            .map(|(subject, _)| subject.as_str())
            .collect::<Vec<_>>(),
        ["bob"],
        "the replica's copy of alice's key is destroyed"
    );
    let alice_key = &keys
        .iter()
        .find(|(subject, _)| subject == "alice")
        .unwrap()
        .1;
    let mut follower_files = Vec::new();
    files_under(follower_dir.path(), &mut follower_files);
    for file in follower_files {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !contains(&bytes, alice_key),
            "{} holds alice's key",
            file.display()
        );
    }
    let bob_record = replica.snapshot().unwrap().get(bob).unwrap().unwrap();
    assert_eq!(
        annals::erasure::PayloadReader::of(replica)
            .unwrap()
            .open(&bob_record)
            .unwrap()
            .data(),
        Some(&b"bob's own words"[..])
    );
    assert!(annals::Audit::of(replica).verify().unwrap().is_sound());
    assert!(
        annals::Audit::of(&writer_store)
            .verify()
            .unwrap()
            .is_sound()
    );
    assert!(!task.is_finished(), "the follower stopped");
    task.abort();
    writer.stop();
}
