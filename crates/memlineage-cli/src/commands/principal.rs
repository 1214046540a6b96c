//! `memlineage principal add|list|rotate|revoke`.

use super::{Mem, open, parse_class, parse_name};
use crate::Ctx;
use crate::output::{CliError, Outcome, table};
use clap::{Args, Subcommand};
use memlineage::PrincipalName;
use memlineage::keyring::{Keyring, key_path, replace_key, save_key};
use memlineage_core::keys;
use memlineage_core::label::TrustClass;
use memlineage_core::principal::Principal;
use rand_core::OsRng;
use serde_json::{Value, json};
use std::fs;

/// `memlineage principal …`.
#[derive(Subcommand, Debug)]
pub enum PrincipalCommand {
    /// Register a principal with a fresh key (saved in the store's key directory).
    Add(AddArgs),
    /// List principals: class, keys (with the log index that added/retired them), revocation.
    List,
    /// Give a principal a new key; the old one is retired (refused for later entries).
    Rotate(RotateArgs),
    /// Revoke a principal: every entry it signs from now on is refused.
    Revoke(RevokeArgs),
}

/// `principal add`.
#[derive(Args, Debug)]
pub struct AddArgs {
    /// Name: 1 to 64 characters from a-z, 0-9, `.`, `_`, `-`.
    #[arg(value_parser = parse_name)]
    name: PrincipalName,
    /// Trust class: `trusted` (user, agent) or `external` (web, e-mail, third-party tools).
    #[arg(long, value_parser = parse_class)]
    class: TrustClass,
    /// Register the key the external signer (`--signer`) holds under this name instead of
    /// making a key file: the secret key stays in the token.
    #[arg(long)]
    external_key: bool,
}

/// `principal rotate`.
#[derive(Args, Debug)]
pub struct RotateArgs {
    /// The principal whose key is replaced.
    #[arg(value_parser = parse_name)]
    name: PrincipalName,
    /// Rotate to the one key the external signer (`--signer`) holds under this name that
    /// the principal never had (generate it in the token first) instead of a new key file.
    #[arg(long)]
    external_key: bool,
}

/// `principal revoke`.
#[derive(Args, Debug)]
pub struct RevokeArgs {
    /// The principal to revoke.
    #[arg(value_parser = parse_name)]
    name: PrincipalName,
    /// Why (recorded in the signed registry record).
    #[arg(long)]
    reason: String,
}

/// Runs a `principal` subcommand.
pub fn run(c: PrincipalCommand, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    match c {
        PrincipalCommand::Add(a) => add(&mem, a, ctx),
        PrincipalCommand::List => list(&mem, ctx),
        PrincipalCommand::Rotate(a) => rotate(&mem, a, ctx),
        PrincipalCommand::Revoke(a) => revoke(&mem, a),
    }
}

fn live(mem: &Mem, name: &PrincipalName) -> Result<Principal, CliError> {
    let registry = mem.registry()?;
    let p = registry.get(name.as_str()).cloned().ok_or_else(|| {
        CliError::failed(format!(
            "principal `{name}` is not registered (see `memlineage principal list`)"
        ))
    })?;
    if let Some(at) = p.revoked_at {
        return Err(CliError::failed(format!(
            "principal `{name}` was revoked at log index {at}{}",
            reason_suffix(&p)
        )));
    }
    Ok(p)
}

fn reason_suffix(p: &Principal) -> String {
    match p.revoke_reason.as_deref() {
        Some(r) if !r.is_empty() => format!(" (reason: {r})"),
        _ => String::new(),
    }
}

/// The key the external signer holds for `name` that is none of `known`: exactly one, or an
/// error saying what to do.
fn external_key(
    mem: &Mem,
    name: &PrincipalName,
    known: &[memlineage_core::Hash256],
) -> Result<(ed25519_dalek::VerifyingKey, String), CliError> {
    let signer = mem.signer().ok_or_else(|| {
        CliError::usage(
            "--external-key needs an external signer: give --signer or MEMLINEAGE_SIGNER",
        )
    })?;
    let fresh: Vec<_> = signer
        .public_keys(name)?
        .into_iter()
        .filter(|k| !known.contains(&keys::key_id(k)))
        .collect();
    match fresh.as_slice() {
        [key] => Ok((*key, signer.describe())),
        [] => Err(CliError::failed(format!(
            "{} holds no new Ed25519 key labelled `{name}`: generate one in the token first (docs/service.md, \"External signer\")",
            signer.describe()
        ))),
        many => Err(CliError::failed(format!(
            "{} holds {} new Ed25519 keys labelled `{name}`: keep one",
            signer.describe(),
            many.len()
        ))),
    }
}

