//! The [`Memory`] handle: the one object an agent holds, and the only way into a store.
//! `Send + Sync`, no global state.
//!
//! One concrete type whatever the backend: the handle holds a `Box<dyn Backend>` chosen at run
//! time ([`Memory::open_at`] with a [`StoreLocation`]), so the command line, the Python
//! bindings and the HTTP service hold the same type (`docs/architecture.md`, "One handle").

mod anchor;
mod attribute;
mod audit;
mod carrier_cache;
mod control;
mod distrusted;
mod effective;
mod full_text_indexer;
mod gate;
mod gate_epochs;
mod label_cache;
mod lexical;
mod lineage;
mod migrate;
mod parent_labels;
mod prefix;
pub(crate) mod read;
mod reader;
mod registry;
mod relabel;
mod retrieve;
mod rollback;
mod searchable;
mod semantic;
mod signature_helper;
mod signed_writes;
mod signing;
mod signing_key;
pub(crate) mod stage;
pub(crate) mod value_index;
mod vector_indexer;
mod verified_cache;
mod verified_note;
mod wal_checkpointer;
mod witnessing;
mod write;

pub use crate::search::stored::{RejectedEmbedding, VectorIndexStatus};
pub use audit::{AuditProblem, AuditReport};
pub use full_text_indexer::FullTextIndexer;
pub use gate::{GateOutcome, GateRecord, GateRequest, MAX_ANCESTRY, UnrecordedGate};
pub use gate_epochs::GateTicket;
pub use lineage::Direction;
pub use migrate::{COPY_CHUNK, CopyReport};
pub use prefix::IdPrefix;
pub use read::{EntryView, Hash256Hex, InclusionProof};
pub use reader::WITNESSED_SEARCH;
pub use retrieve::{Dropped, Retrieval};
pub use rollback::{AtRisk, RollbackWindow};
pub use signed_writes::SignedWrites;
pub use stage::Effect;
pub use vector_indexer::{VectorIndexer, Wake};
pub use wal_checkpointer::WalCheckpointer;
pub use witnessing::{VerifierKeyRecord, WitnessAnswer, WitnessRound};
pub use write::{RELABEL_ATTEMPTS, WriteRequest, Written};

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, InputError, IntegrityCheck, StoreState};
use crate::keyring::Keyring;
use crate::store::{Backend, BackendRead, OpenMode, StoreLocation};
use memlineage_core::PrincipalName;
use memlineage_core::label::{Fallback, TrustClass, Weight};
use memlineage_core::principal::Registry;
use memlineage_core::records::RegistryChange;
use memlineage_core::rule::LabelRule;
use registry::RegistryCache;

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

/// Anything the handle can hold as its backend: a backend value, or one already boxed (what
/// [`StoreLocation::open`] returns).
pub trait IntoBackend {
    /// The boxed backend.
    fn into_backend(self) -> Box<dyn Backend>;
}

impl<B: Backend + 'static> IntoBackend for B {
    fn into_backend(self) -> Box<dyn Backend> {
        Box::new(self)
    }
}

impl IntoBackend for Box<dyn Backend> {
    fn into_backend(self) -> Box<dyn Backend> {
        self
    }
}

