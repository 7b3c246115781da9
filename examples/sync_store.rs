//! A store used from plain synchronous code: append events of your own, run a command of a
//! built-in domain (a lease), read the log back and verify it.
//!
//! `cargo run --example sync_store`

use annals::leases::{self, LeaseCommand, LeaseOutcome};
use annals::{Direction, ExpectedVersion, NewEvent, Position, Store};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path().join("annals.redb"))?;
    // The caller supplies the clock; the log records it and replays never read one.
    let now_ms = 1_700_000_000_000;

    // Events of the program's own kinds: an append is atomic, and the idempotency key makes a
    // retry of the same append a duplicate rather than a second record.
    let started = NewEvent::new("deploy.started", now_ms, br#"{"version":"v42"}"#.to_vec())
        .with_idempotency_key("deploy-42");
    let first = store.append(
        "deploy/web",
        ExpectedVersion::NoStream,
        std::slice::from_ref(&started),
    )?;
    let retry = store.append("deploy/web", ExpectedVersion::Any, &[started])?;
    assert_eq!(first.first_position(), retry.first_position());
    println!("deploy.started at position {}", first.first_position());

    // A command decides against the leases projection and records its decision as events.
    let acquire = LeaseCommand::Acquire {
        resource: "deploy-lock".into(),
        holder: "agent-7".into(),
        ttl_ms: 30_000,
        now_ms,
    };
    let LeaseOutcome::Granted { lease, .. } = store.execute(&acquire)? else {
        return Err("the lease is free, so it is granted".into());
    };
    println!(
        "deploy-lock granted to agent-7 with fencing token {}",
        lease.token.0
    );
    // Another holder is refused while the lease is live: a refusal is a value, not an error.
    let contender = LeaseCommand::Acquire {
        resource: "deploy-lock".into(),
        holder: "agent-9".into(),
        ttl_ms: 30_000,
        now_ms: now_ms + 1_000,
    };
    let refused = store.execute(&contender)?;
    assert!(!matches!(refused, LeaseOutcome::Granted { .. }));
    assert_eq!(
        leases::lease(&store.snapshot()?.state(), "deploy-lock")?,
        Some(lease)
    );

    for record in store
        .snapshot()?
        .read_all(Position(0), Direction::Forward, 100)?
    {
        println!("{:>3} {} {}", record.position, record.stream, record.kind);
    }
    let report = annals::Audit::of(&store).verify()?;
    assert!(report.is_sound());
    println!("verify: sound, {} records", report.records);
    Ok(())
}
