//! The commands, one file per group, and what they share: opening the store, resolving entry
//! ids (full or a unique prefix), and the argument parsers clap uses (their errors exit 2).

pub mod attribute;
pub mod bench;
pub mod checkpoint;
pub mod control;
pub mod debug;
pub mod demo;
pub mod eval;
pub mod gate;
pub mod history;
pub mod init;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod migrate;
pub mod monitor;
pub mod principal;
pub mod proof;
pub mod query;
pub mod read;
#[cfg(feature = "server")]
pub mod serve;
#[cfg(feature = "server")]
pub mod service_bench;
pub mod trust;
pub mod verify;
pub mod witness;
pub mod write;

use crate::output::CliError;
use crate::paths::StorePaths;
use memlineage::{EntryView, IdPrefix, Memory, PrincipalName};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::label::{Fallback, TrustClass, Weight};
use memlineage_core::records::{Distrust, DistrustTarget, RegistryChange, Tombstone};
use serde_json::{Value, json};

/// The memory handle the CLI works with (whatever the backend).
pub type Mem = Memory;

/// Opens an existing, initialised store and loads the secret keys of the key directory.
pub fn open(paths: &StorePaths) -> Result<Mem, CliError> {
    let mem = Memory::open_at(&paths.location).map_err(|e| cannot_open(paths, e, true))?;
    mem.keys().load_dir(&paths.keys)?;
    if let Some(spec) = &paths.signer {
        mem.set_signer(memlineage::signer::open_with_timeout(
            spec,
            paths.signer_timeout,
        )?);
    }
    Ok(mem.with_reader(paths.trust.clone())?)
}

/// The embedding model `--embedding-model` names: `default` (where
/// scripts/fetch-embedding-model.sh installs it, or $MEMLINEAGE_EMBEDDING_MODEL) or the
/// directory of its files.
#[cfg(feature = "models")]
#[cfg_attr(not(any(feature = "server", feature = "mcp")), allow(dead_code))]
pub fn embedding_model(
    model: &std::path::Path,
) -> Result<std::sync::Arc<dyn memlineage::search::TextEmbedder>, CliError> {
    Ok(if model.as_os_str() == "default" {
        memlineage::search::embedder::load_default_embedder()?
    } else {
        memlineage::search::embedder::load_embedder(model)?
    })
}

/// Without the cargo feature `models` there is no embedding model to load.
#[cfg(not(feature = "models"))]
#[cfg_attr(not(any(feature = "server", feature = "mcp")), allow(dead_code))]
pub fn embedding_model(
    _model: &std::path::Path,
) -> Result<std::sync::Arc<dyn memlineage::search::TextEmbedder>, CliError> {
    Err(CliError::usage(
        "--embedding-model needs the cargo feature `models`: this build lacks it (cargo install with --features models, then run scripts/fetch-embedding-model.sh)",
    ))
}

/// Opens an existing store for `verify`, without trusting its registry first.
pub fn open_for_audit(paths: &StorePaths) -> Result<Mem, CliError> {
    Memory::open_for_audit_at(&paths.location).map_err(|e| cannot_open(paths, e, false))
}

/// Why a store cannot be opened, in the CLI's words.
pub fn cannot_open(paths: &StorePaths, e: memlineage::Error, audit_hint: bool) -> CliError {
    match e {
        memlineage::Error::State(memlineage::error::StoreState::Missing { .. }) => {
            CliError::failed(format!(
                "no store at {}: run `memlineage init` first, or point --store or MEMLINEAGE_STORE at an existing store",
                paths.describe()
            ))
        }
        e if audit_hint => CliError::failed(format!(
            "cannot open the store at {}: {e} (run `memlineage verify` for a full audit)",
            paths.describe()
        )),
        e => CliError::failed(format!(
            "cannot open the store at {}: {e}",
            paths.describe()
        )),
    }
}

