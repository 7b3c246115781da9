//! `verify`, `root`, `prove`, `check-proof` and `export`: commands that check a log or take
//! evidence of it elsewhere. They open the log read-only; `check-proof` opens no log at all.

use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use super::args::{CheckProofArgs, ExportArgs, ProveArgs, RootArgs, VerifyArgs};
use super::command::{NamedFile, Run};
use super::failure::{EXIT_FINDINGS, EXIT_SELF_CONSISTENT_ONLY, Failure, Kind};
use super::progress::ProgressLine;
use super::render::{print_json, print_range, print_verify};
use super::report::{CheckProofJson, HeadJson, RangeJson};
use annals::Position;
use annals::Store;
use annals::audit::lower_hex_digest;
use annals::display::quoted;
use annals::log::Digest;
use annals::merkle::{ProofError, TreeHead, Trust, TrustedHead};
use annals::output_path::Output;
use annals::{audit::ProofFile, error::ProofFileError};

/// `verify` with its two passes on two bars, each counting the log's records: the walk of
/// the log, then the replay into memory that the projections are compared with. The
/// library counts both passes on one counter (up to twice the head), so the second bar
/// starts where the first ended.
pub(crate) fn verify_showing_progress(
    store: &Store,
) -> Result<annals::audit::VerifyReport, Failure> {
    let records = store.snapshot()?.head()?.next.0;
    let mut walk = ProgressLine::new("verify", records);
    let mut replay = ProgressLine::new("replay", records);
    let report =
        annals::Audit::of(store).verify_with(&mut |done| match verify_pass(done, records) {
            (VerifyPass::Walk, walked) => walk.update(walked),
            (VerifyPass::Replay, replayed) => {
                walk.finish();
                replay.update(replayed);
            }
        });
    walk.finish();
    replay.finish();
    Ok(report?)
}

/// The two passes of `verify`.
#[derive(Debug, PartialEq, Eq)]
enum VerifyPass {
    Walk,
    Replay,
}

/// Which pass the library's count `done` (up to twice `records`) is in, and the records that
/// pass has done.
fn verify_pass(done: u64, records: u64) -> (VerifyPass, u64) {
    if done <= records {
        (VerifyPass::Walk, done)
    } else {
        (VerifyPass::Replay, done - records)
    }
}

/// The largest proof file `check-proof` reads: a proof has at most 2·64 hashes.
const PROOF_FILE_BYTES_MAX: u64 = 64 * 1024;

pub(crate) fn verify(args: VerifyArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.log.db)?;
    let mut report = verify_showing_progress(&store)?;
    if report.is_sound() && !args.archive.is_empty() {
        let start = store.snapshot()?.start().0;
        let mut line = ProgressLine::new("archives", start);
        let found = annals::archive::Archives::of(&store)
            .verify(&args.archive, &mut |done| line.update(done));
        line.finish();
        report.problem = found?;
    }
    let mut out = io::stdout().lock();
    print_verify(&mut out, &report, args.output.json)?;
    out.flush()?;
    Ok(if report.is_sound() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FINDINGS)
    })
}

