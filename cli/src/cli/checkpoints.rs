//! `checkpoint`, and the signed forms of `prove` and `check-proof`: checkpoints signed with a
//! key from `keygen` (c2sp.org/tlog-checkpoint), inclusion proofs as c2sp.org/tlog-proof@v1
//! files, and consistency proofs between two checkpoints in tlog-witness's `add-checkpoint`
//! form, each checked by someone who holds only the verifier key.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use super::args::{CheckProofArgs, CheckpointArgs, ProveArgs};
use super::audit::read_capped;
use super::command::{NamedFile, Run};
use super::failure::{Failure, Kind};
use super::keys::read_signer_key;
use super::open::open_for_writing;
use annals::Position;
use annals::Store;
use annals::display::quoted;
use annals::error::AuditError;
use annals::log::Digest;
use annals::merkle::TreeHead;
use annals::tlog::{
    Checkpoint, ConsistencyFile, OpenedCheckpoint, Policy, TlogProof, Verifier,
    consistency::CONSISTENCY_BYTES_MAX, note::NOTE_BYTES_MAX, proof::TLOG_PROOF_BYTES_MAX,
    proof::TLOG_PROOF_HEADER,
};

pub(crate) fn checkpoint(args: CheckpointArgs) -> Result<ExitCode, Failure> {
    // The key first, then the refusals a read-only look can make: a refused checkpoint leaves
    // the log's bytes as they were.
    let signer = read_signer_key(&args.key)?;
    annals::maintenance::Checkpoints::of(&Store::open_read_only(&args.log.db)?)
        .check(signer.name(), args.tree.size)?;
    let store = open_for_writing(&args.log.db, false, &args.access)?;
    let text = annals::maintenance::Checkpoints::of(&store).sign_at(&signer, args.tree.size)?;
    let mut out = io::stdout().lock();
    match args.json {
        true => {
            let (_, checkpoint) = parse_checkpoint(text.clone(), &args.log.db, "the checkpoint")?;
            super::render::print_json(
                &mut out,
                &serde_json::json!({
                    "origin": checkpoint.origin,
                    "size": checkpoint.size,
                    "root": Digest(checkpoint.root).to_string(),
                    "note": text,
                }),
            )?;
        }
        false => out.write_all(text.as_bytes())?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Reads a checkpoint note given as `what` (`--checkpoint`, …), refusing anything larger than
/// a note or not one.
fn read_checkpoint(path: &Path, what: &str) -> Result<(String, Checkpoint), Failure> {
    let text = read_text(path, NOTE_BYTES_MAX as u64, what)?;
    parse_checkpoint(text, path, what)
}

/// [`read_checkpoint`] of a text already read.
fn parse_checkpoint(
    text: String,
    path: &Path,
    what: &str,
) -> Result<(String, Checkpoint), Failure> {
    let note = annals::tlog::Note::parse(&text).map_err(|error| {
        Failure::of(
            Kind::InvalidInput,
            format!("{what} {}: not a signed note: {error}", path.display()),
        )
    })?;
    let checkpoint = Checkpoint::parse_body(note.text()).map_err(|error| {
        Failure::of(
            Kind::InvalidInput,
            format!("{what} {}: not a checkpoint: {error}", path.display()),
        )
    })?;
    Ok((text, checkpoint))
}

/// The text of the file at `path`, at most `cap` bytes, UTF-8.
fn read_text(path: &Path, cap: u64, what: &str) -> Result<String, Failure> {
    let bytes = read_capped(path, cap).map_err(|error| Failure::file(path, false, &error))?;
    if bytes.len() as u64 > cap {
        return Err(Failure::of(
            Kind::InvalidInput,
            format!(
                "{what} {}: over {cap} bytes, larger than any",
                path.display()
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        Failure::of(
            Kind::InvalidInput,
            format!("{what} {}: not UTF-8 text", path.display()),
        )
    })
}

/// The refusal of a checkpoint that is not one of this log's trees.
fn not_of_this_log(path: &Path, checkpoint: &Checkpoint, root: Digest) -> Failure {
    Failure::of(
        Kind::Finding,
        format!(
            "{}: the checkpoint's root at size {} is {}, the log's is {}: it is not a checkpoint \
         of this log",
            path.display(),
            checkpoint.size,
            Digest(checkpoint.root),
            root
        ),
    )
}

/// `prove --checkpoint`: a tlog-proof of `--position` in the checkpoint's tree, or with
/// `--from-checkpoint`, the consistency proof from that checkpoint's tree.
pub(crate) fn prove(args: &ProveArgs, given: Option<&Path>) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.log.db)?;
    let snapshot = store.snapshot()?;
    let kept_name = Path::new("the cosigned checkpoint kept in the log");
    let (checkpoint_path, (text, checkpoint)) = match given {
        Some(path) => (path, read_checkpoint(path, "--checkpoint")?),
        None => {
            let kept = snapshot.cosigned_checkpoint()?.ok_or_else(|| {
                Failure::Usage(format!(
                    "{}: the log keeps no cosigned checkpoint: run `annals witness request` \
                     first, or give --checkpoint FILE",
                    args.log.db.display()
                ))
            })?;
            (
                kept_name,
                parse_checkpoint(kept, kept_name, "--checkpoint")?,
            )
        }
    };
    let head = snapshot.head()?.next.0;
    if checkpoint.size > head {
        return Err(annals::Error::from(AuditError::SizeBeyondHead {
            size: checkpoint.size,
            head,
        })
        .into());
    }
    let root = snapshot.merkle_root(checkpoint.size)?;
    if root.0 != checkpoint.root {
        return Err(not_of_this_log(checkpoint_path, &checkpoint, root));
    }
    let output = match (&args.from_checkpoint, args.position) {
        (Some(old_path), _) => consistency_text(&snapshot, old_path, &checkpoint, &text)?,
        (None, Some(position)) => {
            inclusion_text(&snapshot, Position(position), &checkpoint, &text)?
        }
        (None, None) => {
            return Err(Failure::Usage(
                "give --position or --from-checkpoint with --checkpoint".into(),
            ));
        }
    };
    let mut out = io::stdout().lock();
    out.write_all(output.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The consistency proof, in `add-checkpoint` form, from the checkpoint at `old_path` to
/// `checkpoint` (its note `text`), both of this log.
fn consistency_text(
    snapshot: &annals::Snapshot,
    old_path: &Path,
    checkpoint: &Checkpoint,
    text: &str,
) -> Result<String, Failure> {
    let (_, old) = read_checkpoint(old_path, "--from-checkpoint")?;
    if old.origin != checkpoint.origin {
        return Err(Failure::Usage(format!(
            "--from-checkpoint is of {}, --checkpoint of {}: give two checkpoints of \
             one log",
            quoted(&old.origin),
            quoted(&checkpoint.origin)
        )));
    }
    if old.size > checkpoint.size {
        return Err(Failure::Usage(format!(
            "--from-checkpoint is of size {}, larger than --checkpoint's {}",
            old.size, checkpoint.size
        )));
    }
    let old_root = snapshot.merkle_root(old.size)?;
    if old_root.0 != old.root {
        return Err(not_of_this_log(old_path, &old, old_root));
    }
    let path = if old.size == 0 {
        Vec::new()
    } else {
        snapshot.consistency_proof(old.size, checkpoint.size)?.path
    };
    let file = ConsistencyFile::new(old.size, path.iter().map(|d| d.0).collect(), text)
        .map_err(|error| Failure::of(Kind::InvalidInput, error.to_string()))?;
    Ok(file.to_text())
}

/// The tlog-proof of the record at `position` in `checkpoint`'s tree (its note `text`).
fn inclusion_text(
    snapshot: &annals::Snapshot,
    position: Position,
    checkpoint: &Checkpoint,
    text: &str,
) -> Result<String, Failure> {
    if position.0 >= checkpoint.size {
        return Err(annals::Error::from(AuditError::PositionBeyondSize {
            position,
            size: checkpoint.size,
        })
        .into());
    }
    let proof = snapshot.inclusion_proof(position, checkpoint.size)?;
    // Below a cut log's start, the hash the cut kept: no archive is needed.
    let record_hash = snapshot.record_hash(position)?;
    // The record hash as the extra data: the proof then names its entry, which the record
    // itself (or an export holding it) checks.
    let proof = TlogProof::for_checkpoint(
        position.0,
        proof.path.iter().map(|d| d.0).collect(),
        text,
        record_hash.0.to_vec(),
    )
    .map_err(|error| Failure::of(Kind::InvalidInput, error.to_string()))?;
    Ok(proof.to_text())
}

/// The verifier keys `--vkey` gives, each as its text or `@FILE`: the log's keys.
pub(crate) fn verifiers(args: &CheckProofArgs) -> Result<Vec<Verifier>, Failure> {
    let mut verifiers = parse_vkeys(&args.vkey, "--vkey", false)?;
    if let Some(policy) = policy(args)? {
        verifiers.extend(policy.logs().iter().map(|log| log.verifier.clone()));
    }
    Ok(verifiers)
}

/// The largest policy file read.
const POLICY_FILE_BYTES_MAX: u64 = annals::tlog::policy::POLICY_BYTES_MAX as u64;

/// The trust policy `--policy` names, parsed (a malformed file refused with its line).
fn policy(args: &CheckProofArgs) -> Result<Option<Policy>, Failure> {
    let Some(path) = &args.policy else {
        return Ok(None);
    };
    let bytes = super::audit::read_capped(path, POLICY_FILE_BYTES_MAX)
        .map_err(|error| Failure::file(path, false, &error))?;
    Policy::parse(&bytes)
        .map(Some)
        .map_err(|error| Failure::Usage(format!("--policy {}: {error}", path.display())))
}

/// The witnesses' verifier keys `--witness` gives (type 0x04).
fn witnesses(args: &CheckProofArgs) -> Result<Vec<Verifier>, Failure> {
    parse_vkeys(&args.witness, "--witness", true)
}

/// Each of `values` (a vkey, or `@FILE` holding one) parsed, of a cosigner's type exactly
/// when `cosigner`.
pub(crate) fn parse_vkeys(
    values: &[String],
    flag: &str,
    cosigner: bool,
) -> Result<Vec<Verifier>, Failure> {
    values
        .iter()
        .map(|given| {
            let text = match given.strip_prefix('@') {
                Some(file) => read_text(Path::new(file), 4096, flag)?,
                None => given.clone(),
            };
            let text = text.trim_end_matches('\n');
            // A signer key given by mistake is refused without a byte of it echoed.
            if text.starts_with("PRIVATE+KEY+") {
                return Err(Failure::Usage(format!(
                    "{flag}: that is a private key, not a verifier key: give what `annals \
                     keygen` printed, and keep the key file to yourself"
                )));
            }
            let verifier = Verifier::parse(text).map_err(|error| {
                Failure::Usage(format!(
                    "{flag} {}: not a verifier key: {error}",
                    quoted(text)
                ))
            })?;
            // An ML-DSA-44 key (type 0x06) is either: logs and witnesses sign with it alike.
            let fits = match cosigner {
                true => verifier.is_cosigner(),
                false => verifier.is_log_key(),
            };
            if !fits {
                let (is, wanted) = if cosigner {
                    (
                        "a log's key",
                        "a witness's (type 0x04 or 0x06, from `keygen --cosigner`)",
                    )
                } else {
                    (
                        "a witness's key",
                        "the log's (type 0x01 or 0x06, from `keygen` without --cosigner)",
                    )
                };
                return Err(Failure::Usage(format!(
                    "{flag} {}: {is}, where {wanted} is wanted",
                    quoted(text)
                )));
            }
            Ok(verifier)
        })
        .collect()
}

/// The tree heads of the checkpoints `--checkpoint` gives, each opened against `verifiers`.
pub(crate) fn trusted_checkpoints(
    args: &CheckProofArgs,
    verifiers: &[Verifier],
) -> Result<Vec<TreeHead>, Failure> {
    args.checkpoint
        .iter()
        .map(|path| {
            let opened = open_checkpoint(path, "--checkpoint", verifiers)?;
            Ok(TreeHead {
                size: opened.checkpoint.size,
                root: Digest(opened.checkpoint.root),
            })
        })
        .collect()
}

fn open_checkpoint(
    path: &Path,
    what: &str,
    verifiers: &[Verifier],
) -> Result<OpenedCheckpoint, Failure> {
    let text = read_text(path, NOTE_BYTES_MAX as u64, what)?;
    Checkpoint::open(&text, verifiers).map_err(|error| {
        Failure::of(
            Kind::InvalidProof,
            format!("invalid: {what} {}: {error}", path.display()),
        )
    })
}

/// The record at `position` of the export file at `path`, checked as it is read (sound at its
/// position, chained to the one before).
fn record_in_export(path: &Path, position: Position) -> Result<annals::Record, Failure> {
    let damaged = |error: annals::export::ExportError| {
        Failure::of(
            Kind::Corrupt,
            format!("--export {}: {error}", path.display()),
        )
    };
    let mut reader = annals::export::open(path).map_err(damaged)?;
    let header = reader.header().clone();
    if position < header.from || position >= header.to {
        return Err(Failure::Usage(format!(
            "--export {} holds positions {} .. {}, not the proof's {position}",
            path.display(),
            header.from,
            header.to
        )));
    }
    loop {
        match reader.next_record().map_err(damaged)? {
            Some(record) if record.position == position => return Ok(record),
            Some(_) => {}
            None => unreachable!("the range holds the position"),
        }
    }
}

/// Which signed form a proof file's text is in, if either.
pub(crate) fn signed_form(bytes: &[u8]) -> Option<SignedForm> {
    if bytes.starts_with(format!("{TLOG_PROOF_HEADER}\n").as_bytes()) {
        Some(SignedForm::Inclusion)
    } else if bytes.starts_with(b"old ") {
        Some(SignedForm::Consistency)
    } else {
        None
    }
}

/// A signed proof that does not hold: exit 1.
fn invalid(message: String) -> Failure {
    Failure::of(Kind::InvalidProof, message)
}

/// The two signed proof forms.
pub(crate) enum SignedForm {
    /// c2sp.org/tlog-proof@v1.
    Inclusion,
    /// tlog-witness's `add-checkpoint` body.
    Consistency,
}

/// `check-proof` of a signed form: exit 0 when the proof holds against checkpoints signed by
/// `--vkey`, 1 when it does not.
pub(crate) fn check(
    args: &CheckProofArgs,
    form: SignedForm,
    bytes: Vec<u8>,
) -> Result<ExitCode, Failure> {
    let shown = args.proof.display();
    let verifiers = verifiers(args)?;
    if verifiers.is_empty() {
        return Err(Failure::Usage(format!(
            "{shown} is a signed proof: give the log's verifier key with --vkey (or a \
             --policy listing the log), the only thing that makes its checkpoint evidence"
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Failure::of(Kind::InvalidInput, format!("{shown}: not UTF-8 text")))?;
    let (message, json) = match form {
        SignedForm::Inclusion => check_inclusion(args, &text, &verifiers)?,
        SignedForm::Consistency => check_consistency(args, &text, &verifiers)?,
    };
    let mut out = io::stdout().lock();
    match args.output.json {
        true => super::render::print_json(&mut out, &json)?,
        false => writeln!(out, "{message}")?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A tlog-proof, checked against `verifiers` (the log's keys), the witnesses' quorum and, with
/// `--export`, the record itself: what `check-proof` prints when it holds.
fn check_inclusion(
    args: &CheckProofArgs,
    text: &str,
    verifiers: &[Verifier],
) -> Result<(String, serde_json::Value), Failure> {
    let shown = args.proof.display();
    if text.len() > TLOG_PROOF_BYTES_MAX {
        return Err(invalid(format!("invalid: {shown}: larger than any proof")));
    }
    let proof =
        TlogProof::parse(text).map_err(|error| invalid(format!("invalid: {shown}: {error}")))?;
    let record_hash = <[u8; 32]>::try_from(proof.extra.as_slice()).map_err(|_| {
        invalid(format!(
            "invalid: {shown}: its extra data is not the 32-byte record hash annals \
             writes there, so it names no record to check"
        ))
    })?;
    let policy = policy(args)?;
    let (witnesses, quorum) = witnesses_and_quorum(args, policy.as_ref())?;
    let all: Vec<Verifier> = verifiers.iter().chain(&witnesses).cloned().collect();
    let opened = proof
        .check_record(&Digest(record_hash), &all)
        .map_err(|error| invalid(format!("invalid: {shown}: {error}")))?;
    let cosigned = annals::tlog::cosignature::cosigned_by(opened.note());
    if let Some(policy) = &policy {
        policy
            .check(proof.checkpoint_text(), verifiers)
            .map_err(|error| {
                invalid(format!(
                    "invalid: {shown}: its checkpoint does not hold under --policy {}: {error}",
                    args.policy.as_deref().unwrap_or(Path::new("")).display()
                ))
            })?;
    }
    require_quorum(&shown.to_string(), &cosigned, quorum)?;
    let (mut message, mut json) =
        valid_inclusion(&opened, proof.index, Digest(record_hash), &cosigned);
    if let Some(export) = &args.export {
        let position = Position(proof.index);
        check_in_export(
            export,
            position,
            Digest(record_hash),
            &mut message,
            &mut json,
        )?;
    }
    Ok((message, json))
}

/// What `check-proof` says of a tlog-proof that holds: the record hashed `record_hash` at
/// `index` in `opened`'s tree, its signer and its cosigners (`cosigned`), as a sentence and
/// as JSON.
fn valid_inclusion(
    opened: &OpenedCheckpoint,
    index: u64,
    record_hash: Digest,
    cosigned: &[(String, u64)],
) -> (String, serde_json::Value) {
    let signer = log_signer(opened);
    let mut message = format!(
        "valid: the record hashed {record_hash} is at position {index} in the checkpoint of {} \
         at size {}, signed by {signer}",
        opened.checkpoint.origin, opened.checkpoint.size,
    );
    for (name, time) in cosigned {
        message.push_str(&format!("\ncosigned by {name} at {time} (POSIX seconds)"));
    }
    let json = serde_json::json!({
        "valid": true,
        "proof": "inclusion",
        "form": "tlog-proof",
        "position": index,
        "record_hash": record_hash.to_string(),
        "to": {
            "origin": opened.checkpoint.origin,
            "size": opened.checkpoint.size,
            "root": Digest(opened.checkpoint.root).to_string(),
        },
        "signed_by": signer,
        "cosigned_by": cosigned
            .iter()
            .map(|(name, time)| serde_json::json!({ "name": name, "time": time }))
            .collect::<Vec<_>>(),
    });
    (message, json)
}

/// The witnesses whose cosignatures count, and how many must have cosigned: the policy's
/// (its own quorum, checked by the policy), or those `--witness` gives with `--quorum` (all
/// of them by default).
fn witnesses_and_quorum(
    args: &CheckProofArgs,
    policy: Option<&Policy>,
) -> Result<(Vec<Verifier>, usize), Failure> {
    let witnesses = match policy {
        Some(policy) => policy
            .witnesses()
            .iter()
            .map(|w| w.verifier.clone())
            .collect(),
        None => witnesses(args)?,
    };
    let quorum = match policy {
        Some(_) => 0,
        None => args.quorum.unwrap_or(witnesses.len()),
    };
    if quorum > witnesses.len() {
        return Err(Failure::Usage(format!(
            "--quorum {quorum}: more than the {} witnesses given",
            witnesses.len()
        )));
    }
    Ok((witnesses, quorum))
}

/// Refuses the proof `shown` whose checkpoint has fewer than `quorum` of the witnesses'
/// cosignatures (`cosigned`: their names and times).
fn require_quorum(shown: &str, cosigned: &[(String, u64)], quorum: usize) -> Result<(), Failure> {
    if cosigned.len() >= quorum {
        return Ok(());
    }
    let names: Vec<&str> = cosigned.iter().map(|(name, _)| name.as_str()).collect();
    Err(invalid(format!(
        "invalid: {shown}: its checkpoint is cosigned by {} of the witnesses given \
         ({}), the quorum is {quorum}",
        cosigned.len(),
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )))
}

/// The name of the log's signature on `opened`: the first verified one that is not a
/// cosigner's, or a log's ML-DSA-44 key (type 0x06, a cosigner's type) named as the origin.
fn log_signer(opened: &OpenedCheckpoint) -> &str {
    let note = opened.note();
    note.verified()
        .find(|s| !note.verified_by_cosigner(s))
        .or_else(|| {
            note.verified()
                .find(|s| s.name == opened.checkpoint.origin && note.verified_by_log_key(s))
        })
        .map_or("?", |s| s.name.as_str())
}

/// `--export`: the record at `position` in the export must be the one hashed `record_hash`
/// the proof names; it is then named in `message` and `json`.
fn check_in_export(
    export: &Path,
    position: Position,
    record_hash: Digest,
    message: &mut String,
    json: &mut serde_json::Value,
) -> Result<(), Failure> {
    let record = record_in_export(export, position)?;
    if record.hash != record_hash {
        return Err(invalid(format!(
            "invalid: the record at position {} in {} hashes to {}, the proof is \
             of the record hashed {}",
            position.0,
            export.display(),
            record.hash,
            record_hash
        )));
    }
    message.push_str(&format!(
        "\nand it is the record in {}: {}@{} {}",
        export.display(),
        quoted(&record.stream),
        record.version.0,
        quoted(&record.kind)
    ));
    json["record"] = serde_json::json!({
        "export": export.display().to_string(),
        "stream": record.stream,
        "version": record.version.0,
        "kind": record.kind,
    });
    Ok(())
}

/// A consistency proof to a checkpoint, checked between it and `--from-checkpoint`, both
/// opened against `verifiers`: what `check-proof` prints when it holds.
fn check_consistency(
    args: &CheckProofArgs,
    text: &str,
    verifiers: &[Verifier],
) -> Result<(String, serde_json::Value), Failure> {
    let shown = args.proof.display();
    if text.len() > CONSISTENCY_BYTES_MAX {
        return Err(invalid(format!("invalid: {shown}: larger than any proof")));
    }
    let Some(earlier) = &args.from_checkpoint else {
        return Err(Failure::Usage(format!(
            "{shown} is a consistency proof: give the earlier checkpoint you kept with \
             --from-checkpoint; the proof binds the later checkpoint only to it"
        )));
    };
    let file = ConsistencyFile::parse(text)
        .map_err(|error| invalid(format!("invalid: {shown}: {error}")))?;
    let earlier_text = read_text(earlier, NOTE_BYTES_MAX as u64, "--from-checkpoint")?;
    let later = file
        .check(&earlier_text, verifiers)
        .map_err(|error| invalid(format!("invalid: {shown}: {error}")))?;
    let message = format!(
        "valid: the checkpoint of {} at size {} extends the one at size {}: root {}",
        later.checkpoint.origin,
        later.checkpoint.size,
        file.old_size,
        Digest(later.checkpoint.root)
    );
    let json = serde_json::json!({
        "valid": true,
        "proof": "consistency",
        "form": "signed checkpoints",
        "from": { "size": file.old_size },
        "to": {
            "origin": later.checkpoint.origin,
            "size": later.checkpoint.size,
            "root": Digest(later.checkpoint.root).to_string(),
        },
    });
    Ok((message, json))
}

impl Run for CheckpointArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![
            NamedFile::read(&self.key, "a key file"),
            NamedFile::read(&self.log.db, "the log"),
        ]
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        checkpoint(self)
    }
}
