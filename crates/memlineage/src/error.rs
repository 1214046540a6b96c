//! The error type of the memory handle and its backends, and its stable classification.
//!
//! One `#[non_exhaustive]` [`Error`] with typed sub-errors (in the manner of rustls): what a
//! caller acts on is a variant or a field, never a substring of a message. The messages stay
//! written for people (what is wrong, and what to do). Every error also has an
//! [`ErrorKind`] ([`Error::kind`]), a small stable classification that the other layers map
//! from — the command line to its exit codes, the Python package to its exception classes, the
//! HTTP service to its status codes — so a new variant never needs a change there:
//!
//! | [`ErrorKind`] | meaning | Python | HTTP | CLI exit |
//! |---|---|---|---|---|
//! | `InvalidInput` | the request is malformed or names something impossible; fix the request | `InputError` | 400 / 422 | 2 (usage) or 1 |
//! | `NotFound` | no such entry, id prefix, principal, or store | `NotFoundError` | 404 | 1 |
//! | `Refused` | policy, registry or key refusal: not registered, revoked, key not current, no key loaded, only trusted principals may … | `RefusedError` | 403 | 1 |
//! | `Integrity` | the stored data is inconsistent (tampering or corruption); run `verify` | `IntegrityError` | 500 | 1 |
//! | `Conflict` | concurrent change: a label went stale while writing, the store is already initialised | `ConflictError` | 409 | 1 |
//! | `Storage` | the backend failed or holds a format this build cannot read | `StorageError` | 500 | 1 |
//! | `Io` | reading or writing a file failed | `StorageError` | 500 | 1 |
//! | `Unavailable` | the backend cannot be reached or was not built in; retry later or rebuild | `UnavailableError` | 503 | 1 |
//! | `Internal` | a bug: a worker thread panicked, a lock was poisoned | `MemLineageError` | 500 | 1 |
//!
//! The table is `docs/errors.md`; [`ErrorKind::as_str`] gives each kind a stable name.

use memlineage_core::entry::EntryKind;
use memlineage_core::label::TrustLabel;
use memlineage_core::monitor::Finding;
use memlineage_core::{EntryId, Hash256, PrincipalName};
use std::fmt;

