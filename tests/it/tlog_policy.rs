//! c2sp.org/tlog-policy: the specification's example with real keys, every rule that makes a
//! file malformed refused with its line, and quorums of nested groups decided on checkpoints
//! that witnesses of both signature types cosigned.

use annals::tlog::policy::{POLICY_BYTES_MAX, PolicyCheckError};
use annals::tlog::{Cosigner, Note, Policy, PolicyError, PolicyProblem, Signer};

const BODY: &str = "example.com/log\n3\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\n";

fn log() -> Signer {
    Signer::from_seed("example.com/log", [1; 32]).unwrap()
}

/// Witness `n`: ML-DSA-44 for even `n`, Ed25519 for odd, so every quorum mixes both.
fn witness(n: u8) -> Cosigner {
    let name = format!("witness.example/w{n}");
    match n % 2 {
        0 => Cosigner::ml_dsa_44_from_seed(&name, [n; 32]).unwrap(),
        _ => Cosigner::from_seed(&name, [n; 32]).unwrap(),
    }
}

/// The specification's example policy ("Example policy"), its `<vkey>`s filled in: X1..X3
/// are witnesses 1..3, Y1..Y3 witnesses 4..6.
fn spec_example() -> String {
    let v = |n: u8| witness(n).verifier().to_string();
    format!(
        "log {}\n\nwitness X1 {}\nwitness X2 {}\nwitness X3 {}\ngroup X-witnesses 2 X1 X2 X3\n\n\
         witness Y1 {}\nwitness Y2 {}\nwitness Y3 {}\ngroup Y-witnesses any Y1 Y2 Y3\n\n\
         group X-and-Y all X-witnesses Y-witnesses\nquorum X-and-Y\n",
        log().verifier(),
        v(1),
        v(2),
        v(3),
        v(4),
        v(5),
        v(6)
    )
}

/// The checkpoint signed by the log and cosigned by `witnesses`.
fn cosigned(witnesses: &[u8]) -> String {
    let mut note = Note::new(BODY).unwrap();
    note.sign(&log());
    for &n in witnesses {
        note.push_signature(witness(n).cosign(BODY, 1_700_000_000).unwrap());
    }
    note.to_text()
}

#[test]
fn the_spec_examples_quorum_needs_two_xs_and_one_y() {
    let policy = Policy::parse(spec_example().as_bytes()).unwrap();
    assert_eq!(policy.logs().len(), 1);
    assert_eq!(policy.witnesses().len(), 6);
    let check = |witnesses: &[u8]| policy.check(&cosigned(witnesses), &[]);
    for met in [&[1, 2, 4][..], &[2, 3, 6], &[1, 2, 3, 4, 5, 6]] {
        let checked = check(met).unwrap();
        assert_eq!(checked.witnesses.len(), met.len(), "{met:?}");
    }
    for unmet in [&[][..], &[1, 2], &[1, 4, 5, 6], &[4, 5, 6], &[3]] {
        match check(unmet) {
            Err(PolicyCheckError::Quorum { cosigned }) => assert_eq!(cosigned.len(), unmet.len()),
            other => panic!("{unmet:?}: {other:?}"),
        }
    }
    // The policy writes back as a file that parses to the same policy.
    let again = Policy::parse(policy.to_string().as_bytes()).unwrap();
    assert_eq!(again, policy);
}

