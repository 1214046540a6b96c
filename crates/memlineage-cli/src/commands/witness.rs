//! `memlineage witness`: a witness with its own directory and key (C2SP tlog-witness), driven
//! from the command line or served over HTTP (`witness serve`, with the CLI's `server`
//! feature).

use super::checkpoint::read_input;
use crate::Ctx;
use crate::output::{CliError, EXIT_FAILED, Outcome};
use clap::{Args, Subcommand};
use memlineage::transparency::FileWitness;
use memlineage_core::checkpoint::NoteVerifier;
use serde_json::json;
use std::path::PathBuf;

/// The witness's directory (its key and state).
#[derive(Args, Debug)]
pub struct DirArg {
    /// The witness's directory, apart from any store (holds its key and state).
    #[arg(long, value_name = "DIR", env = "MEMLINEAGE_WITNESS_DIR")]
    dir: PathBuf,
}

/// `memlineage witness …`.
#[derive(Subcommand, Debug)]
pub enum WitnessCommand {
    /// Create a witness: a new Ed25519 key and an empty state; prints its verifier key.
    Init {
        #[command(flatten)]
        dir: DirArg,
        /// The witness's name, the key name of its cosignatures (a schema-less URL by
        /// convention, e.g. witness.example.com/w1).
        #[arg(long)]
        name: String,
    },
    /// Trust a log key (`memlineage checkpoint --vkey` of the log) to sign checkpoints of the
    /// log named by its key name; a rotated key is added beside the old one.
    AddLog {
        #[command(flatten)]
        dir: DirArg,
        /// The log's verifier key.
        vkey: String,
    },
    /// Print the witness's cosignature verifier key (type 0x04), for a policy's `witness` line.
    Vkey {
        #[command(flatten)]
        dir: DirArg,
    },
    /// Answer an add-checkpoint request (C2SP tlog-witness) read from FILE or stdin: print the
    /// cosignature line, or the refusal with its HTTP status (exit 1).
    AddCheckpoint {
        #[command(flatten)]
        dir: DirArg,
        /// The request body (`memlineage checkpoint --request OLD`); `-` or absent: stdin.
        #[arg(default_value = "-")]
        request: PathBuf,
    },
    /// Print the checkpoint the witness cosigned last for a log (what a witness serves to
    /// monitors), with the log's signature and its cosignature.
    Checkpoint {
        #[command(flatten)]
        dir: DirArg,
        /// The log's origin.
        origin: String,
    },
    /// Serve the witness over HTTP (C2SP tlog-witness): `POST /add-checkpoint` and
    /// `GET /<sha256(origin)>/checkpoint`, until SIGTERM or Ctrl-C.
    #[cfg(feature = "server")]
    Serve(ServeArgs),
}

/// `memlineage witness serve`.
#[cfg(feature = "server")]
#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    dir: DirArg,
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8447")]
    listen: std::net::SocketAddr,
    /// TLS certificate chain (PEM); with --tls-key, the witness speaks HTTPS only.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Seconds before a request is answered 503.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Log lines as text instead of JSON.
    #[arg(long)]
    text_logs: bool,
}

/// Runs a `witness` subcommand.
pub fn run(c: WitnessCommand, _ctx: &Ctx) -> Result<Outcome, CliError> {
    match c {
        WitnessCommand::Init { dir, name } => {
            let key = memlineage_core::keys::generate(&mut rand_core::OsRng);
            let w = FileWitness::init(&dir.dir, &name, key).map_err(|e| match e {
                memlineage::Error::Checkpoint(e) => CliError::usage(format!("--name: {e}")),
                other => other.into(),
            })?;
            let vkey = w.verifier().to_vkey();
            Ok(Outcome::ok(
                json!({ "dir": dir.dir.display().to_string(), "name": name, "vkey": vkey }),
                vkey,
            ))
        }
        WitnessCommand::AddLog { dir, vkey } => {
            let v = NoteVerifier::parse(&vkey)
                .map_err(|e| CliError::usage(format!("log verifier key: {e}")))?;
            let mut w = FileWitness::open(&dir.dir)?;
            w.add_log(v.clone())?;
            Ok(Outcome::ok(
                json!({ "origin": v.name(), "vkey": v.to_vkey() }),
                format!(
                    "witness now verifies checkpoints of `{}` signed by {v}",
                    v.name()
                ),
            ))
        }
        WitnessCommand::Vkey { dir } => {
            let w = FileWitness::open(&dir.dir)?;
            let vkey = w.verifier().to_vkey();
            Ok(Outcome::ok(
                json!({ "name": w.verifier().name(), "vkey": vkey }),
                vkey,
            ))
        }
        WitnessCommand::AddCheckpoint { dir, request } => {
            let w = FileWitness::open(&dir.dir)?;
            let body = read_input(&request)?;
            let r = w.add_checkpoint(body.as_bytes())?;
            let json = json!({
                "status": r.status,
                "content_type": r.content_type,
                "body": r.body,
                "cosigned": r.status == 200,
            });
            if r.status == 200 {
                Ok(Outcome::ok(json, r.body))
            } else {
                let mut out = Outcome::failed(
                    json,
                    format!("{} {}", r.status, r.body.trim_end()),
                    format!("the witness refused ({}): {}", r.status, r.body.trim_end()),
                );
                out.code = EXIT_FAILED;
                Ok(out)
            }
        }
        #[cfg(feature = "server")]
        WitnessCommand::Serve(a) => serve(a, _ctx),
        WitnessCommand::Checkpoint { dir, origin } => {
            let w = FileWitness::open(&dir.dir)?;
            match w.latest(&origin)? {
                Some(c) => Ok(Outcome::ok(
                    json!({ "origin": origin, "size": c.size, "root": c.root.to_hex(), "note": c.note }),
                    c.note,
                )),
                None => Err(CliError::failed(format!(
                    "this witness has not cosigned any checkpoint of `{origin}`"
                ))),
            }
        }
    }
}

/// Runs `witness serve` until SIGTERM or Ctrl-C.
#[cfg(feature = "server")]
fn serve(a: ServeArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    use memlineage_server::witness::{WitnessConfig, run_witness_blocking};
    memlineage_server::telemetry::init_logs(!a.text_logs);
    let mut config = WitnessConfig::new(a.dir.dir, a.listen);
    config.tls = match (a.tls_cert, a.tls_key) {
        (Some(cert), Some(key)) => Some(memlineage_server::TlsFiles { cert, key }),
        _ => None,
    };
    config.request_timeout = std::time::Duration::from_secs(a.timeout.max(1));
    let json_mode = ctx.json;
    run_witness_blocking(config, move |addr, tls| {
        let scheme = if tls { "https" } else { "http" };
        if json_mode {
            println!("{}", json!({ "listening": addr.to_string(), "tls": tls }));
        } else {
            println!("witness listening on {scheme}://{addr}");
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
    })
    .map_err(CliError::failed)?;
    Ok(Outcome::ok(serde_json::Value::Null, ""))
}