/// Any error from the memory handle and its backends.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A core error (encoding, keys, registry) from data the caller passed in.
    #[error(transparent)]
    Core(#[from] memlineage_core::Error),
    /// An entry the caller built does not encode, or a signature does not verify.
    #[error(transparent)]
    Entry(#[from] memlineage_core::entry::EntryError),
    /// The registry refused a signer or a change.
    #[error(transparent)]
    Registry(#[from] memlineage_core::principal::RegistryError),
    /// A Merkle proof could not be planned (a size or index out of range).
    #[error(transparent)]
    Merkle(#[from] memlineage_core::merkle::MerkleError),
    /// A checkpoint could not be built or signed.
    #[error(transparent)]
    Checkpoint(#[from] memlineage_core::checkpoint::CheckpointError),
    /// The gate could not judge a tool call (a malformed call, citation or parameter value):
    /// the call must not be dispatched.
    #[error("gate: {0}")]
    Gate(#[from] memlineage_core::gate::GateError),
    /// A request the caller can fix.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The handle refused a write: registry, key or policy.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The stored data is inconsistent (tampering or corruption).
    #[error(transparent)]
    Integrity(#[from] IntegrityError),
    /// No entry with this id.
    #[error("no entry with id {0}")]
    NotFound(EntryId),
    /// A parent named in a write is not in the log.
    #[error("parent {0} is not in the log (parents must be written before their children)")]
    UnknownParent(EntryId),
    /// An id prefix names no entry, or more than one.
    #[error(transparent)]
    IdPrefix(#[from] IdPrefixError),
    /// The store is missing, not initialised, already initialised, or of another version.
    #[error(transparent)]
    State(#[from] StoreState),
    /// An entry's label, computed before its transaction, is lower than its parents' effective
    /// labels (or its writer's distrust) imply as of the transaction: a distrust record was
    /// committed in between. The write path re-labels and retries; this reaches the caller
    /// only when the labels kept changing.
    #[error(
        "the label of entry {id} rose from {signed} to {required} while it was being written (a distrust record was committed meanwhile, or the batch distrusts its own parents or writer); nothing was written: write it again"
    )]
    StaleLabel {
        /// The entry as drafted.
        id: EntryId,
        /// The label it was signed with.
        signed: TrustLabel,
        /// The label the transaction requires.
        required: TrustLabel,
    },
    /// The store's history contradicts what a reader trusts (a rollback or a fork): nothing
    /// is read from it.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// A state directory of a witness, client or monitor cannot be used.
    #[error(transparent)]
    StateDir(#[from] StateDirError),
    /// An external signer failed, timed out or answered a bad signature: nothing was written.
    #[error(transparent)]
    Signer(#[from] crate::signer::SignerFailure),
    /// No secret key is loaded for this principal.
    #[error(
        "no secret key for principal `{0}` (keys live in the store's key directory; is this the right store?)"
    )]
    NoKey(PrincipalName),
    /// The storage backend failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Something this build or this machine cannot provide: a backend that was not compiled in.
    #[error("{0}")]
    Unavailable(String),
    /// A bug: a worker thread panicked, a lock was poisoned, a result went missing.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The stable classification of an [`Error`] that other layers map from (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request is malformed or names something impossible.
    InvalidInput,
    /// No such entry, id prefix, principal or store.
    NotFound,
    /// A policy, registry or key refusal.
    Refused,
    /// The stored data is inconsistent.
    Integrity,
    /// A concurrent change got in the way.
    Conflict,
    /// The backend failed.
    Storage,
    /// A file could not be read or written.
    Io,
    /// The backend cannot be reached, or was not built in.
    Unavailable,
    /// A bug.
    Internal,
}

impl ErrorKind {
    /// Every kind, in the order of the table in the module docs.
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::InvalidInput,
        ErrorKind::NotFound,
        ErrorKind::Refused,
        ErrorKind::Integrity,
        ErrorKind::Conflict,
        ErrorKind::Storage,
        ErrorKind::Io,
        ErrorKind::Unavailable,
        ErrorKind::Internal,
    ];

    /// The stable snake_case name (`invalid_input`, `not_found`, …), for wire formats.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Refused => "refused",
            ErrorKind::Integrity => "integrity",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Storage => "storage",
            ErrorKind::Io => "io",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// The stable classification of this error.
    pub fn kind(&self) -> ErrorKind {
        use memlineage_core::entry::EntryError;
        match self {
            Error::Core(e) => match e {
                memlineage_core::Error::Registry(_) => ErrorKind::Refused,
                memlineage_core::Error::Entry(EntryError::Signature { .. }) => ErrorKind::Refused,
                _ => ErrorKind::InvalidInput,
            },
            Error::Entry(EntryError::Signature { .. }) => ErrorKind::Refused,
            Error::Entry(_) => ErrorKind::InvalidInput,
            Error::Registry(_) | Error::Refused(_) | Error::NoKey(_) => ErrorKind::Refused,
            Error::Merkle(_)
            | Error::Checkpoint(_)
            | Error::Gate(_)
            | Error::Input(_)
            | Error::UnknownParent(_) => ErrorKind::InvalidInput,
            Error::Integrity(_) => ErrorKind::Integrity,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::IdPrefix(IdPrefixError::NoMatch { .. }) => ErrorKind::NotFound,
            Error::IdPrefix(_) => ErrorKind::InvalidInput,
            Error::State(s) => s.kind(),
            Error::History(h) => h.kind(),
            Error::StateDir(d) => d.kind(),
            Error::StaleLabel { .. } => ErrorKind::Conflict,
            Error::Storage(s) if s.retryable => ErrorKind::Unavailable,
            Error::Storage(_) => ErrorKind::Storage,
            Error::Io { .. } => ErrorKind::Io,
            Error::Unavailable(_) => ErrorKind::Unavailable,
            Error::Signer(f) if f.is_transient() => ErrorKind::Unavailable,
            Error::Signer(_) => ErrorKind::Refused,
            Error::Internal(_) => ErrorKind::Internal,
        }
    }

    /// An integrity error of `check`, described by `detail`.
    pub fn integrity(check: IntegrityCheck, detail: impl Into<String>) -> Error {
        Error::Integrity(IntegrityError::new(check, detail))
    }

    /// An internal error (a bug), described by `detail`.
    pub(crate) fn internal(detail: impl Into<String>) -> Error {
        Error::Internal(detail.into())
    }
}

impl From<memlineage_core::canonical::CanonicalError> for Error {
    fn from(e: memlineage_core::canonical::CanonicalError) -> Self {
        Error::Core(e.into())
    }
}

impl From<memlineage_core::keys::KeyError> for Error {
    fn from(e: memlineage_core::keys::KeyError) -> Self {
        Error::Core(e.into())
    }
}

/// A request the caller can fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// A content entry with no bytes.
    #[error("the content is empty: an entry must hold at least one byte (nothing was written)")]
    EmptyContent,
    /// The checkpoint origin line is not valid (C2SP tlog-checkpoint).
    #[error("origin: {0}")]
    Origin(String),
    /// A consistency proof to a size beyond the log.
    #[error("tree size {asked} is larger than the log ({size} entries)")]
    TreeSize {
        /// The size asked for.
        asked: u64,
        /// The log's size.
        size: u64,
    },
    /// A distrust record names a principal the registry does not know.
    #[error("no principal named `{0}`")]
    UnknownPrincipal(String),
    /// The attributor failed, or answered with the wrong number of weights.
    #[error("attribution `{name}` {problem}")]
    Attribution {
        /// The algorithm's name.
        name: String,
        /// What went wrong, as a predicate (`failed: …`, `returned 2 weights for 3 parents`).
        problem: String,
    },
    /// A key file that does not hold a key.
    #[error("{path}: {problem}")]
    KeyFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A certificate file (PEM) that holds no usable certificate.
    #[error("certificate file {path}: {problem}")]
    CertificateFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A number outside what the store can hold (a leaf index beyond 2^63).
    #[error("{0} is out of range")]
    OutOfRange(u64),
    /// An entry has more ancestors to read than one retrieval reads to recompute its effective
    /// label.
    #[error(
        "more than {0} ancestors to read to recompute its effective label from the distrust records; run `memlineage verify` to audit the effective labels"
    )]
    TooManyAncestors(usize),
    /// Witness cosignature lines that add no valid cosignature to any recent stored
    /// checkpoint (`memlineage checkpoint --attach`).
    #[error("{0}")]
    Cosignatures(String),
    /// A store location that does not parse.
    #[error("invalid store location `{input}`: {problem}")]
    Location {
        /// The input (truncated).
        input: String,
        /// What is wrong.
        problem: String,
    },
}

/// Why the handle refused a write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The writer is not in the registry.
    #[error("principal `{name}` is not registered (add it with `memlineage principal add`)")]
    NotRegistered {
        /// The principal.
        name: String,
    },
    /// The writer was revoked.
    #[error("refused: principal `{name}` was revoked at log index {at}{}; entries it signs are no longer accepted", reason_suffix(.reason))]
    Revoked {
        /// The principal.
        name: String,
        /// The log index of the revocation.
        at: u64,
        /// The recorded reason, when one was given.
        reason: Option<String>,
    },
    /// The key loaded for the writer is not its current registered key (it was rotated).
    #[error(
        "the loaded key of `{name}` is not its current registered key (it was rotated; the current key id is {})",
        current.map_or_else(|| "none".to_string(), |k| k.to_hex())
    )]
    KeyNotCurrent {
        /// The principal.
        name: String,
        /// The id of its current key, if it has one.
        current: Option<Hash256>,
    },
    /// A control record by an untrusted principal.
    #[error("only trusted principals may write {kind} records")]
    NotTrusted {
        /// The record kind.
        kind: EntryKind,
    },
    /// A per-entry label rule laxer than the store's.
    #[error(
        "refused: the entry's {laxer}; a per-entry override may only be stricter (τ at most the store's, and strict when the store is strict), so that no writer can choose a lower label"
    )]
    LaxerRule {
        /// Which part is laxer (`τ 0.6 is higher than the store's 0.5`).
        laxer: String,
    },
    /// A tombstone naming a control record.
    #[error("control records (registry, tombstone, distrust, gate decision) cannot be forgotten")]
    ControlNotForgettable,
    /// A record whose content does not match its signed content hash.
    #[error("content does not match its hash")]
    ContentMismatch,
}