#[test]
fn a_checkpoint_counts_only_when_one_of_the_logs_signed_it() {
    let policy = Policy::parse(spec_example().as_bytes()).unwrap();
    let other_log = Signer::from_seed("example.com/log", [2; 32]).unwrap();
    let mut note = Note::new(BODY).unwrap();
    note.sign(&other_log);
    assert!(matches!(
        policy.check(&note.to_text(), &[]),
        Err(PolicyCheckError::Checkpoint(_))
    ));
    // A policy with no log takes the log's key from the caller.
    let w = witness(2).verifier();
    let no_logs = Policy::parse(format!("witness W {w}\nquorum W\n").as_bytes()).unwrap();
    assert_eq!(
        no_logs.check(&cosigned(&[2]), &[]),
        Err(PolicyCheckError::NoLog)
    );
    let checked = no_logs.check(&cosigned(&[2]), &[log().verifier()]).unwrap();
    assert_eq!(checked.witnesses, [b"W".to_vec()]);
    // `quorum none` needs no cosignature; a log with an ML-DSA-44 key signs for itself.
    let pq_log = Signer::ml_dsa_44_from_seed("example.com/log", [3; 32]).unwrap();
    let none = Policy::parse(format!("log {}\nquorum none\n", pq_log.verifier()).as_bytes());
    let none = none.unwrap();
    assert!(none.needs_no_cosignature());
    let text = annals::tlog::Checkpoint::parse_body(BODY)
        .unwrap()
        .sign(&pq_log)
        .unwrap();
    assert!(none.check(&text, &[]).unwrap().witnesses.is_empty());
}

#[test]
fn the_shorthand_of_witness_flags_is_any_k_of_them() {
    let witnesses: Vec<_> = [1, 2, 3].iter().map(|&n| witness(n).verifier()).collect();
    let policy = Policy::of_witnesses(&witnesses, 2).unwrap();
    assert!(
        policy
            .check(&cosigned(&[1, 3]), &[log().verifier()])
            .is_ok()
    );
    assert!(policy.check(&cosigned(&[3]), &[log().verifier()]).is_err());
    let none = Policy::of_witnesses(&witnesses, 0).unwrap();
    assert!(none.check(&cosigned(&[]), &[log().verifier()]).is_ok());
    assert!(Policy::of_witnesses(&witnesses, 4).is_none());
    assert!(Policy::of_witnesses(&[log().verifier()], 1).is_none());
}

/// Parses `text`, expecting a refusal at `line` whose problem `is` matches.
fn refused(text: &str, line: usize, is: fn(&PolicyProblem) -> bool) {
    match Policy::parse(text.as_bytes()) {
        Err(PolicyError { line: at, problem }) => {
            assert_eq!(at, line, "{text:?}: {problem}");
            assert!(is(&problem), "{text:?}: {problem:?}");
        }
        Ok(_) => panic!("{text:?} parsed"),
    }
}