fn add(mem: &Mem, a: AddArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    if mem.registry()?.get(a.name.as_str()).is_some() {
        return Err(CliError::failed(format!(
            "principal `{}` already exists (names are never reused; see `memlineage principal list`)",
            a.name
        )));
    }
    if a.external_key {
        let (key, signer) = external_key(mem, &a.name, &[])?;
        let written = mem.add_principal(&a.name, a.class, &key)?;
        let key_id = keys::key_id(&key).to_hex();
        let json = json!({
            "name": a.name,
            "class": a.class.as_str(),
            "key_id": key_id,
            "signer": signer,
            "id": written.id.to_hex(),
            "index": written.index,
        });
        let text = format!(
            "Added {} principal `{}` (key {}) at log index {}\nSecret key: held by {signer}",
            a.class,
            a.name,
            &key_id[..16],
            written.index,
        );
        return Ok(Outcome::ok(json, text));
    }
    let key = keys::generate(&mut OsRng);
    let file = save_key(&ctx.paths.keys, &a.name, &key).map_err(|e| {
        CliError::failed(format!(
            "{e} (a key file for `{}` already exists: move it away first)",
            a.name
        ))
    })?;
    let written = match mem.add_principal(&a.name, a.class, &key.verifying_key()) {
        Ok(w) => w,
        Err(e) => {
            let _ = fs::remove_file(&file);
            return Err(e.into());
        }
    };
    let key_id = keys::key_id(&key.verifying_key()).to_hex();
    let json = json!({
        "name": a.name,
        "class": a.class.as_str(),
        "key_id": key_id,
        "key_file": file.display().to_string(),
        "id": written.id.to_hex(),
        "index": written.index,
    });
    let text = format!(
        "Added {} principal `{}` (key {}) at log index {}\nSecret key: {}",
        a.class,
        a.name,
        &key_id[..16],
        written.index,
        file.display()
    );
    Ok(Outcome::ok(json, text))
}

fn list(mem: &Mem, ctx: &Ctx) -> Result<Outcome, CliError> {
    let registry = mem.registry()?;
    let operator = registry.operator().map(str::to_string);
    // Which secret keys sit in this store's key directory (loaded by `open`).
    let ring = Keyring::new();
    ring.load_dir(&ctx.paths.keys)?;
    let mut rows = Vec::new();
    let mut items = Vec::new();
    for p in registry.principals() {
        let current = p.current_key().map(|k| k.key_id);
        let local = PrincipalName::new(&p.name)
            .ok()
            .and_then(|n| ring.get(&n).ok())
            .map(|k| keys::key_id(&k.verifying_key()));
        let keys_json: Vec<Value> = p
            .keys
            .iter()
            .map(|k| {
                json!({
                    "key_id": k.key_id.to_hex(),
                    "added_at": k.added_at,
                    "retired_at": k.retired_at,
                    "current": Some(k.key_id) == current,
                })
            })
            .collect();
        let is_op = operator.as_deref() == Some(p.name.as_str());
        items.push(json!({
            "name": p.name,
            "class": p.class.as_str(),
            "operator": is_op,
            "revoked": p.revoked_at.is_some(),
            "revoked_at": p.revoked_at,
            "revoke_reason": p.revoke_reason,
            "keys": keys_json,
            "secret_key_here": local.is_some() && local == current,
        }));
        let status = match p.revoked_at {
            Some(at) => format!("revoked@{at}"),
            None if is_op => "active, operator".to_string(),
            None => "active".to_string(),
        };
        let keys_text: Vec<String> = p
            .keys
            .iter()
            .map(|k| {
                let mut s = format!("{} +{}", &k.key_id.to_hex()[..12], k.added_at);
                if let Some(r) = k.retired_at {
                    s.push_str(&format!(" -{r}"));
                }
                s
            })
            .collect();
        let secret = if local.is_some() && local == current {
            "yes"
        } else {
            "no"
        };
        rows.push(vec![
            p.name.clone(),
            p.class.to_string(),
            status,
            secret.to_string(),
            keys_text.join(", "),
        ]);
    }
    let json = json!({ "operator": operator, "principals": items });
    let mut text = table(
        &[
            "NAME",
            "CLASS",
            "STATUS",
            "SECRET",
            "KEYS (id +added -retired)",
        ],
        &rows,
    );
    text.push_str(&format!(
        "SECRET: whether {} holds the current secret key.\n",
        ctx.paths.keys.display()
    ));
    Ok(Outcome::ok(json, text))
}

