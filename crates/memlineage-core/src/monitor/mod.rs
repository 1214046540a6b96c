//! An offline monitor of a MemLineage log: it follows the log from its signed checkpoints,
//! the consistency proofs between them and the leaves, and needs no secret key and no write
//! access. No I/O here: the caller reads the log (the `memlineage` crate reads a store opened
//! read-only) and keeps the [`MonitorState`].
//!
//! For each new checkpoint the monitor
//!
//! 1. refuses a smaller tree than the one it verified ([`Finding::Rollback`]) and checks the
//!    log's consistency proof from its verified tree to the new one ([`Finding::Fork`]);
//! 2. reads every new leaf, in order, and checks it as `verify` does: strict decoding, the
//!    signer against the registry replayed from the log, the signature, the label rule against
//!    the genesis record's, the signed label against its parents' signed labels (a parent
//!    logged before the verified size is read with an inclusion proof against the verified
//!    root), and the content of registry and distrust records ([`Finding::Entry`]);
//! 3. extends the right edge of its tree with the new leaves and compares the root with the
//!    checkpoint's ([`Finding::CheckpointMismatch`]), so the leaves are exactly the tree the
//!    checkpoint signs, whatever nodes the log stores;
//! 4. checks the checkpoint's signature with the operator key current at its size, as the
//!    registry in the leaves says, and that this key history contains the verifier key the
//!    monitor was given ([`Finding::BadCheckpoint`]).
//!
//! Only then does it advance ([`Follow::finish`]). A checkpoint seen elsewhere (held by a
//! client, served by a witness) is checked against the verified tree with
//! [`Monitor::check_other`].

mod entries;
mod finding;
mod state;

pub use finding::Finding;
pub use state::{KeptRecord, MonitorState};

use crate::checkpoint::{Checkpoint, NoteVerifier, open_note, parse_note};
use crate::entry::{EntryKind, SignedEntry};
use crate::merkle::{CompactRange, verify_consistency};
use crate::principal::Registry;
use crate::records::{Distrust, DistrustTarget, RegistryChange};
use crate::{EntryId, Hash256};
use std::collections::BTreeMap;

/// A parent read from the log for a label check, with its inclusion proof in the tree the
/// monitor verified last (size and root of [`MonitorState`]).
#[derive(Debug, Clone)]
pub struct ParentLeaf {
    /// Its leaf index.
    pub index: u64,
    /// Its leaf bytes.
    pub leaf: Vec<u8>,
    /// The RFC 9162 inclusion proof of the leaf in the verified tree.
    pub proof: Vec<Hash256>,
}

/// A monitor, loaded from its state.
#[derive(Debug, Clone)]
pub struct Monitor {
    state: MonitorState,
    registry: Registry,
    distrusted: BTreeMap<String, u64>,
}

impl Monitor {
    /// A monitor that has verified nothing yet, for the log `origin`; `pinned` is the log's
    /// published verifier key (`memlineage checkpoint --vkey`). Without it the monitor trusts
    /// the genesis record's operator key on first use.
    pub fn new(origin: &str, pinned: Option<NoteVerifier>) -> Monitor {
        Monitor {
            state: MonitorState {
                origin: origin.to_string(),
                pinned,
                range: CompactRange::new(),
                note: None,
                rule: None,
                kept: Vec::new(),
            },
            registry: Registry::new(),
            distrusted: BTreeMap::new(),
        }
    }

    /// A monitor from saved state: its registry and distrust records are replayed (their
    /// signatures checked again).
    pub fn from_state(state: MonitorState) -> Result<Monitor, String> {
        let mut m = Monitor {
            registry: Registry::new(),
            distrusted: BTreeMap::new(),
            state: MonitorState {
                kept: Vec::new(),
                ..state.clone()
            },
        };
        for r in &state.kept {
            let entry = SignedEntry::from_leaf(&r.leaf)
                .map_err(|e| format!("kept record {}: {e}", r.index))?;
            m.keep(r.index, &entry, &r.content)
                .map_err(|e| format!("kept record {}: {e}", r.index))?;
        }
        Ok(m)
    }

    /// The state to save.
    pub fn state(&self) -> &MonitorState {
        &self.state
    }