fn reason_suffix(reason: &Option<String>) -> String {
    match reason.as_deref() {
        Some(r) if !r.is_empty() => format!(" (reason: {r})"),
        _ => String::new(),
    }
}

/// Which integrity check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IntegrityCheck {
    /// A stored leaf does not decode strictly.
    LeafDecode,
    /// A stored leaf's body does not hash to the id it is indexed under.
    EntryId,
    /// Stored content does not match its signed hash (or is missing).
    Content,
    /// A Merkle node is missing, malformed, or does not match.
    MerkleNode,
    /// The signed checkpoint does not match the log, or is not signed by the operator.
    Checkpoint,
    /// The settings table disagrees with the genesis record.
    Settings,
    /// The genesis record is missing or is not a registry record.
    Genesis,
    /// A control record (registry, tombstone, distrust) is malformed, mis-indexed or missing.
    ControlRecord,
    /// A stored value (index, weight, label, hash) is out of range or malformed.
    StoredValue,
    /// An entry's lineage is broken: a parent missing or not earlier in the log.
    Lineage,
    /// An entry failed verification where it had to pass (a parent to attribute, a context
    /// entry for the gate).
    Verification,
    /// The value index (issue 19) lacks a key a stored content carries, or has not been
    /// filled for the whole log.
    ValueIndex,
}