fn rotate(mem: &Mem, a: RotateArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let p = live(mem, &a.name)?;
    let old = p.current_key().map(|k| k.key_id.to_hex());
    if a.external_key {
        let known: Vec<_> = p.keys.iter().map(|k| k.key_id).collect();
        let (key, signer) = external_key(mem, &a.name, &known)?;
        let written = mem.rotate_principal_to(&a.name, &key)?;
        let key_id = keys::key_id(&key).to_hex();
        let json = json!({
            "name": a.name,
            "old_key_id": old,
            "key_id": key_id,
            "signer": signer,
            "id": written.id.to_hex(),
            "index": written.index,
        });
        let text = format!(
            "Rotated `{}` to key {} held by {signer} at log index {} (the old key is refused from now on)",
            a.name,
            &key_id[..16],
            written.index
        );
        return Ok(Outcome::ok(json, text));
    }
    // The new key is saved before it is registered, so it is never lost: first to
    // keys/pending/NAME.key, then (once the rotation is in the log) over keys/NAME.key.
    let pending_dir = ctx.paths.keys.join("pending");
    let pending = key_path(&pending_dir, &a.name);
    if pending.exists() {
        let _ = fs::remove_file(&pending);
    }
    let key = keys::generate(&mut OsRng);
    save_key(&pending_dir, &a.name, &key)?;
    let written = match mem.rotate_principal(&a.name, &key) {
        Ok(w) => w,
        Err(e) => {
            let _ = fs::remove_file(&pending);
            return Err(e.into());
        }
    };
    let file = replace_key(&ctx.paths.keys, &a.name, &key).map_err(|e| {
        CliError::failed(format!(
            "the rotation is in the log, but saving the new key failed: {e}; the new key is in {}: move it to {} by hand",
            pending.display(),
            key_path(&ctx.paths.keys, &a.name).display()
        ))
    })?;
    let _ = fs::remove_file(&pending);
    let _ = fs::remove_dir(&pending_dir);
    let key_id = keys::key_id(&key.verifying_key()).to_hex();
    let (risk, risk_text) = super::history::at_risk_note(written.index);
    let mut json = json!({
        "name": a.name,
        "old_key_id": old,
        "key_id": key_id,
        "key_file": file.display().to_string(),
        "id": written.id.to_hex(),
        "index": written.index,
        "rollback_risk": risk,
    });
    let mut text = format!(
        "Rotated `{}` to key {} at log index {} (the old key is refused from now on)\nSecret key: {}\n{risk_text}",
        a.name,
        &key_id[..16],
        written.index,
        file.display()
    );
    if mem.operator()? == a.name {
        // The operator signs checkpoints: its new verifier key is what witnesses, monitors
        // and clients must now trust (the rotation record in the log publishes it).
        let vkey = mem.verifier_key()?.to_vkey();
        text.push_str(&format!(
            "\nThe log's new verifier key (give it to witnesses: `memlineage witness add-log`):\n{vkey}"
        ));
        json["vkey"] = json!(vkey);
    }
    Ok(Outcome::ok(json, text))
}

fn revoke(mem: &Mem, a: RevokeArgs) -> Result<Outcome, CliError> {
    live(mem, &a.name)?;
    let written = mem.revoke_principal(&a.name, &a.reason)?;
    let (risk, risk_text) = super::history::at_risk_note(written.index);
    let json = json!({
        "name": a.name,
        "reason": a.reason,
        "id": written.id.to_hex(),
        "index": written.index,
        "rollback_risk": risk,
    });
    let text = format!(
        "Revoked `{}` at log index {}: every entry it signs from now on is refused.\nEntries it wrote before stay valid; to taint them too, run `memlineage distrust --principal {}`.\n{risk_text}",
        a.name, written.index, a.name
    );
    Ok(Outcome::ok(json, text))
}