    /// Applies a registry record or notes a distrust record (already checked), and keeps it.
    fn keep(&mut self, index: u64, entry: &SignedEntry, content: &[u8]) -> Result<(), String> {
        match entry.body().kind {
            EntryKind::Registry => {
                let change = RegistryChange::from_content(content).map_err(|e| e.to_string())?;
                self.registry
                    .verify_record_signature(index, entry, &change)
                    .map_err(|e| e.to_string())?;
                self.registry
                    .apply(index, entry, &change)
                    .map_err(|e| e.to_string())?;
            }
            EntryKind::Distrust => {
                let d = Distrust::from_content(content).map_err(|e| e.to_string())?;
                if let DistrustTarget::Principal(name) = d.target {
                    self.distrusted.entry(name).or_insert(index);
                }
            }
            _ => return Ok(()),
        }
        self.state.kept.push(KeptRecord {
            index,
            leaf: entry.to_leaf(),
            content: content.to_vec(),
        });
        Ok(())
    }

    /// The operator's checkpoint keys valid for a checkpoint of `size`: the key current after
    /// the registry records below `size` (the registry must have been replayed that far).
    fn checkpoint_keys(&self, size: u64) -> Vec<NoteVerifier> {
        let Some(op) = self.registry.operator().and_then(|o| self.registry.get(o)) else {
            return Vec::new();
        };
        op.keys
            .iter()
            .filter(|k| k.added_at < size && k.retired_at.is_none_or(|r| r >= size))
            .filter_map(|k| NoteVerifier::new(&self.state.origin, k.key).ok())
            .collect()
    }

    /// Whether the pinned verifier key (if any) is one the operator has held.
    fn pinned_in_history(&self) -> Result<(), String> {
        let Some(pinned) = &self.state.pinned else {
            return Ok(());
        };
        let held = self
            .registry
            .operator()
            .and_then(|o| self.registry.get(o))
            .is_some_and(|op| op.keys.iter().any(|k| k.key == *pinned.key()));
        if held {
            Ok(())
        } else {
            Err(format!(
                "the log's operator has never held the pinned verifier key {pinned}: this is another log, or its registry was rewritten"
            ))
        }
    }

    /// Parses a checkpoint note (its signature is checked later, with the key current at its
    /// size) and checks its origin.
    fn parse_checkpoint(&self, note: &str) -> Result<Checkpoint, Finding> {
        let bad = |reason: String| Finding::BadCheckpoint { size: None, reason };
        let parsed = parse_note(note).map_err(|e| bad(e.to_string()))?;
        let cp = Checkpoint::parse_body(&parsed.body).map_err(|e| bad(e.to_string()))?;
        if cp.origin != self.state.origin {
            return Err(Finding::BadCheckpoint {
                size: Some(cp.size),
                reason: format!(
                    "its origin is `{}`, not this log's `{}`",
                    cp.origin, self.state.origin
                ),
            });
        }
        Ok(cp)
    }

