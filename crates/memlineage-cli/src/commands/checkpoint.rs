//! `memlineage checkpoint`: sign a checkpoint, print the log's verifier key, and have
//! checkpoints cosigned by witnesses (C2SP tlog-witness): in their directories (`file://`),
//! over HTTP (`https://`, `http://`), or through request files.

use super::open;
use super::trust::load_policy;
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::{ArgGroup, Args};
use memlineage::transparency::{HttpTimeouts, WitnessRoots, WitnessTransports};
use memlineage_core::checkpoint::{Checkpoint, parse_note};
use memlineage_core::witness::Policy;
use serde_json::json;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The log's witness policy, beside the store unless `--policy` names another file.
pub const POLICY_FILE: &str = "witnesses.policy";

/// `memlineage checkpoint`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("mode").args(["vkey", "witness", "no_witness", "request", "attach"])))]
pub struct CheckpointArgs {
    /// Print the log's verifier key (`<origin>+<key id>+<base64>`, golang.org/x/mod/sumdb/note
    /// format) instead of signing; with --history, every key the operator has held.
    #[arg(long)]
    vkey: bool,
    /// With --vkey: every checkpoint key the operator has held, with the log indices of the
    /// registry records that added and retired it.
    #[arg(long, requires = "vkey")]
    history: bool,
    /// Sign a checkpoint, then ask the witnesses of the policy to cosign it (reached by the
    /// URL of their policy line: `file:///DIR`, `https://…`, `http://…`); exit 1 if the
    /// quorum is not met. The default whenever `witnesses.policy` exists beside the store or
    /// --policy is given.
    #[arg(long)]
    witness: bool,
    /// Only sign the checkpoint, even if the log has a witness policy.
    #[arg(long)]
    no_witness: bool,
    /// Seconds to wait for each HTTP witness (connecting: at most 5 of them).
    #[arg(long, value_name = "SECS", default_value_t = 20)]
    witness_timeout: u64,
    /// PEM file of the certificate authorities an `https://` witness's certificate must chain
    /// to, *instead of* Mozilla's roots (as curl's --cacert): for witnesses under a private CA.
    #[arg(long, value_name = "FILE", env = "MEMLINEAGE_WITNESS_CA")]
    witness_ca: Option<PathBuf>,
    /// Print the `add-checkpoint` request body for the latest stored checkpoint, with a
    /// consistency proof from OLD (the size the witness cosigned last; 0 for a new witness),
    /// to send to a witness by other means.
    #[arg(long, value_name = "OLD")]
    request: Option<u64>,
    /// Attach a witness's answer (its cosignature lines; `-` for stdin) to the stored
    /// checkpoint it cosigns.
    #[arg(long, value_name = "FILE")]
    attach: Option<PathBuf>,
    /// The log's witness policy (C2SP tlog-policy). Default: `witnesses.policy` beside the store.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

/// Runs `checkpoint`.
pub fn run(a: CheckpointArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    if a.vkey {
        return vkey(&mem, a.history);
    }
    if let Some(old) = a.request {
        let note = mem
            .latest_checkpoint_note()?
            .ok_or_else(|| CliError::failed("no checkpoint yet: run `memlineage checkpoint`"))?;
        let body = mem.witness_request(&note, old)?;
        return Ok(Outcome::ok(
            json!({ "old_size": old, "request": body }),
            body,
        ));
    }
    if let Some(path) = &a.attach {
        let policy = log_policy(ctx, a.policy.as_deref())?;
        let lines = read_input(path)?;
        let (cp, note) = mem.add_cosignatures(&lines, &policy)?;
        let check = policy.check(&note);
        let json = json!({
            "size": cp.size, "root": cp.root.to_hex(), "note": note,
            "cosigned_by": check.cosigned.iter().map(|(n, t)| json!({"name": n, "timestamp": t})).collect::<Vec<_>>(),
            "quorum": policy.describe_quorum(), "quorum_met": check.met,
        });
        return Ok(Outcome::ok(json, note));
    }
    // Read before anything is signed: a CA file that cannot be used fails the command at once.
    let roots = witness_roots(a.witness_ca.as_deref())?;
    let policy = if a.witness {
        Some(log_policy(ctx, a.policy.as_deref())?)
    } else if a.no_witness {
        None
    } else {
        configured_policy(ctx, a.policy.as_deref())?
    };
    let note = mem.checkpoint()?;
    let cp = parse_note(&note)
        .and_then(|n| Checkpoint::parse_body(&n.body))
        .map_err(|e| CliError::failed(format!("the signed checkpoint does not parse: {e}")))?;
    let Some(policy) = policy else {
        let json = json!({
            "origin": cp.origin,
            "size": cp.size,
            "root": cp.root.to_hex(),
            "note": note,
        });
        return Ok(Outcome::ok(json, note));
    };
    let secs = std::time::Duration::from_secs(a.witness_timeout.max(1));
    let timeouts = HttpTimeouts {
        connect: secs.min(std::time::Duration::from_secs(5)),
        total: secs,
    };
    witness(&mem, &note, &policy, timeouts, &roots)
}

/// The roots HTTPS witnesses are checked against: `--witness-ca FILE`, else Mozilla's.
fn witness_roots(file: Option<&Path>) -> Result<WitnessRoots, CliError> {
    let Some(file) = file else {
        return Ok(WitnessRoots::default());
    };
    let pem = std::fs::read(file).map_err(|e| {
        CliError::usage(format!(
            "--witness-ca {}: cannot read it: {e}",
            file.display()
        ))
    })?;
    from_pem(&pem, file)
}

#[cfg(feature = "witness-http")]
fn from_pem(pem: &[u8], file: &Path) -> Result<WitnessRoots, CliError> {
    WitnessRoots::from_pem(pem, &file.display().to_string())
        .map_err(|e| CliError::usage(format!("--witness-ca: {e}")))
}

#[cfg(not(feature = "witness-http"))]
fn from_pem(_: &[u8], _: &Path) -> Result<WitnessRoots, CliError> {
    Err(CliError::usage(
        "--witness-ca: this build has no HTTP witness client (feature `witness-http`)",
    ))
}

/// The log's policy when it has one: `--policy FILE`, or `witnesses.policy` beside the store
/// if it exists.
fn configured_policy(ctx: &Ctx, flag: Option<&Path>) -> Result<Option<Policy>, CliError> {
    let beside = ctx.paths.config_dir().join(POLICY_FILE);
    if flag.is_some() || beside.is_file() {
        log_policy(ctx, flag).map(Some)
    } else {
        Ok(None)
    }
}

fn vkey(mem: &super::Mem, history: bool) -> Result<Outcome, CliError> {
    let current = mem.verifier_key()?;
    if !history {
        let json = json!({
            "vkey": current.to_vkey(),
            "origin": current.name(),
            "key_id": hex::encode(current.key_id()),
        });
        return Ok(Outcome::ok(json, current.to_vkey()));
    }
    let keys = mem.verifier_key_history()?;
    let mut text = String::new();
    for k in &keys {
        let _ = writeln!(
            text,
            "{}  added at {}{}",
            k.vkey,
            k.added_at,
            k.retired_at
                .map_or_else(|| ", current".to_string(), |r| format!(", retired at {r}"))
        );
    }
    Ok(Outcome::ok(
        json!({ "vkey": current.to_vkey(), "keys": keys }),
        text,
    ))
}

/// The log's policy: `--policy FILE`, else `witnesses.policy` beside the store.
fn log_policy(ctx: &Ctx, flag: Option<&Path>) -> Result<Policy, CliError> {
    match flag {
        Some(p) => load_policy(p, "--policy"),
        None => {
            let p = ctx.paths.config_dir().join(POLICY_FILE);
            if !p.is_file() {
                return Err(CliError::usage(format!(
                    "no witness policy: write one at {} (C2SP tlog-policy: `witness NAME VKEY file:///path/to/witness`, `quorum NAME`) or pass --policy FILE",
                    p.display()
                )));
            }
            load_policy(&p, "witness policy")
        }
    }
}

fn witness(
    mem: &super::Mem,
    note: &str,
    policy: &Policy,
    timeouts: HttpTimeouts,
    roots: &WitnessRoots,
) -> Result<Outcome, CliError> {
    let transports = WitnessTransports::for_policy_with_roots(policy, timeouts, roots);
    let round = mem.witness_checkpoint(note, policy, &transports.as_refs())?;
    let window = mem.rollback_window(Some(policy))?;
    let mut text = round.note.clone();
    for a in &round.answers {
        let _ = match (a.timestamp, a.status) {
            (Some(ts), _) => writeln!(text, "witness {}: cosigned (time {ts})", a.name),
            (None, 0) => writeln!(text, "witness {}: {}", a.name, a.message),
            (None, status) => writeln!(
                text,
                "witness {}: refused ({status}): {}",
                a.name, a.message
            ),
        };
    }
    for n in &round.not_asked {
        let _ = writeln!(
            text,
            "witness {n}: not asked (no URL in the policy; send `memlineage checkpoint --request OLD` to it and `--attach` its answer)"
        );
    }
    let _ = writeln!(
        text,
        "quorum {}: {}",
        round.quorum,
        if round.quorum_met { "met" } else { "NOT met" }
    );
    let json = json!({
        "origin": round.checkpoint.origin,
        "size": round.checkpoint.size,
        "root": round.checkpoint.root.to_hex(),
        "note": round.note,
        "witnesses": round.answers,
        "not_asked": round.not_asked,
        "quorum": round.quorum,
        "quorum_met": round.quorum_met,
        "rollback_window": window,
    });
    if round.quorum_met {
        Ok(Outcome::ok(json, text))
    } else {
        let failure = format!(
            "the checkpoint of size {} is not witnessed: quorum {} not met",
            round.checkpoint.size, round.quorum
        );
        Ok(Outcome::failed(json, text, failure))
    }
}

/// The text of `path`, or of stdin for `-`.
pub fn read_input(path: &Path) -> Result<String, CliError> {
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|e| CliError::usage(format!("{}: {e}", path.display())))
}