/// Signed, lineage-labelled agent memory over a storage backend.
pub struct Memory {
    backend: Box<dyn Backend>,
    keys: Keyring,
    /// The external signer of principals whose keys are not files (`signing_key.rs`).
    external: std::sync::RwLock<Option<std::sync::Arc<crate::signer::ExternalSigner>>>,
    settings: Settings,
    /// The registry and distrust replay, refreshed from the log (`registry.rs`).
    cache: RegistryCache,
    /// Signed labels of entries written or looked up as parents (`label_cache.rs`).
    labels: label_cache::LabelCache,
    /// The last checkpoint note whose signature verified (`verified_note.rs`).
    verified_note: verified_note::VerifiedNote,
    /// The helper thread that verifies retrievals' signatures beside them
    /// (`signature_helper.rs`).
    signatures: signature_helper::SignatureHelper,
    /// The checks of retrieval whose passing answers this handle remembers
    /// (`verified_cache.rs`).
    verified: verified_cache::VerifiedCache,
    /// The gate's earliest carriers and taint paths, kept until a record that can change them
    /// lands (`carrier_cache.rs`).
    carriers: carrier_cache::CarrierCache,
    /// The gate's latest look at the log, shared by the decisions of a burst of requests
    /// (`gate_epochs.rs`).
    gate_epochs: gate_epochs::SharedEpochs,
    /// The embedding model and vector index of semantic retrieval, when a model is attached
    /// (`semantic.rs`).
    semantic: Option<semantic::Semantic>,
    /// The handle's own lexical index, when it keeps one (`lexical.rs`).
    lexical: Option<lexical::Lexical>,
    clock: Box<dyn Clock>,
    /// What a reader requires of the store's history (`reader.rs`), when set.
    reader: Option<reader::Reader>,
    /// This handle's process-unique number: [`SignedWrites`] it made skip, at the append,
    /// the checks their signing did (`signed_writes.rs`).
    handle: u64,
}

impl Memory {
    /// Initialises an empty store: writes the genesis record, in which `operator` (a trusted
    /// principal) registers itself with `operator_key`, and the settings, in one transaction.
    pub fn init(
        backend: impl IntoBackend,
        settings: Settings,
        operator: &PrincipalName,
        operator_key: ed25519_dalek::SigningKey,
    ) -> Result<Memory, Error> {
        let backend = backend.into_backend();
        if backend.size()? != 0 || backend.setting("origin")?.is_some() {
            return Err(StoreState::AlreadyInitialised.into());
        }
        memlineage_core::checkpoint::Checkpoint::new(&settings.origin, 0, Default::default())
            .validate()
            .map_err(|e| InputError::Origin(e.to_string()))?;
        let rows = vec![
            ("origin".to_string(), settings.origin.clone()),
            ("tau".to_string(), settings.tau.to_string()),
            (
                "fallback".to_string(),
                settings.fallback.as_str().to_string(),
            ),
            ("operator".to_string(), operator.to_string()),
            // Every append indexes its entries' values from the start (issue 19).
            (
                value_index::VALUE_INDEX_SETTING.to_string(),
                value_index::VALUE_INDEX_VERSION.to_string(),
            ),
        ];
        let mem = Memory::from_parts(backend, settings);
        mem.keys.insert(operator, operator_key.clone());
        mem.registry_change(
            operator,
            RegistryChange::Add {
                name: operator.to_string(),
                class: TrustClass::Trusted,
                key: operator_key.verifying_key(),
            },
            rows,
        )?;
        Ok(mem)
    }

    /// Makes a new store at `location` (which must not hold one) and initialises it
    /// ([`Memory::init`]).
    pub fn init_at(
        location: &StoreLocation,
        settings: Settings,
        operator: &PrincipalName,
        operator_key: ed25519_dalek::SigningKey,
    ) -> Result<Memory, Error> {
        Memory::init(
            location.open(OpenMode::Create)?,
            settings,
            operator,
            operator_key,
        )
    }

    /// Opens an initialised store: checks its settings against the genesis record and replays
    /// the registry.
    pub fn open(backend: impl IntoBackend) -> Result<Memory, Error> {
        let backend = backend.into_backend();
        let settings = stored_settings(&*backend)?;
        let (tau, fallback) = (settings.tau, settings.fallback);
        let signed = genesis_rule(&*backend)?;
        if signed != LabelRule::new(tau, fallback) {
            return Err(Error::integrity(
                IntegrityCheck::Settings,
                format!(
                    "the settings table says τ {tau}, fallback {fallback}, but the genesis record signs τ {}, fallback {}: the settings were edited behind the program's back (run `memlineage verify`)",
                    signed.tau, signed.fallback
                ),
            ));
        }
        let mem = Memory::from_parts(backend, settings);
        mem.refresh_registry()?;
        // A store made before the value index existed gets it now (issue 19).
        mem.fill_value_index()?;
        Ok(mem)
    }

    /// Opens the store at `location` ([`Memory::open`]); the location must hold one.
    pub fn open_at(location: &StoreLocation) -> Result<Memory, Error> {
        Memory::open(location.open(OpenMode::Existing)?)
    }