pub(crate) fn root(args: RootArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.log.db)?;
    let snapshot = store.snapshot()?;
    let size = args.tree.size.unwrap_or(snapshot.head()?.next.0);
    let root = snapshot.merkle_root(size)?;
    let origin = snapshot.signed_checkpoint()?.map(|signed| signed.origin);
    let mut out = io::stdout().lock();
    print_root(&mut out, size, root, origin.as_deref(), args.json)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn prove(args: ProveArgs) -> Result<ExitCode, Failure> {
    if let Some(checkpoint) = &args.checkpoint {
        return super::checkpoints::prove(&args, checkpoint.as_deref());
    }
    let store = Store::open_read_only(&args.log.db)?;
    let snapshot = store.snapshot()?;
    let size = args.tree.size.unwrap_or(snapshot.head()?.next.0);
    let proof = match (args.position, args.from_size) {
        (Some(position), _) => snapshot.inclusion_proof_file(Position(position), size)?,
        (None, Some(from_size)) => snapshot.consistency_proof_file(from_size, size)?,
        (None, None) => return Err(Failure::Usage("give --position or --from-size".into())),
    };
    let mut out = io::stdout().lock();
    print_proof(&mut out, &proof, args.json)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The proof file at `path`, read as `bytes`: refused as bad input when it is not a proof
/// file at all, or one of a tree no log keeps any more; as an invalid proof otherwise.
fn parse_proof_file(path: &Path, bytes: &[u8]) -> Result<ProofFile, Failure> {
    let invalid = |message: String| Failure::of(Kind::InvalidProof, message);
    if bytes.len() as u64 > PROOF_FILE_BYTES_MAX {
        return Err(invalid(format!(
            "invalid: {} is over {PROOF_FILE_BYTES_MAX} bytes, larger than any proof",
            path.display()
        )));
    }
    ProofFile::from_json(bytes).map_err(|error| {
        let message = format!("invalid: {}: {error}", path.display());
        match error {
            ProofFileError::Shape { .. }
            | ProofFileError::DuplicateKey { .. }
            | ProofFileError::EarlierTree => Failure::of(Kind::InvalidInput, message),
            _ => invalid(message),
        }
    })
}

pub(crate) fn check_proof(args: CheckProofArgs) -> Result<ExitCode, Failure> {
    let bytes = read_capped(&args.proof, PROOF_FILE_BYTES_MAX)
        .map_err(|error| Failure::file(&args.proof, false, &error))?;
    if let Some(form) = super::checkpoints::signed_form(&bytes) {
        return super::checkpoints::check(&args, form, bytes);
    }
    let mut trust = trusted_heads(&args)?;
    let verifiers = super::checkpoints::verifiers(&args)?;
    for head in super::checkpoints::trusted_checkpoints(&args, &verifiers)? {
        trust = trust.with(TrustedHead::Head(head));
    }
    let invalid = |message: String| Failure::of(Kind::InvalidProof, message);
    let proof = parse_proof_file(&args.proof, &bytes)?;
    let checked = if trust.is_empty() {
        proof.check_self_consistency().map(|()| None)
    } else {
        proof.check(&trust).map(Some)
    };
    let matched = checked.map_err(|error| match error {
        ProofError::LaterHeadNotTrusted { size, .. } => invalid(format!(
            "not established: {error}: give the head of size {size} you kept (`annals root \
             --size {size}` on the log, when you trusted it) as a second --head, or the log's \
             signed checkpoint of size {size} as --checkpoint"
        )),
        error => invalid(format!("invalid: {error}")),
    })?;
    let mut out = io::stdout().lock();
    if args.output.json {
        print_json(&mut out, &check_proof_json(&proof, matched))?;
    } else {
        print_valid_proof(&mut out, &proof)?;
    }
    match matched {
        Some(matched) if !args.output.json => print_trusted(&mut out, &proof, &matched, &trust)?,
        Some(_) => {}
        None => {
            let mut heads: Vec<String> = proof
                .from_tree_head()
                .into_iter()
                .chain([proof.tree_head()])
                .map(|head| format!("size {}, root {}", head.size, head.root))
                .collect();
            heads.dedup();
            eprintln!(
                "annals: warning: checked only against the tree heads the proof carries ({}); \
                 it proves nothing about a log unless you trust them: give --head, or --size \
                 and --root (exit {EXIT_SELF_CONSISTENT_ONLY}: self-consistent only)",
                heads.join("; ")
            );
            out.flush()?;
            return Ok(ExitCode::from(EXIT_SELF_CONSISTENT_ONLY));
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// What `check-proof --json` prints for a valid `proof`, checked against `matched`.
fn check_proof_json(proof: &ProofFile, matched: Option<TreeHead>) -> CheckProofJson {
    let position = match proof {
        ProofFile::Inclusion { position, .. } => Some(*position),
        ProofFile::Consistency { .. } => None,
    };
    CheckProofJson {
        valid: true,
        established: matched.is_some(),
        proof: if position.is_some() {
            "inclusion"
        } else {
            "consistency"
        },
        position,
        from: proof.from_tree_head().map(HeadJson::from),
        to: proof.tree_head().into(),
        trusted: matched.map(HeadJson::from),
    }
}

/// The first `cap + 1` bytes of `path` at most, so that an oversized file is seen as such
/// without reading it all.
pub(super) fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    fs::File::open(path)?
        .take(cap + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The tree heads `check-proof` was given to trust; none when it was given none.
fn trusted_heads(args: &CheckProofArgs) -> Result<Trust, Failure> {
    if let (Some(size), Some(root)) = (args.size, &args.root) {
        let root = lower_hex_digest(root).ok_or_else(|| {
            Failure::Usage(format!(
                "--root {}: not 64 lower-case hex digits",
                quoted(root)
            ))
        })?;
        return Ok(Trust::from(TrustedHead::Head(TreeHead { size, root })));
    }
    let mut trust = Trust::new();
    for head in &args.head {
        trust = trust.with(kept_head(head)?);
    }
    Ok(trust)
}

/// One `--head` value: a tree head, or `@FILE` holding one.
fn kept_head(head: &str) -> Result<TrustedHead, Failure> {
    let (text, source) = match head.strip_prefix('@') {
        Some(file) => {
            let bytes = read_capped(Path::new(file), KEPT_HEAD_BYTES_MAX)
                .map_err(|error| Failure::named(&format!("--head {head}"), false, &error))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| Failure::Usage(format!("--head {head}: not UTF-8 text")))?;
            (text, format!("--head {head}"))
        }
        None => (head.to_string(), "--head".to_string()),
    };
    parse_kept_head(&text).map_err(|problem| Failure::Usage(format!("{source}: {problem}")))
}

/// The largest file `--head @FILE` reads: `annals root`'s output is under 200 bytes.
const KEPT_HEAD_BYTES_MAX: u64 = 4 * 1024;

/// A tree head as `annals root` prints it: the tree head hash alone, or the whole output in
/// text (`size`, `root`, `tree head` lines) or JSON; a whole output's tree head hash must be
/// that of its size and root.
fn parse_kept_head(text: &str) -> Result<TrustedHead, String> {
    const SHAPE: &str = "not a tree head as `annals root` prints it (its `tree head` hash, \
                         or its whole output, text or --json)";
    let text = text.trim();
    // What the head holds is echoed only quoted: it may come from a file, escapes and all.
    let digest = |value: &str| {
        lower_hex_digest(value)
            .ok_or_else(|| format!("{}: not 64 lower-case hex digits", quoted(value)))
    };
    if !text.contains(char::is_whitespace) && !text.starts_with('{') {
        return digest(text).map(TrustedHead::Hash);
    }
    let (size, root, tree_head) = if text.starts_with('{') {
        let kept: KeptHeadJson = serde_json::from_str(text).map_err(|_| SHAPE.to_string())?;
        (kept.size, kept.root, kept.tree_head)
    } else {
        let mut lines = text.lines().map(str::trim);
        let mut field = |name: &str| {
            lines
                .next()
                .and_then(|line| line.strip_prefix(name))
                .map(|value| value.trim().to_string())
                .ok_or_else(|| SHAPE.to_string())
        };
        let size = field("size")?;
        let size = size
            .parse()
            .map_err(|_| format!("size {}: not a number", quoted(&size)))?;
        (size, field("root")?, field("tree head")?)
    };
    let head = TreeHead {
        size,
        root: digest(&root)?,
    };
    if head.hash() != digest(&tree_head)? {
        return Err(format!(
            "its tree head {} is not that of size {size} and root {}",
            quoted(&tree_head),
            quoted(&root)
        ));
    }
    Ok(TrustedHead::Head(head))
}

/// What `check-proof --head` reads of `root --json`'s output: the head, and the checkpoint
/// fields beside it (which the head's fields already bind, so they are not checked).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct KeptHeadJson {
    size: u64,
    root: String,
    tree_head: String,
    #[serde(default)]
    root_base64: Option<String>,
    #[serde(default)]
    origin: Option<String>,
    #[serde(default)]
    checkpoint_body: Option<String>,
}

pub(crate) fn export(args: ExportArgs) -> Result<ExitCode, Failure> {
    // The export is renamed into place at the end, over whatever is there: checked before the
    // log is even opened (the path itself in `paths::check_named_files`), so that a refusal
    // leaves both files as they were.
    super::paths::check_replace(&args.file, args.force)?;
    let store = Store::open_read_only(&args.log.db)?;
    let snapshot = store.snapshot()?;
    let to = args.to.unwrap_or(snapshot.head()?.next.0);
    let from = args.from.unwrap_or(snapshot.start().0);
    let mut line = ProgressLine::new("export", to.saturating_sub(from));
    let summary = annals::export::export(
        &snapshot,
        Position(from),
        Position(to),
        &args.file,
        &mut |done| line.update(done),
    );
    line.finish();
    let summary = summary.map_err(|error| match error {
        annals::Error::Export(export) => match *export {
            annals::export::ExportError::Io(io) => Failure::file(&args.file, true, &io),
            other => annals::Error::Export(Box::new(other)).into(),
        },
        // The log is read through redb; a bare I/O error is the export file's.
        annals::Error::Io(io) => Failure::file(&args.file, true, &io),
        other => other.into(),
    })?;
    let mut out = io::stdout().lock();
    if args.output.json {
        print_json(&mut out, &RangeJson::new(&summary.header, &args.file))?;
    } else {
        print_range(&mut out, &summary.header, "exported", "to", &args.file)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The report of `root --json`.
#[derive(Serialize)]
struct RootJson {
    size: u64,
    root: String,
    tree_head: String,
    /// The root in base64, as a checkpoint's third line spells it.
    root_base64: String,
    /// The origin the log signs its checkpoints as, once it signed one.
    origin: Option<String>,
    /// The body a checkpoint of this tree has (c2sp.org/tlog-checkpoint), once the origin
    /// is known.
    checkpoint_body: Option<String>,
}

/// Writes the root of the tree of `size` records, its tree head, and the body of a
/// checkpoint of it: the origin (when the log signed a checkpoint before), the size and the
/// root in base64, the three lines `annals checkpoint` signs.
fn print_root(
    out: &mut impl Write,
    size: u64,
    root: Digest,
    origin: Option<&str>,
    json: bool,
) -> Result<(), Failure> {
    let tree_head = TreeHead { size, root }.hash();
    let root_base64 = annals::tlog::base64_encode(root.as_bytes());
    let body = origin.map(|origin| format!("{origin}\n{size}\n{root_base64}\n"));
    if json {
        return print_json(
            out,
            &RootJson {
                size,
                root: root.to_hex(),
                tree_head: tree_head.to_hex(),
                root_base64,
                origin: origin.map(str::to_owned),
                checkpoint_body: body,
            },
        );
    }
    writeln!(out, "size      {size}")?;
    writeln!(out, "root      {root}")?;
    writeln!(out, "tree head {tree_head}")?;
    match origin {
        Some(_) => writeln!(out, "checkpoint body (as `annals checkpoint` signs it):")?,
        None => writeln!(
            out,
            "checkpoint body (the origin is the signing key's name; the log signed none yet):"
        )?,
    }
    writeln!(out, "  {}", origin.unwrap_or("<origin>"))?;
    writeln!(out, "  {size}")?;
    writeln!(out, "  {root_base64}")?;
    Ok(())
}

/// Writes a proof: the proof file's JSON (what `check-proof` reads) with `json`, else text.
fn print_proof(out: &mut impl Write, proof: &ProofFile, json: bool) -> Result<(), Failure> {
    if json {
        return print_json(out, proof);
    }
    match proof {
        ProofFile::Inclusion {
            position,
            size,
            record_hash,
            root,
            tree_head,
            path,
            ..
        } => {
            writeln!(
                out,
                "inclusion of position {position} in the tree of size {size}"
            )?;
            writeln!(out, "record hash {record_hash}")?;
            writeln!(out, "root        {root}")?;
            writeln!(out, "tree head   {tree_head}")?;
            for hash in path {
                writeln!(out, "path        {hash}")?;
            }
        }
        ProofFile::Consistency {
            from_size,
            from_root,
            size,
            root,
            path,
            ..
        } => {
            writeln!(out, "consistency of size {from_size} with size {size}")?;
            writeln!(out, "from root   {from_root}")?;
            writeln!(out, "root        {root}")?;
            for hash in path {
                writeln!(out, "path        {hash}")?;
            }
        }
    }
    Ok(())
}

/// Writes what `check-proof` found valid.
fn print_valid_proof(out: &mut impl Write, proof: &ProofFile) -> Result<(), Failure> {
    match proof {
        ProofFile::Inclusion {
            position,
            size,
            root,
            ..
        } => writeln!(
            out,
            "valid: position {position} is in the tree of size {size} with root {root}"
        )?,
        ProofFile::Consistency {
            from_size,
            size,
            root,
            ..
        } => writeln!(
            out,
            "valid: the tree of size {from_size} is a prefix of the tree of size {size} with root {root}"
        )?,
    }
    Ok(())
}

/// Writes which trusted head a proof was checked against and, for a consistency proof, how
/// its earlier head relates to it: trusted too, or vouched for as a prefix.
fn print_trusted(
    out: &mut impl Write,
    proof: &ProofFile,
    matched: &TreeHead,
    trust: &Trust,
) -> Result<(), Failure> {
    writeln!(
        out,
        "checked against the trusted head you gave: size {}, root {}",
        matched.size, matched.root
    )?;
    let Some(from) = proof.from_tree_head() else {
        return Ok(());
    };
    if from == *matched {
        return Ok(());
    }
    if trust.trusts(&from) {
        writeln!(
            out,
            "it extends the trusted head of size {} you gave: root {}",
            from.size, from.root
        )?;
    } else {
        writeln!(
            out,
            "the tree head of size {} is a prefix of yours: root {}, tree head {}",
            from.size,
            from.root,
            from.hash()
        )?;
    }
    Ok(())
}

impl Run for VerifyArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        NamedFile::archives_then_log(&self.archive, &self.log.db)
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        verify(self)
    }
}

impl Run for RootArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.log.db, "the log")]
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        root(self)
    }
}

