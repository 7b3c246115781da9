//! `witness serve`, `witness evidence` and `witness request`: the witness protocol
//! (c2sp.org/tlog-witness) from both of its sides, over `annals::witness`.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use super::args::{WitnessEvidenceArgs, WitnessRequestArgs, WitnessServeArgs};
use super::checkpoints::parse_vkeys;
use super::command::{NamedFile, Run};
use super::failure::{EXIT_FINDINGS, Failure, Kind};
use super::keys::{read_cosigner_key, read_signer_key};
use super::open::open_for_writing;
use annals::witness::request::{RequestOptions, WitnessEndpoint, request_cosignatures};
use annals::witness::serve::{ServeOptions, serve as serve_http};
use annals::witness::{EvidenceBudget, Witness, WitnessError};
use annals::{Store, StoreOptions};

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| Failure::Usage(format!("cannot start the async runtime: {error}")))
}

fn serve(args: WitnessServeArgs) -> Result<ExitCode, Failure> {
    let cosigner = read_cosigner_key(&args.key)?;
    let logs = parse_vkeys(&args.logs, "--log", false)?;
    super::open::require_folder(&args.state)?;
    // What can be refused without the state is refused before it is opened writable (which
    // rewrites redb's bookkeeping in the file): the logs' keys, and an address in use.
    Witness::check_logs(&logs, &annals::log::Limits::default()).map_err(witness_failure)?;
    let listener = std::net::TcpListener::bind(args.listen)
        .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
        .map_err(|error| cannot_listen(args.listen, &error))?;
    // One writer: a second witness on the same state is refused (it would race the first),
    // while `witness evidence`, `verify` and `log` may read it beside.
    let store = Store::open_with(
        &args.state,
        StoreOptions {
            create: true,
            sharing: annals::Sharing::SingleWriter,
            ..StoreOptions::default()
        },
    )?;
    let budget = EvidenceBudget {
        bytes_max: args.evidence_bytes,
        client_bytes_max: args.evidence_bytes_per_peer,
    };
    let witness =
        Arc::new(Witness::with_budget(store, cosigner, &logs, budget).map_err(witness_failure)?);
    let options = ServeOptions {
        connections_max: usize::from(args.connections),
        connections_per_peer_max: usize::from(args.connections_per_peer),
        request_timeout: args.request_timeout,
        ..ServeOptions::default()
    };
    let runtime = runtime()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|error| cannot_listen(args.listen, &error))?;
        let address = listener.local_addr()?;
        {
            let mut out = io::stdout().lock();
            match args.json {
                true => writeln!(
                    out,
                    "{}",
                    serde_json::json!({ "listening": address.to_string() })
                )?,
                false => writeln!(out, "listening on {address}")?,
            }
            out.flush()?;
        }
        serve_http(listener, witness, options, shutdown())
            .await
            .map_err(|error| Failure::Usage(format!("the witness stopped: {error}")))?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Completes at SIGINT or SIGTERM.
async fn shutdown() {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler can be installed");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}

/// An address the witness cannot listen on, named.
fn cannot_listen(address: std::net::SocketAddr, error: &io::Error) -> Failure {
    Failure::of(
        Kind::of_io(error),
        format!("cannot listen on {address}: {error}"),
    )
}

fn witness_failure(error: WitnessError) -> Failure {
    match error {
        WitnessError::State(error) => error.into(),
        other => Failure::Usage(other.to_string()),
    }
}

fn evidence(args: WitnessEvidenceArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.state)?;
    let kept = annals::witness::evidence(&store)?;
    let mut out = io::stdout().lock();
    if args.json {
        super::render::print_json(&mut out, &kept)?;
    } else if kept.is_empty() {
        writeln!(
            out,
            "no evidence: no two checkpoints signed by a witnessed log were shown not to extend \
             one another"
        )?;
    } else {
        for item in &kept {
            let how = if item.proof.is_empty() {
                "the same size with another root".to_owned()
            } else {
                format!(
                    "a {}-line consistency path shows the later tree with another root at the \
                     cosigned size",
                    item.proof.len()
                )
            };
            writeln!(
                out,
                "{}: the log signed two checkpoints that do not extend one another ({how})",
                item.origin
            )?;
            for (which, note) in [
                ("cosigned", &item.cosigned),
                ("conflicting", &item.conflicting),
            ] {
                writeln!(out, "  {which}:")?;
                for line in note.lines() {
                    writeln!(out, "    {line}")?;
                }
            }
            for hash in &item.proof {
                writeln!(out, "  proof: {hash}")?;
            }
        }
    }
    out.flush()?;
    Ok(if kept.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FINDINGS)
    })
}

#[derive(serde::Serialize)]
struct RequestJson<'a> {
    size: u64,
    checkpoint: &'a str,
    cosigned_by: &'a [String],
    failed: Vec<String>,
    quorum: usize,
}

fn request(args: WitnessRequestArgs) -> Result<ExitCode, Failure> {
    let signer = read_signer_key(&args.key)?;
    let witnesses = args
        .witnesses
        .iter()
        .map(|given| WitnessEndpoint::parse(given))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| Failure::Usage(error.to_string()))?;
    let quorum = args.quorum.unwrap_or(witnesses.len());
    if quorum > witnesses.len() {
        return Err(Failure::Usage(format!(
            "--quorum {quorum} is more than the {} witnesses given",
            witnesses.len()
        )));
    }
    // The refusals a read-only look can make first: a refused request leaves the log's bytes
    // as they were.
    annals::maintenance::Checkpoints::of(&Store::open_read_only(&args.log.db)?)
        .check(signer.name(), None)?;
    let store = open_for_writing(&args.log.db, false, &args.access)?;
    let options = RequestOptions {
        timeout: args.timeout,
    };
    let witnessed =
        runtime()?.block_on(request_cosignatures(&store, &signer, &witnesses, options))?;
    let mut out = io::stdout().lock();
    if args.output.json {
        let json = RequestJson {
            size: witnessed.size,
            checkpoint: &witnessed.checkpoint,
            cosigned_by: &witnessed.cosigned_by,
            failed: witnessed.failed.iter().map(ToString::to_string).collect(),
            quorum,
        };
        super::render::print_json(&mut out, &json)?;
    } else {
        out.write_all(witnessed.checkpoint.as_bytes())?;
    }
    out.flush()?;
    for failure in &witnessed.failed {
        let _ = writeln!(io::stderr().lock(), "annals: {failure}");
    }
    if witnessed.cosigned_by.len() < quorum {
        return Err(Failure::of(
            Kind::Finding,
            format!(
                "{} of the {} witnesses cosigned, fewer than the quorum of {quorum}",
                witnessed.cosigned_by.len(),
                witnesses.len()
            ),
        ));
    }
    Ok(ExitCode::SUCCESS)
}

impl Run for WitnessServeArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        let logs = self.logs.iter();
        let logs = logs.filter_map(|vkey| NamedFile::at_file(vkey, "a verifier key file"));
        std::iter::once(NamedFile::read(&self.key, "a key file"))
            .chain(logs)
            .chain([NamedFile::read(&self.state, "the witness's state log")])
            .collect()
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        serve(self)
    }
}

impl Run for WitnessEvidenceArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.state, "the witness's state log")]
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        evidence(self)
    }
}

impl Run for WitnessRequestArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![
            NamedFile::read(&self.key, "a key file"),
            NamedFile::read(&self.log.db, "the log"),
        ]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        request(self)
    }
}
