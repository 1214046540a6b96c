//! The world of one episode: a fresh in-memory store, its principals and seeded keys, and the
//! attacker's raw access to the store under the API.

use crate::error::EvalError;
use crate::scenario::AgentFile;
use memlineage::store::NewRecord;
use memlineage::{AttributionName, Memory, PrincipalName, Settings, SqliteStore, StepClock};
use memlineage_core::entry::{EntryBody, EntryKind, Scope, SignedEntry};
use memlineage_core::keys::Domain;
use memlineage_core::label::{Fallback, TrustLabel, Weight};
use memlineage_core::{EntryId, Hash256, keys};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::collections::BTreeMap;

/// The memory of one episode.
pub(crate) type Mem = Memory;

/// A principal name of the scenario files.
pub(crate) fn principal(name: &str) -> Result<PrincipalName, EvalError> {
    name.parse()
        .map_err(|e: memlineage_core::principal::NameError| {
            EvalError::scenario("agent.toml", e.to_string())
        })
}

/// An attribution algorithm name of the harness.
pub(crate) fn attribution(name: &str) -> Result<AttributionName, EvalError> {
    name.parse()
        .map_err(|e: memlineage_core::names::AttributionNameError| {
            EvalError::scenario("agent.toml", e.to_string())
        })
}

/// A fresh store with every principal of `agent.toml` registered and its key loaded, labels
/// computed with `fallback`. The clock starts at `agent.start_ms` and steps by `agent.step_ms`.
pub(crate) fn new_memory(agent: &AgentFile, fallback: Fallback) -> Result<Mem, EvalError> {
    new_memory_with(agent, agent.agent.tau, fallback)
}

/// A fresh store as [`new_memory`], with the store rule τ = `tau` and `fallback`. Entries may
/// override the rule only to be stricter, so the τ×K ablation, which sets τ and the fallback on
/// every entry, runs on a store with the laxest rule (τ = 1, permissive).
pub(crate) fn new_memory_with(
    agent: &AgentFile,
    tau: Weight,
    fallback: Fallback,
) -> Result<Mem, EvalError> {
    let cfg = &agent.agent;
    let settings = Settings {
        origin: cfg.origin.clone(),
        tau,
        fallback,
    };
    let operator = agent.principal.first().ok_or_else(|| {
        EvalError::scenario("agent.toml", "no principal (the first is the operator)")
    })?;
    let mem = Memory::init(
        SqliteStore::in_memory()?,
        settings,
        &principal(&operator.name)?,
        keys::generate(&mut ChaCha20Rng::seed_from_u64(operator.seed)),
    )?
    .with_clock(StepClock::new(cfg.start_ms, cfg.step_ms));
    for p in &agent.principal[1..] {
        let key = keys::generate(&mut ChaCha20Rng::seed_from_u64(p.seed));
        let name = principal(&p.name)?;
        mem.add_principal(&name, p.class, &key.verifying_key())?;
        mem.keys().insert(&name, key);
    }
    Ok(mem)
}

/// Parses a scope of `agent.toml`.
pub(crate) fn scope(s: &str) -> Result<Scope, EvalError> {
    Scope::new(s).map_err(|e| EvalError::scenario("agent.toml", e.to_string()))
}

/// How the attacker of `poison_raw` signs the record it plants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Forgery {
    /// A zero signature; the record claims the impersonated writer.
    Unsigned,
    /// Claims the impersonated writer (and its key id), signed with the attacker's own key.
    Forged,
    /// Written under the attacker's own name, signed with a key nobody registered.
    Unregistered,
}

impl Forgery {
    pub(crate) fn parse(s: &str) -> Result<Forgery, EvalError> {
        match s {
            "unsigned" => Ok(Forgery::Unsigned),
            "forged" => Ok(Forgery::Forged),
            "unregistered" => Ok(Forgery::Unregistered),
            other => Err(EvalError::Harness(format!("unknown forgery `{other}`"))),
        }
    }
}

/// Appends a raw record straight into the store, bypassing the API: no registry check, no
/// signature check, no label computation (it claims `TRUSTED`). The store still indexes it for
/// search and hashes it into the Merkle tree, as any row written under the API would be.
pub(crate) fn plant_raw(
    mem: &Mem,
    agent: &AgentFile,
    forgery: Forgery,
    scope: Scope,
    content: &str,
    created_at_ms: u64,
) -> Result<EntryId, EvalError> {
    let atk = &agent.attacker;
    let impersonated = agent
        .principal
        .iter()
        .find(|p| p.name == atk.impersonates)
        .ok_or_else(|| EvalError::scenario("agent.toml", "`impersonates` names no principal"))?;
    let (writer, signing_seed, claimed_seed) = match forgery {
        Forgery::Unsigned | Forgery::Forged => {
            (atk.impersonates.clone(), atk.forger_seed, impersonated.seed)
        }
        Forgery::Unregistered => (
            atk.unregistered_name.clone(),
            atk.unregistered_seed,
            atk.unregistered_seed,
        ),
    };
    let signing_key = keys::generate(&mut ChaCha20Rng::seed_from_u64(signing_seed));
    // The key id the record names: the impersonated writer's (public) key, or the attacker's.
    let claimed = keys::generate(&mut ChaCha20Rng::seed_from_u64(claimed_seed));
    let body = EntryBody {
        scope,
        writer,
        key_id: keys::key_id(&claimed.verifying_key()),
        kind: EntryKind::Observation,
        content_hash: Hash256::of(content.as_bytes()),
        content_len: content.len() as u64,
        source_hash: None,
        context_hash: None,
        parents: Vec::new(),
        attribution: "none".to_string(),
        tau: mem.settings().tau,
        fallback: mem.settings().fallback,
        label: TrustLabel::Trusted,
        created_at_ms,
        metadata: BTreeMap::new(),
    };
    body.validate()?;
    let body_bytes = body.canonical_bytes();
    let signature = match forgery {
        Forgery::Unsigned => [0u8; 64],
        Forgery::Forged | Forgery::Unregistered => {
            keys::sign(&signing_key, Domain::EntryV1, &body_bytes).to_bytes()
        }
    };
    // The canonical leaf: `{"sig": bytes(64), "body": body}` (docs/formats.md).
    let mut leaf = Vec::with_capacity(body_bytes.len() + 80);
    leaf.push(0xa2);
    leaf.extend_from_slice(&[0x63, b's', b'i', b'g', 0x58, 0x40]);
    leaf.extend_from_slice(&signature);
    leaf.extend_from_slice(&[0x64, b'b', b'o', b'd', b'y']);
    leaf.extend_from_slice(&body_bytes);
    let entry = SignedEntry::from_leaf(&leaf)?;
    let id = entry.id();
    let record = NewRecord {
        entry,
        content: content.as_bytes().to_vec(),
        search_text: Some(content.to_string()),
    };
    // Under the API: the attacker writes the row straight into the store, unchecked.
    mem.unchecked().append(&[record])?;
    Ok(id)
}

/// Tiny helper: the weight `τ − margin` (saturating at 0).
pub(crate) fn under(tau: Weight, margin_bp: u16) -> Weight {
    Weight::from_bp(tau.bp().saturating_sub(margin_bp)).unwrap_or(Weight::ZERO)
}
