//! `memlineage init`: a new store with its operator, genesis record and default principals.

use super::{Mem, parse_fallback, parse_name, parse_weight, principal};
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::Args;
use ed25519_dalek::SigningKey;
use memlineage::keyring::{key_path, save_key};
use memlineage::{Memory, PrincipalName, Settings};
use memlineage_core::keys;
use memlineage_core::label::{Fallback, TrustClass, Weight};
use rand_core::{OsRng, RngCore};
use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};

/// The default trusted writer registered by `init`.
pub const DEFAULT_AGENT: &str = "agent";
/// The default external writer registered by `init`.
pub const DEFAULT_EXTERNAL: &str = "web";

/// `memlineage init`.
#[derive(Args, Debug)]
pub struct InitArgs {
    /// Default τ: an edge counts as strong when its weight is strictly greater.
    #[arg(long, default_value = "0.5", value_parser = parse_weight)]
    tau: Weight,
    /// Default label fallback when no parent is strong: strict or permissive.
    #[arg(long, default_value = "strict", value_parser = parse_fallback)]
    fallback: Fallback,
    /// Checkpoint origin line (default: memlineage.local/<16 random hex digits>).
    #[arg(long)]
    origin: Option<String>,
    /// Name of the operator principal (signs registry changes and checkpoints). Default:
    /// `operator`.
    #[arg(long, value_parser = parse_name)]
    operator: Option<PrincipalName>,
}

impl Default for InitArgs {
    /// The documented defaults: τ = 0.5, strict fallback, a random origin, operator `operator`.
    fn default() -> Self {
        InitArgs {
            tau: Weight::from_bp(5000).unwrap_or(Weight::ONE),
            fallback: Fallback::Strict,
            origin: None,
            operator: None,
        }
    }
}

/// Files created so far, removed again if initialisation fails half-way.
struct Created(Vec<PathBuf>);

impl Created {
    fn undo(&self) {
        for p in self.0.iter().rev() {
            let _ = fs::remove_file(p);
        }
    }
}

/// Runs `init`.
pub fn run(a: InitArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    create(a, ctx).map(|(_, outcome)| outcome)
}

/// Makes the store and returns its handle (with the new keys loaded) and the outcome.
pub fn create(a: InitArgs, ctx: &Ctx) -> Result<(Mem, Outcome), CliError> {
    let paths = &ctx.paths;
    let operator = match &a.operator {
        Some(o) => o.clone(),
        None => principal("operator")?,
    };
    if paths.db.as_ref().is_some_and(|db| db.exists()) {
        return Err(CliError::failed(format!(
            "a store already exists at {} (refusing to re-initialise it; use another --store path)",
            paths.describe()
        )));
    }
    let origin = match a.origin {
        Some(o) => o,
        None => {
            let mut b = [0u8; 8];
            OsRng.fill_bytes(&mut b);
            format!("memlineage.local/{}", hex::encode(b))
        }
    };
    memlineage_core::checkpoint::Checkpoint::new(&origin, 0, Default::default())
        .validate()
        .map_err(|e| CliError::usage(format!("invalid --origin: {e}")))?;
    let mut principals: Vec<(PrincipalName, TrustClass)> =
        vec![(operator.clone(), TrustClass::Trusted)];
    for (name, class) in [
        (DEFAULT_AGENT, TrustClass::Trusted),
        (DEFAULT_EXTERNAL, TrustClass::External),
    ] {
        if operator != name {
            principals.push((principal(name)?, class));
        }
    }
    for (name, _) in &principals {
        let p = key_path(&paths.keys, name);
        if p.exists() {
            return Err(CliError::failed(format!(
                "{} already exists (left over from another store?): move it away or use another --store path",
                p.display()
            )));
        }
    }
    if let Some(dir) = paths.dir() {
        create_private_dir(&dir)?;
    }
    let keys: Vec<SigningKey> = principals
        .iter()
        .map(|_| keys::generate(&mut OsRng))
        .collect();
    let mut created = Created(Vec::new());
    let result = (|| -> Result<_, CliError> {
        for ((name, _), key) in principals.iter().zip(&keys) {
            created.0.push(save_key(&paths.keys, name, key)?);
        }
        if let Some(db) = &paths.db {
            created.0.push(db.clone());
            for suffix in ["-wal", "-shm"] {
                let mut s = db.clone().into_os_string();
                s.push(suffix);
                created.0.push(PathBuf::from(s));
            }
        }
        let settings = Settings {
            origin: origin.clone(),
            tau: a.tau,
            fallback: a.fallback,
        };
        let mem = Memory::init_at(&paths.location, settings, &operator, keys[0].clone())
            .map_err(|e| match e {
                memlineage::Error::State(memlineage::error::StoreState::AlreadyInitialised) => {
                    CliError::failed(format!(
                        "a store already exists at {} (refusing to re-initialise it; use another --store location)",
                        paths.describe()
                    ))
                }
                e => CliError::from(e),
            })?;
        mem.keys().insert(&operator, keys[0].clone());
        let genesis = mem.log(0, 1)?.first().map(|v| v.entry.id().to_hex());
        let mut out = Vec::new();
        for (i, ((name, class), key)) in principals.iter().zip(&keys).enumerate() {
            let record = if i == 0 {
                None
            } else {
                mem.keys().insert(name, key.clone());
                Some(mem.add_principal(name, *class, &key.verifying_key())?)
            };
            out.push((name.clone(), *class, key.verifying_key(), record));
        }
        Ok((mem, genesis, out))
    })();
    let (mem, genesis, registered) = match result {
        Ok(r) => r,
        Err(e) => {
            created.undo();
            return Err(e);
        }
    };
    let principals_json: Vec<_> = registered
        .iter()
        .map(|(name, class, key, _)| {
            json!({
                "name": name,
                "class": class.as_str(),
                "key_id": keys::key_id(key).to_hex(),
                "key_file": key_path(&paths.keys, name).display().to_string(),
            })
        })
        .collect();
    let json = json!({
        "store": paths.db.as_ref().map_or_else(|| paths.location.to_string(), |d| d.display().to_string()),
        "keys_dir": paths.keys.display().to_string(),
        "origin": origin,
        "tau": a.tau.to_string(),
        "fallback": a.fallback.as_str(),
        "operator": operator,
        "genesis": genesis,
        "principals": principals_json,
        "default_writer": registered.iter().any(|(n, ..)| *n == DEFAULT_AGENT).then_some(DEFAULT_AGENT),
    });
    let mut text = format!(
        "Initialised a new MemLineage store at {}\n  origin    {origin}\n  labels    tau {}, fallback {}\n  operator  {} (trusted; signs registry changes and checkpoints)\n",
        paths
            .db
            .as_ref()
            .map_or_else(|| paths.location.to_string(), |d| d.display().to_string()),
        a.tau,
        a.fallback,
        operator
    );
    text.push_str("Registered default principals, so `memlineage write` works right away:\n");
    for (name, class, ..) in registered.iter().skip(1) {
        let role = if *name == DEFAULT_AGENT {
            "the default writer (`write --as agent`)"
        } else {
            "for tool output such as web pages (`write --as web`)"
        };
        text.push_str(&format!("  {name:<8} {:<9} {role}\n", class.as_str()));
    }
    text.push_str(&format!(
        "Secret keys are in {} (readable only by you). Keep them with the store.\n",
        paths.keys.display()
    ));
    Ok((mem, Outcome::ok(json, text)))
}

fn create_private_dir(dir: &Path) -> Result<(), CliError> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
        .map_err(|e| CliError::failed(format!("cannot create {}: {e}", dir.display())))
}
