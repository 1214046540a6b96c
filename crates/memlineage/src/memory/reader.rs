//! The reader's guard against a store that rolled back or forked (issue 12): with a
//! [`ReaderTrust`], every open, read, search and gate first proves that the store's current
//! tree extends the checkpoint the client holds, and that the checkpoint retrieval anchors its
//! inclusion proofs to is consistent with it; only then does the held checkpoint advance.
//!
//! The checks, with what each failure means (all refuse with [`Error::History`], naming both
//! sizes and roots; [`ErrorKind::Integrity`](crate::ErrorKind)):
//!
//! 1. the store has fewer entries than the held checkpoint covers: a rollback (an older copy of
//!    the store was put back, dropping what came after);
//! 2. the store's consistency proof from the held tree to its current tree does not verify: a
//!    fork (the store's history differs from the one the client saw);
//! 3. the anchor — the newest signed checkpoint, or with a witness policy the newest one its
//!    quorum cosigned — is not consistent with the held one: a fork among signed checkpoints.
//!
//! The held checkpoint advances to the anchor when the anchor is newer and every check passed.

use super::Memory;
use super::read::{root_at_in, unverified_consistency_proof};
use crate::error::{Error, HistoryError};
use crate::store::BackendRead;
use crate::transparency::client::{Held, ReaderTrust, StateDir, TrustedCheckpoint};
use memlineage_core::Hash256;
use memlineage_core::checkpoint::Checkpoint;
use memlineage_core::merkle;
use memlineage_core::principal::Registry;
use memlineage_core::witness::Policy;
use std::sync::Mutex;

/// How many stored checkpoints, newest first, a reader with a witness policy looks through for
/// one its quorum cosigned.
pub const WITNESSED_SEARCH: usize = 64;

/// The reader state a handle carries.
#[derive(Debug)]
pub(crate) struct Reader {
    trust: ReaderTrust,
    dir: Option<StateDir>,
    held: Mutex<Option<Held>>,
}

impl Reader {
    fn held(&self) -> Option<Held> {
        self.held.lock().ok().and_then(|h| h.clone())
    }

    fn set_held(&self, h: Held) {
        if let Ok(mut g) = self.held.lock() {
            *g = Some(h);
        }
    }
}

impl Memory {
    /// Makes this handle a reader that requires `trust` of the store's history, and checks it
    /// at once (the "open" check). A `TrustedCheckpoint::Note` must be signed by a key the
    /// log's operator has held; a state directory's checkpoint was verified when it was saved.
    pub fn with_reader(mut self, trust: ReaderTrust) -> Result<Memory, Error> {
        if trust.is_empty() {
            return Ok(self);
        }
        let origin = self.settings.origin.clone();
        let (dir, held) = match &trust.checkpoint {
            None => (None, None),
            Some(TrustedCheckpoint::Note(note)) => {
                let (held, cp) = Held::from_note(note)?;
                if cp.origin != origin {
                    return Err(HistoryError::OtherLog {
                        what: "trusted checkpoint",
                        named: cp.origin,
                        origin,
                    }
                    .into());
                }
                self.open_checkpoint_note(note, &*self.refresh_registry()?)
                    .map_err(|e| HistoryError::Unsigned {
                        held_size: held.size,
                        held_root: held.root,
                        detail: e.to_string(),
                    })?;
                (None, Some(held))
            }
            Some(TrustedCheckpoint::StateDir(path)) => {
                let dir = StateDir::new(path);
                let held = dir.load(&origin)?;
                (Some(dir), held)
            }
        };
        self.reader = Some(Reader {
            trust,
            dir,
            held: Mutex::new(held),
        });
        self.check_history()?;
        Ok(self)
    }

    /// The witness policy of this handle's reader, when it requires any cosignature.
    pub(crate) fn required_witnesses(&self) -> Option<&Policy> {
        self.reader
            .as_ref()
            .and_then(|r| r.trust.witnesses.as_ref())
            .filter(|p| !p.requires_nothing())
    }

    /// The checkpoint this reader holds now (after the checks so far), if any.
    pub fn held_checkpoint(&self) -> Option<Held> {
        self.reader.as_ref().and_then(Reader::held)
    }

    /// Runs the reader's checks against the store's latest anchor, in one read snapshot; a
    /// no-op without a reader.
    pub(crate) fn check_history(&self) -> Result<(), Error> {
        if self.reader.is_none() {
            return Ok(());
        }
        let registry = self.refresh_registry()?;
        let snap = self.backend.snapshot()?;
        let anchor = self.anchor_note(&*snap, &registry)?;
        self.check_history_with(&*snap, anchor.as_ref().map(|(cp, n)| (cp, n.as_str())))
    }