/// A refused write, in the CLI's words: which key file is missing or stale names the file in
/// the key directory (the library knows principals, not files).
pub fn refused(e: memlineage::Error, paths: &StorePaths) -> CliError {
    use memlineage::error::Refusal;
    match &e {
        memlineage::Error::NoKey(name) => CliError::failed(format!(
            "no secret key for `{name}`: expected {} (is this the right store?)",
            memlineage::keyring::key_path(&paths.keys, name).display()
        )),
        memlineage::Error::Refused(Refusal::KeyNotCurrent { name, current }) => {
            let file = name
                .parse::<PrincipalName>()
                .map(|n| {
                    memlineage::keyring::key_path(&paths.keys, &n)
                        .display()
                        .to_string()
                })
                .unwrap_or_else(|_| name.clone());
            CliError::failed(format!(
                "refused: {file} is not the current key of `{name}` (it was rotated; the current key id is {})",
                current.map_or_else(String::new, |k| k.to_hex())
            ))
        }
        _ => CliError::from(e),
    }
}

/// An entry id as typed: 8 to 64 hex characters (a full id or a unique prefix).
pub type IdArg = IdPrefix;

/// Parses an entry id or id prefix (clap value parser).
pub fn parse_id(s: &str) -> Result<IdArg, String> {
    s.parse::<IdPrefix>().map_err(|e| e.to_string())
}

/// Resolves an id or a unique id prefix against the log (one indexed read).
pub fn resolve_id(mem: &Mem, arg: &IdArg) -> Result<EntryId, CliError> {
    Ok(mem.resolve_prefix(arg)?)
}

/// A `--parent ID[:WEIGHT]` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentArg {
    /// The parent id or prefix.
    pub id: IdArg,
    /// The attribution weight, when given.
    pub weight: Option<Weight>,
}

/// Parses `ID[:WEIGHT]` (clap value parser).
pub fn parse_parent(s: &str) -> Result<ParentArg, String> {
    let (id, weight) = match s.split_once(':') {
        Some((id, w)) => (id, Some(parse_weight(w)?)),
        None => (s, None),
    };
    Ok(ParentArg {
        id: parse_id(id)?,
        weight,
    })
}

/// Parses a weight or τ in [0, 1] with at most four decimals (clap value parser).
pub fn parse_weight(s: &str) -> Result<Weight, String> {
    s.parse::<Weight>().map_err(|e| e.to_string())
}

/// Parses a scope path (clap value parser).
pub fn parse_scope(s: &str) -> Result<Scope, String> {
    Scope::new(s).map_err(|e| e.to_string())
}

/// Parses `strict` or `permissive` (clap value parser).
pub fn parse_fallback(s: &str) -> Result<Fallback, String> {
    s.parse::<Fallback>().map_err(|e| e.to_string())
}

/// Parses `trusted` or `external` (clap value parser).
pub fn parse_class(s: &str) -> Result<TrustClass, String> {
    s.parse::<TrustClass>().map_err(|e| e.to_string())
}

/// A principal name the CLI itself names (`agent`, `web`, the demo's principals).
pub fn principal(name: &str) -> Result<PrincipalName, CliError> {
    name.parse::<PrincipalName>()
        .map_err(|e| CliError::failed(e.to_string()))
}

/// Parses a principal name (clap value parser).
pub fn parse_name(s: &str) -> Result<PrincipalName, String> {
    s.parse::<PrincipalName>().map_err(|e| e.to_string())
}

/// Parses the kind of a content entry (clap value parser): control kinds are written by their
/// own commands.
pub fn parse_content_kind(s: &str) -> Result<EntryKind, String> {
    match s.parse::<EntryKind>() {
        Ok(k) if !k.is_control() => Ok(k),
        _ => Err(format!(
            "invalid kind `{}`: expected user_input, tool_output, observation or derived",
            s.chars().take(80).collect::<String>()
        )),
    }
}

/// Parses `KEY=VALUE` (clap value parser).
pub fn parse_meta(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && k.len() <= 64 && v.len() <= 4096 => {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(format!(
            "invalid metadata `{}`: expected KEY=VALUE with a 1 to 64 byte key and a value of at most 4096 bytes",
            s.chars().take(80).collect::<String>()
        )),
    }
}

