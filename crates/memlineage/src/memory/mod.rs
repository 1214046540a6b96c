//! The [`Memory`] handle: the one object an agent holds. `Send + Sync`, no global state.

mod anchor;
mod attribute;
mod audit;
mod cli_support;
mod control;
mod distrusted;
mod effective;
mod gate;
mod label_cache;
mod lineage;
mod parent_labels;
mod read;
mod relabel;
mod retrieve;
mod semantic;
mod signature_helper;
mod signing;
mod verified_note;
mod write;

pub use audit::{AuditProblem, AuditReport};
pub use gate::{GateOutcome, GateRequest};
pub use lineage::Direction;
pub use read::{EntryView, InclusionProof};
pub use retrieve::{Dropped, Retrieval};
pub use write::{RELABEL_ATTEMPTS, WriteRequest, Written};

use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::keyring::Keyring;
use crate::store::{Store, StoreRead};
use memlineage_core::entry::SignedEntry;
use memlineage_core::label::{Fallback, Weight};
use memlineage_core::principal::Registry;
use memlineage_core::records::RegistryChange;
use memlineage_core::rule::LabelRule;
use std::sync::{Arc, Mutex};

/// Store-wide settings, fixed at `init` and kept in the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The checkpoint origin line (C2SP tlog-checkpoint), unique per log.
    pub origin: String,
    /// Default τ for labels.
    pub tau: Weight,
    /// Default fallback for labels.
    pub fallback: Fallback,
}

impl Settings {
    /// The documented defaults: τ = 0.5, strict fallback.
    pub fn with_origin(origin: &str) -> Settings {
        Settings {
            origin: origin.to_string(),
            tau: Weight::from_bp(5000).unwrap_or(Weight::ONE),
            fallback: Fallback::Strict,
        }
    }
}

/// The registry as of some log size, refreshed from the store when other writers append, and
/// the distrust records replayed beside it.
///
/// Both are shared with the operation in progress (`Arc`): a write or a retrieval takes a
/// snapshot without copying them, and a catch-up copies only while such a snapshot is held.
struct RegistryCache {
    registry: Arc<Registry>,
    next: u64,
    distrust: Arc<distrusted::DistrustLog>,
}

/// Signed, lineage-labelled agent memory over a [`Store`].
pub struct Memory<S: Store> {
    store: S,
    keys: Keyring,
    settings: Settings,
    cache: Mutex<RegistryCache>,
    /// Signed labels of entries written or looked up as parents (`label_cache.rs`).
    labels: label_cache::LabelCache,
    /// The last checkpoint note whose signature verified (`verified_note.rs`).
    verified_note: verified_note::VerifiedNote,
    /// The helper thread that verifies retrievals' signatures beside them
    /// (`signature_helper.rs`).
    signatures: signature_helper::SignatureHelper,
    /// The embedding model and vector index of semantic retrieval, when a model is attached
    /// (`semantic.rs`).
    semantic: Option<semantic::Semantic>,
    clock: Box<dyn Clock>,
}

impl<S: Store> Memory<S> {
    /// Initialises an empty store: records the settings and writes the genesis record, in
    /// which `operator` (a trusted principal) registers itself with `operator_key`.
    pub fn init(
        store: S,
        settings: Settings,
        operator: &str,
        operator_key: ed25519_dalek::SigningKey,
    ) -> Result<Memory<S>, Error> {
        if store.size()? != 0 || store.setting("origin")?.is_some() {
            return Err(Error::Store(
                "the store is already initialised (refusing to overwrite it)".into(),
            ));
        }
        memlineage_core::checkpoint::Checkpoint::new(&settings.origin, 0, Default::default())
            .validate()
            .map_err(|e| Error::Invalid(format!("origin: {e}")))?;
        store.set_setting("origin", &settings.origin)?;
        store.set_setting("tau", &settings.tau.to_string())?;
        store.set_setting("fallback", settings.fallback.as_str())?;
        store.set_setting("operator", operator)?;
        let mem = Memory::from_parts(store, settings);
        mem.keys.insert(operator, operator_key.clone());
        mem.registry_change(
            operator,
            RegistryChange::Add {
                name: operator.to_string(),
                class: memlineage_core::label::TrustClass::Trusted,
                key: operator_key.verifying_key(),
            },
        )?;
        Ok(mem)
    }

    /// Opens an initialised store.
    pub fn open(store: S) -> Result<Memory<S>, Error> {
        let settings = stored_settings(&store)?;
        let (tau, fallback) = (settings.tau, settings.fallback);
        let signed = genesis_rule(&store)?;
        if signed != LabelRule::new(tau, fallback) {
            return Err(Error::Integrity(format!(
                "the settings table says τ {tau}, fallback {fallback}, but the genesis record signs τ {}, fallback {}: the settings were edited behind the program's back (run `memlineage verify`)",
                signed.tau, signed.fallback
            )));
        }
        let mem = Memory::from_parts(store, settings);
        mem.refresh_registry()?;
        Ok(mem)
    }

    fn from_parts(store: S, settings: Settings) -> Memory<S> {
        Memory {
            store,
            keys: Keyring::new(),
            settings,
            cache: Mutex::new(RegistryCache {
                registry: Arc::new(Registry::new()),
                next: 0,
                distrust: Arc::new(distrusted::DistrustLog::default()),
            }),
            labels: label_cache::LabelCache::default(),
            verified_note: verified_note::VerifiedNote::default(),
            signatures: signature_helper::SignatureHelper::default(),
            semantic: None,
            clock: Box::new(SystemClock),
        }
    }