    /// The checkpoint retrieval anchors to, as `r` reads the store: the newest signed one, or
    /// with a reader's witness policy the newest one (of the last [`WITNESSED_SEARCH`]) whose
    /// cosignatures meet its quorum. The signature is checked with the operator's keys; the
    /// tree checks are the caller's.
    pub(crate) fn anchor_note(
        &self,
        r: &dyn BackendRead,
        registry: &Registry,
    ) -> Result<Option<(Checkpoint, String)>, Error> {
        let Some(policy) = self.required_witnesses() else {
            return match r.latest_checkpoint()? {
                Some(note) => Ok(Some((self.open_checkpoint_note(&note, registry)?, note))),
                None => Ok(None),
            };
        };
        self.witnessed_in(r, policy, registry)
    }

    /// The newest of the last [`WITNESSED_SEARCH`] checkpoints `r` reads whose cosignatures
    /// meet `policy`'s quorum and whose operator signature opens with `registry`.
    pub(crate) fn witnessed_in(
        &self,
        r: &dyn BackendRead,
        policy: &Policy,
        registry: &Registry,
    ) -> Result<Option<(Checkpoint, String)>, Error> {
        for stored in r.checkpoint_notes(u64::MAX, WITNESSED_SEARCH)? {
            if policy.check(&stored.note).met
                && let Ok(cp) = self.open_checkpoint_note(&stored.note, registry)
            {
                return Ok(Some((cp, stored.note)));
            }
        }
        Ok(None)
    }

    /// The reader's checks with `anchor`, against the store as `r` reads it (see the module
    /// documentation).
    pub(crate) fn check_history_with(
        &self,
        r: &dyn BackendRead,
        anchor: Option<(&Checkpoint, &str)>,
    ) -> Result<(), Error> {
        let Some(reader) = &self.reader else {
            return Ok(());
        };
        let held = reader.held();
        if let Some(h) = &held {
            check_store_extends(r, h)?;
        }
        let Some((cp, note)) = anchor else {
            return Ok(());
        };
        if let Some(h) = &held {
            check_pair(r, h, cp)?;
            if cp.size <= h.size {
                return Ok(());
            }
        }
        let new = Held {
            size: cp.size,
            root: cp.root,
            note: note.to_string(),
        };
        let now = match &reader.dir {
            Some(dir) => dir.advance(&self.settings.origin, &new, |on_disk| match on_disk {
                // Another process advanced the directory meanwhile: its checkpoint and this
                // one must be consistent too.
                Some(d) if Some(d) != held.as_ref() => check_pair(r, d, cp),
                _ => Ok(()),
            })?,
            None => new,
        };
        reader.set_held(now);
        Ok(())
    }
}

/// The store's current tree, as `r` reads it, must extend the held checkpoint.
fn check_store_extends(r: &dyn BackendRead, h: &Held) -> Result<(), Error> {
    let size = r.size()?;
    if size < h.size {
        let seen_root = root_at_in(r, size).unwrap_or_default();
        return Err(HistoryError::Rollback {
            held_size: h.size,
            held_root: h.root,
            seen_size: size,
            seen_root,
        }
        .into());
    }
    let (proof, new_root) = raw_consistency(r, h.size, size)?;
    merkle::verify_consistency(h.size, size, &h.root, &new_root, &proof).map_err(|e| {
        HistoryError::Fork {
            held_size: h.size,
            held_root: h.root,
            seen_size: size,
            seen_root: new_root,
            detail: format!("the store's current tree does not extend the held checkpoint ({e})"),
        }
        .into()
    })
}

/// A signed checkpoint and the held one must be consistent, in whichever order of size.
fn check_pair(r: &dyn BackendRead, h: &Held, cp: &Checkpoint) -> Result<(), Error> {
    let result = if cp.size >= h.size {
        let (proof, _) = raw_consistency(r, h.size, cp.size)?;
        merkle::verify_consistency(h.size, cp.size, &h.root, &cp.root, &proof)
    } else {
        let (proof, _) = raw_consistency(r, cp.size, h.size)?;
        merkle::verify_consistency(cp.size, h.size, &cp.root, &h.root, &proof)
    };
    result.map_err(|e| {
        HistoryError::Fork {
            held_size: h.size,
            held_root: h.root,
            seen_size: cp.size,
            seen_root: cp.root,
            detail: format!(
                "the store's signed checkpoint and the held one cannot both be true ({e})"
            ),
        }
        .into()
    })
}

/// The consistency proof between two sizes from the nodes `r` reads, and the stored root of
/// the larger, unverified (the caller verifies against the roots it trusts).
fn raw_consistency(
    r: &dyn BackendRead,
    old: u64,
    new: u64,
) -> Result<(Vec<Hash256>, Hash256), Error> {
    Ok((
        unverified_consistency_proof(r, old, new)?,
        root_at_in(r, new)?,
    ))
}