impl IntegrityCheck {
    /// A short name of the check (`leaf_decode`, `merkle_node`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            IntegrityCheck::LeafDecode => "leaf_decode",
            IntegrityCheck::EntryId => "entry_id",
            IntegrityCheck::Content => "content",
            IntegrityCheck::MerkleNode => "merkle_node",
            IntegrityCheck::Checkpoint => "checkpoint",
            IntegrityCheck::Settings => "settings",
            IntegrityCheck::Genesis => "genesis",
            IntegrityCheck::ControlRecord => "control_record",
            IntegrityCheck::StoredValue => "stored_value",
            IntegrityCheck::Lineage => "lineage",
            IntegrityCheck::Verification => "verification",
            IntegrityCheck::ValueIndex => "value_index",
        }
    }
}

impl fmt::Display for IntegrityCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The stored data is inconsistent: which check failed, on which entry, and the details.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("store integrity: {detail}")]
pub struct IntegrityError {
    /// The check that failed.
    pub check: IntegrityCheck,
    /// The leaf index of the entry concerned, when there is one.
    pub index: Option<u64>,
    /// The id of the entry concerned, when known.
    pub id: Option<EntryId>,
    /// What is wrong, in words.
    pub detail: String,
}

impl IntegrityError {
    /// A failed `check`, described by `detail`.
    pub fn new(check: IntegrityCheck, detail: impl Into<String>) -> IntegrityError {
        IntegrityError {
            check,
            index: None,
            id: None,
            detail: detail.into(),
        }
    }

    /// Names the entry's leaf index.
    pub fn at(mut self, index: u64) -> IntegrityError {
        self.index = Some(index);
        self
    }

    /// Names the entry's id.
    pub fn entry(mut self, id: EntryId) -> IntegrityError {
        self.id = Some(id);
        self
    }
}

/// An id prefix that names no entry, or several.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdPrefixError {
    /// Not 1 to 64 hexadecimal characters.
    #[error(
        "`{0}` is not an entry id: expected 64 hexadecimal characters, or a unique prefix of at least 8"
    )]
    Malformed(String),
    /// No entry id starts with it.
    #[error("no entry id starts with `{prefix}` (see `memlineage log`)")]
    NoMatch {
        /// The prefix.
        prefix: String,
    },
    /// At least two entry ids start with it.
    #[error(
        "the id prefix `{prefix}` is ambiguous (it matches {} and {}, at least): give more characters",
        first.short(),
        second.short()
    )]
    Ambiguous {
        /// The prefix.
        prefix: String,
        /// The first two matches, in id order.
        first: EntryId,
        /// The second match.
        second: EntryId,
    },
}