    /// Replaces the clock (the evaluation uses a deterministic one).
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Memory<S> {
        self.clock = Box::new(clock);
        self
    }

    /// The keyring: load the secret keys this process signs with.
    pub fn keys(&self) -> &Keyring {
        &self.keys
    }

    /// The store settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The store's label rule (τ and fallback), as signed into the genesis record: per-entry
    /// overrides may only be stricter (`memlineage_core::rule`).
    pub fn store_rule(&self) -> LabelRule {
        LabelRule::new(self.settings.tau, self.settings.fallback)
    }

    /// The underlying store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The registry as of now (refreshed from the store).
    pub fn registry(&self) -> Result<Registry, Error> {
        self.refresh_registry()
    }

    fn lock_cache(&self) -> Result<std::sync::MutexGuard<'_, RegistryCache>, Error> {
        self.cache.lock().map_err(|_| {
            Error::Store("registry cache poisoned by a panic in another thread".into())
        })
    }

    /// Applies registry records appended since the cache was last refreshed.
    fn refresh_registry(&self) -> Result<Registry, Error> {
        let mut guard = self.lock_cache()?;
        let cache = &mut *guard;
        catch_up(
            &self.store,
            Arc::make_mut(&mut cache.registry),
            &mut cache.next,
        )?;
        Ok(Registry::clone(&cache.registry))
    }

    /// The registry and the distrust records, both refreshed from the log: snapshots shared
    /// with the cache, not copies.
    fn refresh_registry_and_distrust(
        &self,
    ) -> Result<(Arc<Registry>, Arc<distrusted::DistrustLog>), Error> {
        let mut guard = self.lock_cache()?;
        let cache = &mut *guard;
        catch_up(
            &self.store,
            Arc::make_mut(&mut cache.registry),
            &mut cache.next,
        )?;
        Arc::make_mut(&mut cache.distrust).catch_up(&self.store)?;
        Ok((Arc::clone(&cache.registry), Arc::clone(&cache.distrust)))
    }
}

/// The settings of an initialised store, as its settings table holds them (unchecked against
/// the genesis record: [`Memory::open`] checks them, an audit reports a difference).
pub(crate) fn stored_settings(store: &dyn StoreRead) -> Result<Settings, Error> {
    let get = |k: &str| -> Result<String, Error> {
        store.setting(k)?.ok_or_else(|| {
            Error::Store(format!(
                "the store is not initialised (setting `{k}` missing): run `memlineage init`"
            ))
        })
    };
    Ok(Settings {
        origin: get("origin")?,
        tau: get("tau")?
            .parse::<Weight>()
            .map_err(|e| Error::Integrity(format!("setting tau: {e}")))?,
        fallback: get("fallback")?
            .parse::<Fallback>()
            .map_err(|e| Error::Integrity(format!("setting fallback: {e}")))?,
    })
}

/// The store's label rule as signed into the genesis record (index 0): the genesis body's τ
/// and fallback are the store's settings (`docs/formats.md`, "Store settings"), so the unsigned
/// settings table can be checked against the log.
pub(crate) fn genesis_rule(reader: &dyn StoreRead) -> Result<LabelRule, Error> {
    let stored = reader.entry_by_index(0)?.ok_or_else(|| {
        Error::Store("the log has no genesis record: run `memlineage init`".into())
    })?;
    let entry = SignedEntry::from_leaf(&stored.leaf)?;
    let body = entry.body();
    if body.kind != memlineage_core::entry::EntryKind::Registry {
        return Err(Error::Integrity(format!(
            "the entry at index 0 is a {} record, not the genesis registry record",
            body.kind
        )));
    }
    Ok(LabelRule::new(body.tau, body.fallback))
}

/// Replays registry records with index ≥ `next` into `registry`, advancing `next`.
fn catch_up(reader: &dyn StoreRead, registry: &mut Registry, next: &mut u64) -> Result<(), Error> {
    for rec in reader.registry_records(*next)? {
        let index = rec.index;
        let entry = SignedEntry::from_leaf(&rec.leaf)?;
        if entry.body().kind != memlineage_core::entry::EntryKind::Registry {
            return Err(Error::Integrity(format!(
                "the entry at index {index} is indexed as a registry record but its signed kind is {} (run `memlineage verify`)",
                entry.body().kind
            )));
        }
        if memlineage_core::Hash256::of(&rec.content) != entry.body().content_hash {
            return Err(Error::Integrity(format!(
                "registry record at index {index} does not match its signed content hash"
            )));
        }
        let change = RegistryChange::from_content(&rec.content)?;
        verify_registry_signature(registry, index, &entry, &change)?;
        registry.apply(index, &entry, &change)?;
        *next = index + 1;
    }
    Ok(())
}

/// A registry record's signature: genesis is checked against the key it registers, later
/// records against the operator's key at that index.
fn verify_registry_signature(
    registry: &Registry,
    index: u64,
    entry: &SignedEntry,
    change: &RegistryChange,
) -> Result<(), Error> {
    match (registry.operator(), change) {
        (None, RegistryChange::Add { key, .. }) => entry.verify_signature(key)?,
        _ => {
            let body = entry.body();
            let (_, key) = registry.signer_at(&body.writer, &body.key_id, index)?;
            entry.verify_signature(key)?;
        }
    }
    Ok(())
}