    /// Opens an initialised store for an audit: reads the settings but, unlike
    /// [`Memory::open`], does not replay the principal registry first. A store whose registry
    /// records were edited behind the program's back can then still be audited:
    /// [`Memory::verify`] replays and checks the registry itself and reports what is wrong
    /// instead of failing to open.
    pub fn open_for_audit(backend: impl IntoBackend) -> Result<Memory, Error> {
        let backend = backend.into_backend();
        let settings = stored_settings(&*backend)?;
        Ok(Memory::from_parts(backend, settings))
    }

    /// [`Memory::open_for_audit`] of the store at `location`.
    pub fn open_for_audit_at(location: &StoreLocation) -> Result<Memory, Error> {
        Memory::open_for_audit(location.open(OpenMode::Existing)?)
    }

    fn from_parts(backend: Box<dyn Backend>, settings: Settings) -> Memory {
        Memory {
            backend,
            keys: Keyring::new(),
            external: std::sync::RwLock::new(None),
            settings,
            cache: RegistryCache::default(),
            labels: label_cache::LabelCache::default(),
            verified_note: verified_note::VerifiedNote::default(),
            signatures: signature_helper::SignatureHelper::default(),
            verified: verified_cache::VerifiedCache::default(),
            carriers: carrier_cache::CarrierCache::with_capacity(verified_cache::DEFAULT_CAPACITY),
            gate_epochs: gate_epochs::SharedEpochs::default(),
            semantic: None,
            lexical: None,
            clock: Box::new(SystemClock),
            reader: None,
            handle: signed_writes::next_handle(),
        }
    }

    /// Replaces the clock (the evaluation uses a deterministic one).
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Memory {
        self.clock = Box::new(clock);
        self
    }

    /// Sets how many verified answers of each kind (signatures, inclusions, signed labels)
    /// this handle remembers across retrievals and gate calls (`verified_cache.rs`), and how
    /// many earliest carriers and taint paths the gate remembers until a registry, distrust or
    /// tombstone record lands (`carrier_cache.rs`); 0 remembers nothing, so that every
    /// retrieval verifies everything from the store and every gate decision looks everything
    /// up. The default keeps 32,768 of each.
    pub fn with_verified_cache(mut self, capacity: usize) -> Memory {
        self.verified = verified_cache::VerifiedCache::with_capacity(capacity);
        self.carriers = carrier_cache::CarrierCache::with_capacity(capacity);
        self
    }