/// The store is not in the state an operation needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreState {
    /// Nothing is stored at the location.
    #[error(
        "no store at {location}: run `memlineage init` first, or point --store or MEMLINEAGE_STORE at an existing store"
    )]
    Missing {
        /// The location, as given.
        location: String,
    },
    /// A store exists at a location `init` was asked to create.
    #[error("a store already exists at {location} (refusing to re-initialise it)")]
    Exists {
        /// The location.
        location: String,
    },
    /// The store holds no settings: it was never initialised.
    #[error("the store is not initialised (setting `{missing}` missing): run `memlineage init`")]
    NotInitialised {
        /// The first missing setting.
        missing: String,
    },
    /// `init` on a store that already holds a log.
    #[error("the store is already initialised (refusing to overwrite it)")]
    AlreadyInitialised,
    /// A write through a backend opened read-only ([`OpenMode::ReadOnly`](crate::OpenMode)).
    #[error("the store at {location} was opened read-only: nothing can be written through it")]
    ReadOnly {
        /// The location.
        location: String,
    },
    /// The store was made by another version of this library.
    #[error(
        "store schema version {found} is not supported by this build (it reads version {supported})"
    )]
    UnsupportedSchema {
        /// The version found.
        found: u32,
        /// The version this build reads and writes.
        supported: u32,
    },
}

impl StoreState {
    fn kind(&self) -> ErrorKind {
        match self {
            StoreState::Missing { .. } | StoreState::NotInitialised { .. } => ErrorKind::NotFound,
            StoreState::Exists { .. } | StoreState::AlreadyInitialised => ErrorKind::Conflict,
            StoreState::UnsupportedSchema { .. } => ErrorKind::Storage,
            StoreState::ReadOnly { .. } => ErrorKind::Refused,
        }
    }
}

/// The store's history contradicts what a reader trusts (issue 12,
/// `docs/merkle-and-checkpoints.md`, "Client-held checkpoints"): the store rolled back or
/// forked from a checkpoint the reader holds, or the checkpoint it was given does not belong
/// to this log. Nothing is read from such a store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HistoryError {
    /// The store holds fewer entries than the held checkpoint covers: entries were removed
    /// (an older copy of the store was put back).
    Rollback {
        /// The size of the held checkpoint.
        held_size: u64,
        /// Its root.
        held_root: Hash256,
        /// The size the store shows.
        seen_size: u64,
        /// The root of the store's tree of that size.
        seen_root: Hash256,
    },
    /// The store's tree, or one of its signed checkpoints, is not consistent with the held
    /// checkpoint: two histories of one log.
    Fork {
        /// The size of the held checkpoint.
        held_size: u64,
        /// Its root.
        held_root: Hash256,
        /// The size of the store's tree or checkpoint that contradicts it.
        seen_size: u64,
        /// Its root.
        seen_root: Hash256,
        /// Why they cannot both be true.
        detail: String,
    },
    /// The trusted checkpoint is not signed by any key this store's operator has held.
    Unsigned {
        /// The size of the trusted checkpoint.
        held_size: u64,
        /// Its root.
        held_root: Hash256,
        /// Why its signature does not open.
        detail: String,
    },
    /// A trusted checkpoint or verifier key names another log than the store's.
    OtherLog {
        /// What names it (`trusted checkpoint`, `verifier key`).
        what: &'static str,
        /// The log it names.
        named: String,
        /// The store's origin.
        origin: String,
    },
}

impl HistoryError {
    fn kind(&self) -> ErrorKind {
        match self {
            HistoryError::Rollback { .. }
            | HistoryError::Fork { .. }
            | HistoryError::Unsigned { .. } => ErrorKind::Integrity,
            HistoryError::OtherLog { .. } => ErrorKind::InvalidInput,
        }
    }