#[test]
fn every_malformed_policy_is_refused_at_its_line() {
    let l = log().verifier().to_string();
    let (a, b) = (witness(1).verifier(), witness(2).verifier());
    use PolicyProblem as P;
    refused("", 1, |p| matches!(p, P::NoQuorum));
    refused("# only a comment\n", 2, |p| matches!(p, P::NoQuorum));
    refused("quorum none", 1, |p| matches!(p, P::NotTerminated));
    refused("quorum none\r\n", 1, |p| {
        matches!(p, P::Character { byte: 0x0d })
    });
    refused("\n\nquorum\x7f none\n", 3, |p| {
        matches!(p, P::Character { byte: 0x7f })
    });
    refused("logs x\n", 1, |p| matches!(p, P::Keyword(_)));
    refused("quorum none # trailing\n", 1, |p| {
        matches!(p, P::Items { found: 3, .. })
    });
    refused("log\n", 1, |p| matches!(p, P::Items { keyword: "log", .. }));
    refused(&format!("log {l} url extra\n"), 1, |p| {
        matches!(p, P::Items { .. })
    });
    refused("log example.com/log+00000000+AAAA\n", 1, |p| {
        matches!(p, P::Vkey(_))
    });
    refused(&format!("log {a}\n"), 1, |p| {
        matches!(p, P::LogKeyType { type_byte: 4 })
    });
    refused(&format!("witness W {l}\n"), 1, |p| {
        matches!(p, P::WitnessKeyType { type_byte: 1 })
    });
    refused(&format!("log {l}\n\nlog {l} https://x\n"), 3, |p| {
        matches!(
            p,
            P::DuplicateKey {
                what: "log",
                first: 1
            }
        )
    });
    // The same key under another name is the same witness.
    let renamed = Cosigner::from_seed("another/name", [1; 32])
        .unwrap()
        .verifier();
    refused(&format!("witness A {a}\nwitness B {renamed}\n"), 2, |p| {
        matches!(
            p,
            P::DuplicateKey {
                what: "witness",
                first: 1
            }
        )
    });
    refused(&format!("witness none {a}\n"), 1, |p| {
        matches!(p, P::NameNone)
    });
    refused(&format!("witness A {a}\nwitness A {b}\n"), 2, |p| {
        matches!(p, P::NameTaken { first: 1, .. })
    });
    refused(&format!("witness A {a}\ngroup A any A\n"), 2, |p| {
        matches!(p, P::NameTaken { .. })
    });
    refused(&format!("witness A {a}\ngroup G any\n"), 2, |p| {
        matches!(p, P::Items { .. })
    });
    refused(&format!("group G any A\nwitness A {a}\n"), 1, |p| {
        matches!(p, P::Undefined { .. })
    });
    refused(&format!("witness A {a}\ngroup G any A none\n"), 2, |p| {
        matches!(p, P::NoneMember)
    });
    refused(&format!("witness A {a}\ngroup G any A A\n"), 2, |p| {
        matches!(p, P::MemberTwice { first: 2, .. })
    });
    refused(
        &format!("witness A {a}\ngroup G any A\ngroup H any A\n"),
        3,
        |p| matches!(p, P::MemberTwice { first: 2, .. }),
    );
    for k in ["0", "3", "01", "+1", "-1", "two", "18446744073709551616"] {
        refused(
            &format!("witness A {a}\nwitness B {b}\ngroup G {k} A B\n"),
            3,
            |p| matches!(p, P::Threshold { members: 2, .. }),
        );
    }
    refused("quorum W\n", 1, |p| matches!(p, P::Undefined { .. }));
    refused("quorum none\nquorum none\n", 2, |p| {
        matches!(p, P::SecondQuorum { first: 1 })
    });
    refused("quorum none extra\n", 1, |p| matches!(p, P::Items { .. }));
    let huge = format!("{}quorum none\n", "#\n".repeat(POLICY_BYTES_MAX / 2 + 1));
    refused(&huge, POLICY_BYTES_MAX / 2 + 1, |p| {
        matches!(p, P::TooLarge { .. })
    });
}

#[test]
fn whitespace_comments_and_opaque_names_are_as_the_spec_says() {
    let a = witness(1).verifier();
    // Tabs and runs of spaces separate; leading and trailing whitespace and indented comments
    // are allowed; names are octets (a Kelvin sign is not a K).
    let text = format!(
        "  # comment\n\t\nwitness\tK  {a}  https://w.example/  \nwitness \u{212a} {}\n\
         \tgroup  G\tall K \u{212a}\nquorum G\t\n",
        witness(2).verifier()
    );
    let policy = Policy::parse(text.as_bytes()).unwrap();
    assert_eq!(policy.witnesses()[0].name, b"K");
    assert_eq!(
        policy.witnesses()[0].url.as_deref(),
        Some(&b"https://w.example/"[..])
    );
    assert_eq!(policy.witnesses()[1].name, "\u{212a}".as_bytes());
    // Bytes with the high bit set that are not UTF-8 are a name too.
    let mut bytes = b"witness ".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(format!(" {a}\nquorum ").as_bytes());
    bytes.extend_from_slice(&[0xff, 0xfe, b'\n']);
    assert!(Policy::parse(&bytes).is_ok());
    // At least 32 logs, witnesses and groups, as the spec asks.
    let mut many = String::new();
    for n in 0..32u8 {
        let w = Cosigner::from_seed(&format!("w{n}"), [n; 32])
            .unwrap()
            .verifier();
        let l = Signer::from_seed(&format!("l{n}"), [n; 32])
            .unwrap()
            .verifier();
        many.push_str(&format!("log {l}\nwitness W{n} {w}\ngroup G{n} all W{n}\n"));
    }
    many.push_str("quorum G31\n");
    assert!(Policy::parse(many.as_bytes()).is_ok());
}