    /// Starts following the log to the checkpoint `note`, given the log's consistency proof
    /// from the verified size to it. Fails with a rollback or fork finding before any leaf is
    /// read.
    pub fn follow(&self, note: &str, proof: &[Hash256]) -> Result<Follow<'_>, Finding> {
        let cp = self.parse_checkpoint(note)?;
        let (held_size, held_root) = (self.state.size(), self.state.root());
        if cp.size < held_size {
            return Err(Finding::Rollback {
                held_size,
                held_root,
                seen_size: cp.size,
                seen_root: cp.root,
            });
        }
        verify_consistency(held_size, cp.size, &held_root, &cp.root, proof).map_err(|e| {
            Finding::Fork {
                held_size,
                held_root,
                seen_size: cp.size,
                seen_root: cp.root,
                detail: e.to_string(),
            }
        })?;
        Ok(Follow {
            base: self,
            next: self.clone(),
            checkpoint: cp,
            note: note.to_string(),
            batch: BTreeMap::new(),
            pending: Vec::new(),
            findings: Vec::new(),
        })
    }

    /// Checks a checkpoint seen elsewhere (held by a client, served by a witness) of a size
    /// the monitor has verified, given the log's consistency proof from its size to the
    /// monitor's: a fork finding when it cannot be part of the verified history. Its signature
    /// is checked with the operator key current at its size. A checkpoint larger than the
    /// verified tree is checked by [`follow`](Self::follow) once the log serves that far.
    pub fn check_other(&self, note: &str, proof: &[Hash256]) -> Result<Checkpoint, Finding> {
        let cp = self.parse_checkpoint(note)?;
        let (held_size, held_root) = (self.state.size(), self.state.root());
        if cp.size > held_size {
            return Err(Finding::BadCheckpoint {
                size: Some(cp.size),
                reason: format!(
                    "it is larger than the {held_size} entries verified so far; check it again once the log serves that far"
                ),
            });
        }
        self.open(&cp, note)?;
        verify_consistency(cp.size, held_size, &cp.root, &held_root, proof).map_err(|e| {
            Finding::Fork {
                held_size,
                held_root,
                seen_size: cp.size,
                seen_root: cp.root,
                detail: format!(
                    "a signed checkpoint seen elsewhere is not a prefix of the verified tree: {e}"
                ),
            }
        })?;
        Ok(cp)
    }

    /// Verifies `note`'s signature with the operator key current at `cp.size`.
    fn open(&self, cp: &Checkpoint, note: &str) -> Result<(), Finding> {
        let bad = |reason: String| Finding::BadCheckpoint {
            size: Some(cp.size),
            reason,
        };
        self.pinned_in_history().map_err(bad)?;
        let keys = self.checkpoint_keys(cp.size);
        if keys.is_empty() {
            return Err(bad(
                "the log's registry names no operator key current at this size".into(),
            ));
        }
        let mut last = String::new();
        for k in &keys {
            match open_note(note, k) {
                Ok(_) => return Ok(()),
                Err(e) => last = e.to_string(),
            }
        }
        Err(bad(format!(
            "not signed by the operator key current at this size ({}): {last}",
            keys.iter()
                .map(NoteVerifier::to_vkey)
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }
}

/// The monitor following the log from its verified size to one checkpoint: feed it the new
/// leaves in order ([`push`](Follow::push)), then [`finish`](Follow::finish).
#[derive(Debug)]
pub struct Follow<'m> {
    base: &'m Monitor,
    next: Monitor,
    checkpoint: Checkpoint,
    note: String,
    /// Entries of this follow: id → (index, signed label).
    batch: BTreeMap<EntryId, (u64, crate::label::TrustLabel)>,
    /// Signatures to verify in one batch: (index, id, key, entry).
    pending: Vec<(u64, ed25519_dalek::VerifyingKey, SignedEntry)>,
    findings: Vec<Finding>,
}

/// What a follow ends with.
#[derive(Debug)]
pub struct FollowOutcome {
    /// The new state, when the checkpoint checked out (entry findings do not stop it).
    pub state: Option<MonitorState>,
    /// Everything found, entries in log order, then the checkpoint's findings.
    pub findings: Vec<Finding>,
    /// The checkpoint followed to.
    pub checkpoint: Checkpoint,
}

impl Follow<'_> {
    /// The index of the next leaf to push.
    pub fn next_index(&self) -> u64 {
        self.next.state.size()
    }

    /// The checkpoint's size: push leaves until [`next_index`](Self::next_index) reaches it.
    pub fn target_size(&self) -> u64 {
        self.checkpoint.size
    }

    /// The size and root the monitor had verified before this follow: parents logged before
    /// it are proved against this tree ([`ParentLeaf::proof`]).
    pub fn verified_tree(&self) -> (u64, Hash256) {
        (self.base.state.size(), self.base.state.root())
    }
}

impl Follow<'_> {
    /// Ends the follow: verifies the pending signatures, compares the root of the leaves with
    /// the checkpoint's, and checks the checkpoint's signature.
    pub fn finish(mut self) -> FollowOutcome {
        self.flush_signatures();
        self.findings.sort_by_key(Finding::index);
        let cp = self.checkpoint.clone();
        let computed = self.next.state.root();
        let mut history = Vec::new();
        if self.next.state.size() != cp.size {
            history.push(Finding::BadCheckpoint {
                size: Some(cp.size),
                reason: format!(
                    "only {} of its {} leaves were read",
                    self.next.state.size(),
                    cp.size
                ),
            });
        } else if computed != cp.root {
            history.push(Finding::CheckpointMismatch {
                size: cp.size,
                signed_root: cp.root,
                computed_root: computed,
            });
        } else if let Err(f) = self.next.open(&cp, &self.note) {
            history.push(f);
        }
        let ok = history.is_empty();
        self.findings.extend(history);
        let state = ok.then(|| {
            let mut s = self.next.state.clone();
            s.note = Some(self.note.clone());
            s
        });
        FollowOutcome {
            state,
            findings: self.findings,
            checkpoint: cp,
        }
    }
}