/// The decoded content of a control record, as JSON; `None` for content entries.
pub fn record_json(kind: EntryKind, content: &[u8]) -> Option<Value> {
    let v = match kind {
        EntryKind::Registry => match RegistryChange::from_content(content) {
            Ok(RegistryChange::Add { name, class, key }) => json!({
                "op": "add", "name": name, "class": class.as_str(),
                "key": hex::encode(key.as_bytes()),
                "key_id": memlineage_core::keys::key_id(&key).to_hex(),
            }),
            Ok(RegistryChange::Rotate { name, key }) => json!({
                "op": "rotate", "name": name,
                "key": hex::encode(key.as_bytes()),
                "key_id": memlineage_core::keys::key_id(&key).to_hex(),
            }),
            Ok(RegistryChange::Revoke { name, reason }) => {
                json!({ "op": "revoke", "name": name, "reason": reason })
            }
            Err(e) => json!({ "error": e.to_string() }),
        },
        EntryKind::Tombstone => match Tombstone::from_content(content) {
            Ok(t) => json!({ "target": t.target.to_hex(), "erase": t.erase, "reason": t.reason }),
            Err(e) => json!({ "error": e.to_string() }),
        },
        EntryKind::Distrust => match Distrust::from_content(content) {
            Ok(d) => {
                let mut obj = target_json(&d.target);
                obj["reason"] = json!(d.reason);
                obj
            }
            Err(e) => json!({ "error": e.to_string() }),
        },
        _ => return None,
    };
    Some(v)
}

/// `{"entry": id}` or `{"principal": name}`.
pub fn target_json(t: &DistrustTarget) -> Value {
    match t {
        DistrustTarget::Entry(id) => json!({ "entry": id.to_hex() }),
        DistrustTarget::Principal(p) => json!({ "principal": p }),
    }
}

/// A one-line description of an entry's content for tables.
pub fn summary(view: &EntryView) -> String {
    let kind = view.entry.body().kind;
    let Some(content) = &view.content else {
        return "(erased)".to_string();
    };
    match record_json(kind, content) {
        Some(rec) => {
            let s = |k: &str| rec.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            match kind {
                EntryKind::Registry => {
                    let op = s("op");
                    let extra = match op.as_str() {
                        "add" => format!(" ({})", s("class")),
                        "revoke" => format!(": {}", s("reason")),
                        _ => String::new(),
                    };
                    format!("{op} {}{extra}", s("name"))
                }
                EntryKind::Tombstone => {
                    let verb = if rec.get("erase").and_then(Value::as_bool) == Some(true) {
                        "forget+erase"
                    } else {
                        "forget"
                    };
                    format!("{verb} {}", short_hex(&s("target")))
                }
                _ => match (rec.get("entry"), rec.get("principal")) {
                    (Some(e), _) => format!("distrust {}", short_hex(e.as_str().unwrap_or(""))),
                    (_, Some(p)) => format!("distrust principal {}", p.as_str().unwrap_or("")),
                    _ => "distrust".to_string(),
                },
            }
        }
        None => String::from_utf8_lossy(content).into_owned(),
    }
}

fn short_hex(s: &str) -> String {
    s.chars().take(12).collect()
}

/// Checks an entry's signer and signature against the registry as replayed from the log.
pub fn check_signature(mem: &Mem, view: &EntryView) -> Result<(), String> {
    let registry = mem.registry().map_err(|e| e.to_string())?;
    let body = view.entry.body();
    let (_, key) = registry
        .signer_at(&body.writer, &body.key_id, view.index)
        .map_err(|e| e.to_string())?;
    view.entry.verify_signature(key).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_and_parent_parsing() {
        assert!(parse_id("abc").is_err());
        assert!(parse_id("zzzzzzzz").is_err());
        assert_eq!(parse_id("ABCDEF01").unwrap().as_str(), "abcdef01");
        assert!(parse_id(&"a".repeat(65)).is_err());
        let p = parse_parent("abcdef01:0.25").unwrap();
        assert_eq!(p.weight.unwrap().bp(), 2500);
        assert!(parse_parent("abcdef01:1.5").is_err());
        assert!(parse_parent("abcdef01").unwrap().weight.is_none());
    }

    #[test]
    fn kinds_and_meta() {
        assert!(parse_content_kind("tombstone").is_err());
        assert_eq!(parse_content_kind("derived").unwrap(), EntryKind::Derived);
        assert_eq!(parse_meta("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert!(parse_meta("=x").is_err());
        assert!(parse_meta("novalue").is_err());
    }
}