    /// The same contradiction as a monitor reports it ([`Finding::Rollback`],
    /// [`Finding::Fork`], [`Finding::BadCheckpoint`]), to compare with a monitor's or a
    /// witness's view.
    pub fn finding(&self) -> Finding {
        match self.clone() {
            HistoryError::Rollback {
                held_size,
                held_root,
                seen_size,
                seen_root,
            } => Finding::Rollback {
                held_size,
                held_root,
                seen_size,
                seen_root,
            },
            HistoryError::Fork {
                held_size,
                held_root,
                seen_size,
                seen_root,
                detail,
            } => Finding::Fork {
                held_size,
                held_root,
                seen_size,
                seen_root,
                detail,
            },
            HistoryError::Unsigned {
                held_size, detail, ..
            } => Finding::BadCheckpoint {
                size: Some(held_size),
                reason: detail,
            },
            HistoryError::OtherLog { .. } => Finding::BadCheckpoint {
                size: None,
                reason: self.to_string(),
            },
        }
    }
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryError::Rollback { .. } | HistoryError::Fork { .. } => write!(
                f,
                "refusing the store: {} (the reader holds a checkpoint this store contradicts; compare with a witness or `memlineage monitor` before trusting it)",
                self.finding()
            ),
            HistoryError::Unsigned {
                held_size,
                held_root,
                detail,
            } => write!(
                f,
                "the trusted checkpoint (size {held_size}, root {held_root}) is not signed by any key this store's operator has held — the store is another log, or its registry was rewritten: {detail}"
            ),
            HistoryError::OtherLog {
                what,
                named,
                origin,
            } => write!(
                f,
                "the {what} is for the log `{named}`, but this store is `{origin}`"
            ),
        }
    }
}

impl std::error::Error for HistoryError {}

/// A state directory of a witness, a client or a monitor (`memlineage::transparency`) that
/// cannot be used as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateDirError {
    /// The directory holds no such state yet.
    #[error("no {what} in {dir} ({hint})")]
    Missing {
        /// What was looked for (`witness`).
        what: &'static str,
        /// The directory.
        dir: String,
        /// How to make one.
        hint: &'static str,
    },
    /// The directory already holds one.
    #[error("{dir} already holds a {what} (refusing to overwrite it)")]
    Exists {
        /// What it holds (`witness`).
        what: &'static str,
        /// The directory.
        dir: String,
    },
    /// A file of the directory does not parse, or names another log than its name says:
    /// corruption or tampering.
    #[error("{path}: {problem}")]
    Damaged {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// The directory was set up for something else than the caller asks (another key).
    #[error("{dir}: {problem}")]
    Mismatch {
        /// The directory.
        dir: String,
        /// What differs, and what to do.
        problem: String,
    },
}

impl StateDirError {
    fn kind(&self) -> ErrorKind {
        match self {
            StateDirError::Missing { .. } => ErrorKind::NotFound,
            StateDirError::Exists { .. } => ErrorKind::Conflict,
            StateDirError::Damaged { .. } => ErrorKind::Integrity,
            StateDirError::Mismatch { .. } => ErrorKind::InvalidInput,
        }
    }
}

/// The storage backend failed.
#[derive(Debug, thiserror::Error)]
#[error("store error: {message}")]
pub struct StorageError {
    /// The backend (`sqlite`, `memory`, `postgres`).
    pub backend: &'static str,
    /// What failed.
    pub message: String,
    /// True when the operation may succeed if retried later (a lock held too long, a server
    /// that cannot be reached): [`ErrorKind::Unavailable`] rather than [`ErrorKind::Storage`].
    pub retryable: bool,
    /// The driver's error.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl StorageError {
    /// A failure of `backend`, described by `message`.
    pub fn new(backend: &'static str, message: impl Into<String>) -> StorageError {
        StorageError {
            backend,
            message: message.into(),
            retryable: false,
            source: None,
        }
    }
}

/// Whether SQLite refused because another connection held the lock it needed: worth trying
/// again later.
#[cfg(feature = "sqlite")]
pub(crate) fn sqlite_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

#[cfg(feature = "sqlite")]
impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        let retryable = sqlite_busy(&e);
        Error::Storage(StorageError {
            backend: "sqlite",
            message: e.to_string(),
            retryable,
            source: Some(Box::new(e)),
        })
    }
}