impl Run for ProveArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        let checkpoints = self.checkpoint.iter().flatten();
        let mut files: Vec<_> = checkpoints
            .chain(&self.from_checkpoint)
            .map(|file| NamedFile::read(file, "a checkpoint file"))
            .collect();
        files.push(NamedFile::read(&self.log.db, "the log"));
        files
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        prove(self)
    }
}

impl Run for CheckProofArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        let heads = self.head.iter();
        let heads = heads.filter_map(|head| NamedFile::at_file(head, "a tree head file"));
        let vkeys = self.vkey.iter().chain(&self.witness);
        let vkeys = vkeys.filter_map(|vkey| NamedFile::at_file(vkey, "a verifier key file"));
        let checkpoints = self.checkpoint.iter().chain(&self.from_checkpoint);
        let checkpoints = checkpoints.map(|file| NamedFile::read(file, "a checkpoint file"));
        let export = self.export.iter();
        let export = export.map(|file| NamedFile::read(file, "an export file"));
        let policy = self.policy.iter();
        let policy = policy.map(|file| NamedFile::read(file, "a policy file"));
        std::iter::once(NamedFile::read(&self.proof, "a proof file"))
            .chain(policy)
            .chain(heads)
            .chain(vkeys)
            .chain(checkpoints)
            .chain(export)
            .collect()
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        check_proof(self)
    }
}

impl Run for ExportArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![
            NamedFile::read(&self.log.db, "the log"),
            NamedFile::written(Some(&self.log.db), &self.file, Output::File),
        ]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        export(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_bars_each_count_up_to_the_records_not_twice_them() {
        let records = 1_000;
        let check = |done: u64, expected: (VerifyPass, u64)| {
            assert_eq!(verify_pass(done, records), expected, "{done}");
        };
        check(0, (VerifyPass::Walk, 0));
        check(512, (VerifyPass::Walk, 512));
        check(1_000, (VerifyPass::Walk, 1_000));
        check(1_001, (VerifyPass::Replay, 1));
        check(2_000, (VerifyPass::Replay, 1_000));
    }
}