    /// Forgets every verified answer this handle remembers (the next retrieval verifies its
    /// entries' signatures, inclusions and parents' labels from the store again, and the next
    /// gate decision looks up its earliest carriers and taint paths again).
    pub fn forget_verified(&self) {
        self.verified.clear();
        self.carriers.clear();
        self.backend.forget_cached();
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

    /// The backend's name (`sqlite`, `memory`, `postgres`).
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Where the store is, for messages (no secrets).
    pub fn location(&self) -> String {
        self.backend.location()
    }

    /// Write transactions the backend has committed through this handle, when it counts them
    /// (each one sync on a durable backend; a batch is one: group commit).
    pub fn commits(&self) -> Option<u64> {
        self.backend.commits()
    }

    /// Leaves the store's write-ahead-log checkpoints to [`Memory::checkpoint_wal`], run by the
    /// owner on a thread of its own ([`WalCheckpointer`]), so that no commit waits for one;
    /// returns whether the store has such a log (the SQLite file store). Commits still
    /// checkpoint if nobody does for a long while (`docs/store.md`, "Checkpoints").
    pub fn defer_wal_checkpoints(&self) -> Result<bool, Error> {
        self.backend.defer_wal_checkpoints()
    }

    /// Keeps a filter of the logged ids in memory from now on, so that each append proves its
    /// new ids absent without reading the store's id index (`docs/store.md`, "Id index"): for
    /// a long-lived writer (the service calls it before it listens), at about 6 to 12 bytes per
    /// logged entry. Returns what the filter holds; `None` when the store keeps none (not a
    /// SQLite file or memory store opened for writing).
    pub fn keep_logged_ids(&self) -> Result<Option<crate::store::LoggedIdsSummary>, Error> {
        self.backend.keep_logged_ids()
    }

    /// Copies the committed pages of the store's write-ahead log that no reader still needs
    /// into the database file, without blocking writers or readers; `None` when the store has
    /// no such log.
    pub fn checkpoint_wal(&self) -> Result<Option<crate::store::WalCheckpoint>, Error> {
        self.backend.checkpoint_wal()
    }

    /// Leaves the full-text indexing of new entries to [`Memory::index_full_text`], run by the
    /// owner on a thread of its own ([`FullTextIndexer`]), so that no commit indexes text;
    /// returns whether the store defers (the SQLite store; the others index in the append).
    /// Until indexed an entry's text is pending: a search by a handle without its own lexical
    /// index first indexes what is pending, so it still finds every entry committed before it
    /// began (`docs/store.md`, "Full-text index").
    pub fn defer_full_text(&self) -> Result<bool, Error> {
        self.backend.defer_full_text()
    }

    /// Indexes up to `max` entries whose full text is pending, oldest first, in one write
    /// transaction, and says how many are left ([`Memory::defer_full_text`]).
    pub fn index_full_text(&self, max: usize) -> Result<crate::store::FullTextProgress, Error> {
        self.backend.index_full_text(max)
    }

    /// Indexes every entry whose full text is pending, 512 entries per transaction
    /// (`full_text_indexer::CHUNK`), so that other writers' commits interleave with a long
    /// backlog's.
    pub fn catch_up_full_text(&self) -> Result<(), Error> {
        loop {
            let step = self.backend.index_full_text(full_text_indexer::CHUNK)?;
            if step.pending == 0 || step.indexed == 0 {
                return Ok(());
            }
        }
    }

    /// The registry as of now (refreshed from the store).
    pub fn registry(&self) -> Result<Registry, Error> {
        Ok(Registry::clone(&*self.refresh_registry()?))
    }

    /// The backend, for reads outside a snapshot.
    pub(crate) fn reads(&self) -> &dyn BackendRead {
        &*self.backend
    }

    /// The backend (the unchecked-access feature).
    #[cfg(feature = "unchecked-store-access")]
    pub(crate) fn backend_ref(&self) -> &dyn Backend {
        &*self.backend
    }
}

/// The settings of an initialised store, as its settings table holds them (unchecked against
/// the genesis record: [`Memory::open`] checks them, an audit reports a difference).
pub(crate) fn stored_settings(store: &dyn BackendRead) -> Result<Settings, Error> {
    let get = |k: &str| -> Result<String, Error> {
        store.setting(k)?.ok_or_else(|| {
            StoreState::NotInitialised {
                missing: k.to_string(),
            }
            .into()
        })
    };
    let bad = |k: &str, e: String| {
        Error::integrity(IntegrityCheck::Settings, format!("setting {k}: {e}"))
    };
    Ok(Settings {
        origin: get("origin")?,
        tau: get("tau")?
            .parse::<Weight>()
            .map_err(|e| bad("tau", e.to_string()))?,
        fallback: get("fallback")?
            .parse::<Fallback>()
            .map_err(|e| bad("fallback", e.to_string()))?,
    })
}

/// The store's label rule as signed into the genesis record (index 0): the genesis body's τ
/// and fallback are the store's settings (`docs/formats.md`, "Store settings"), so the unsigned
/// settings table can be checked against the log.
pub(crate) fn genesis_rule(reader: &dyn BackendRead) -> Result<LabelRule, Error> {
    let stored = reader.entry_by_index(0)?.ok_or_else(|| {
        Error::integrity(
            IntegrityCheck::Genesis,
            "the log has no genesis record: run `memlineage init`",
        )
    })?;
    let entry = read::decode_stored(&stored)?;
    let body = entry.body();
    if body.kind != memlineage_core::entry::EntryKind::Registry {
        return Err(Error::integrity(
            IntegrityCheck::Genesis,
            format!(
                "the entry at index 0 is a {} record, not the genesis registry record",
                body.kind
            ),
        ));
    }
    Ok(LabelRule::new(body.tau, body.fallback))
}