/// A PostgreSQL error: retryable when the server could not be reached or the connection was
/// lost, when it is shutting down or starting, has no free connection, or aborted the
/// transaction for a serialization failure or a deadlock (SQLSTATE classes 08, 57P, 40001,
/// 40P01, 53300) — retrying later may succeed; not retryable for anything the statement itself
/// got wrong (a constraint, a type, a missing table).
#[cfg(feature = "postgres")]
impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Self {
        let code = e.code().map(|c| c.code().to_string());
        let retryable = match code.as_deref() {
            Some(c) => {
                c.starts_with("08")
                    || c.starts_with("57P")
                    || matches!(c, "40001" | "40P01" | "53300")
            }
            // No SQLSTATE: retryable when the connection failed or closed (an I/O error), not
            // for a value that did not convert or a malformed configuration.
            None => {
                e.is_closed()
                    || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>())
            }
        };
        let message = match e.as_db_error() {
            Some(db) => format!("{}: {}", db.code().code(), db.message()),
            None => e.to_string(),
        };
        Error::Storage(StorageError {
            backend: "postgres",
            message,
            retryable,
            source: Some(Box::new(e)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_stable_distinct_names() {
        let names: std::collections::HashSet<&str> =
            ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), ErrorKind::ALL.len());
        assert_eq!(ErrorKind::InvalidInput.to_string(), "invalid_input");
    }

    #[test]
    fn variants_map_to_their_kinds() {
        let id = EntryId(Hash256::of(b"x"));
        let name = PrincipalName::new("agent").unwrap();
        let cases: Vec<(Error, ErrorKind)> = vec![
            (InputError::EmptyContent.into(), ErrorKind::InvalidInput),
            (Error::UnknownParent(id), ErrorKind::InvalidInput),
            (Error::NotFound(id), ErrorKind::NotFound),
            (
                IdPrefixError::NoMatch {
                    prefix: "abcd".into(),
                }
                .into(),
                ErrorKind::NotFound,
            ),
            (
                IdPrefixError::Ambiguous {
                    prefix: "ab".into(),
                    first: id,
                    second: id,
                }
                .into(),
                ErrorKind::InvalidInput,
            ),
            (
                Refusal::NotRegistered { name: "x".into() }.into(),
                ErrorKind::Refused,
            ),
            (Error::NoKey(name), ErrorKind::Refused),
            (
                Error::integrity(IntegrityCheck::MerkleNode, "gone"),
                ErrorKind::Integrity,
            ),
            (
                Error::StaleLabel {
                    id,
                    signed: TrustLabel::Trusted,
                    required: TrustLabel::External,
                },
                ErrorKind::Conflict,
            ),
            (StoreState::AlreadyInitialised.into(), ErrorKind::Conflict),
            (
                StoreState::Missing {
                    location: "x".into(),
                }
                .into(),
                ErrorKind::NotFound,
            ),
            (
                StorageError::new("sqlite", "disk full").into(),
                ErrorKind::Storage,
            ),
            (Error::Unavailable("no".into()), ErrorKind::Unavailable),
            (
                StoreState::ReadOnly {
                    location: "sqlite:x".into(),
                }
                .into(),
                ErrorKind::Refused,
            ),
            (
                HistoryError::Rollback {
                    held_size: 2,
                    held_root: Hash256::default(),
                    seen_size: 1,
                    seen_root: Hash256::default(),
                }
                .into(),
                ErrorKind::Integrity,
            ),
            (
                HistoryError::OtherLog {
                    what: "trusted checkpoint",
                    named: "a".into(),
                    origin: "b".into(),
                }
                .into(),
                ErrorKind::InvalidInput,
            ),
            (
                StateDirError::Missing {
                    what: "witness",
                    dir: "w".into(),
                    hint: "h",
                }
                .into(),
                ErrorKind::NotFound,
            ),
            (
                StateDirError::Damaged {
                    path: "w/x".into(),
                    problem: "p".into(),
                }
                .into(),
                ErrorKind::Integrity,
            ),
            (
                Error::Io {
                    path: "x".into(),
                    source: std::io::Error::other("x"),
                },
                ErrorKind::Io,
            ),
        ];
        for (e, kind) in cases {
            assert_eq!(e.kind(), kind, "{e}");
        }
    }

    #[test]
    fn messages_stay_actionable() {
        let e = Error::from(
            IntegrityError::new(
                IntegrityCheck::MerkleNode,
                "node (level 1, index 2) is missing",
            )
            .at(4),
        );
        assert_eq!(
            e.to_string(),
            "store integrity: node (level 1, index 2) is missing"
        );
        let r = Refusal::Revoked {
            name: "web".into(),
            at: 7,
            reason: Some("leaked".into()),
        };
        assert!(
            r.to_string()
                .contains("revoked at log index 7 (reason: leaked)")
        );
    }
}
