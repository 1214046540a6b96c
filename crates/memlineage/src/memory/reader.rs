//! The reader's guard against a store that rolled back or forked (issue 12): with a
//! [`ReaderTrust`], every open, read, search and gate first proves that the store's current
//! tree extends the checkpoint the client holds, and that the checkpoint retrieval anchors its
//! inclusion proofs to is consistent with it; only then does the held checkpoint advance.
//!
//! The checks, with what each failure means (all refuse with [`Error::History`], naming both
//! sizes and roots):
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
use crate::error::Error;
use crate::store::Store;
use crate::transparency::client::{Held, ReaderTrust, StateDir, TrustedCheckpoint};
use memlineage_core::checkpoint::Checkpoint;
use memlineage_core::merkle;
use memlineage_core::monitor::Finding;
use memlineage_core::principal::Registry;
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

impl<S: Store> Memory<S> {
    /// Makes this handle a reader that requires `trust` of the store's history, and checks it
    /// at once (the "open" check). A `TrustedCheckpoint::Note` must be signed by a key the
    /// log's operator has held; a state directory's checkpoint was verified when it was saved.
    pub fn with_reader(mut self, trust: ReaderTrust) -> Result<Memory<S>, Error> {
        if trust.is_empty() {
            return Ok(self);
        }
        let origin = self.settings.origin.clone();
        let (dir, held) = match &trust.checkpoint {
            None => (None, None),
            Some(TrustedCheckpoint::Note(note)) => {
                let (held, cp) = Held::from_note(note)?;
                check_origin(&cp, &origin)?;
                self.open_checkpoint_note(note, &self.refresh_registry()?)
                    .map_err(|e| {
                        Error::Integrity(format!(
                            "the trusted checkpoint (size {}, root {}) is not signed by any key this store's operator has held — the store is another log, or its registry was rewritten: {e}",
                            held.size, held.root
                        ))
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

    /// The reader's witness policy, if it has one.
    pub(crate) fn reader_policy(&self) -> Option<&memlineage_core::witness::Policy> {
        self.reader
            .as_ref()
            .and_then(|r| r.trust.witnesses.as_ref())
    }

    /// The checkpoint this reader holds now (after the checks so far), if any.
    pub fn held_checkpoint(&self) -> Option<Held> {
        self.reader.as_ref().and_then(Reader::held)
    }

    /// Runs the reader's checks against the store's latest anchor; a no-op without a reader.
    pub(crate) fn check_history(&self) -> Result<(), Error> {
        if self.reader.is_none() {
            return Ok(());
        }
        let registry = self.refresh_registry()?;
        let anchor = self.anchor_note(&registry)?;
        self.check_history_with(anchor.as_ref().map(|(cp, n)| (cp, n.as_str())))
    }

    /// The checkpoint retrieval anchors to: the newest signed one, or with a reader's witness
    /// policy the newest one (of the last [`WITNESSED_SEARCH`]) whose cosignatures meet its
    /// quorum. The signature is checked with the operator's keys; the tree checks are the
    /// caller's.
    pub(crate) fn anchor_note(
        &self,
        registry: &Registry,
    ) -> Result<Option<(Checkpoint, String)>, Error> {
        let policy = self
            .reader
            .as_ref()
            .and_then(|r| r.trust.witnesses.as_ref())
            .filter(|p| !p.requires_nothing());
        let Some(policy) = policy else {
            return match self.store.latest_checkpoint()? {
                Some(note) => Ok(Some((self.open_checkpoint_note(&note, registry)?, note))),
                None => Ok(None),
            };
        };
        for (_, note) in self.store.checkpoint_notes(u64::MAX, WITNESSED_SEARCH)? {
            if !policy.check(&note).met {
                continue;
            }
            if let Ok(cp) = self.open_checkpoint_note(&note, registry) {
                return Ok(Some((cp, note)));
            }
        }
        Ok(None)
    }

    /// The reader's checks with `anchor` (see the module documentation).
    pub(crate) fn check_history_with(
        &self,
        anchor: Option<(&Checkpoint, &str)>,
    ) -> Result<(), Error> {
        let Some(reader) = &self.reader else {
            return Ok(());
        };
        let held = reader.held();
        if let Some(h) = &held {
            self.check_store_extends(h)?;
        }
        let Some((cp, note)) = anchor else {
            return Ok(());
        };
        if let Some(h) = &held {
            self.check_pair(h, cp)?;
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
                Some(d) if Some(d) != held.as_ref() => self.check_pair(d, cp),
                _ => Ok(()),
            })?,
            None => new,
        };
        reader.set_held(now);
        Ok(())
    }

    /// The store's current tree must extend the held checkpoint.
    fn check_store_extends(&self, h: &Held) -> Result<(), Error> {
        let size = self.store.size()?;
        if size < h.size {
            let seen_root = self.root_at(size).unwrap_or_default();
            return Err(Error::History(Finding::Rollback {
                held_size: h.size,
                held_root: h.root,
                seen_size: size,
                seen_root,
            }));
        }
        let (proof, new_root) = self.raw_consistency(h.size, size)?;
        merkle::verify_consistency(h.size, size, &h.root, &new_root, &proof).map_err(|e| {
            Error::History(Finding::Fork {
                held_size: h.size,
                held_root: h.root,
                seen_size: size,
                seen_root: new_root,
                detail: format!(
                    "the store's current tree does not extend the held checkpoint ({e})"
                ),
            })
        })
    }

    /// A signed checkpoint and the held one must be consistent, in whichever order of size.
    fn check_pair(&self, h: &Held, cp: &Checkpoint) -> Result<(), Error> {
        let fork = |detail: String| {
            Error::History(Finding::Fork {
                held_size: h.size,
                held_root: h.root,
                seen_size: cp.size,
                seen_root: cp.root,
                detail,
            })
        };
        let result = if cp.size >= h.size {
            let (proof, _) = self.raw_consistency(h.size, cp.size)?;
            merkle::verify_consistency(h.size, cp.size, &h.root, &cp.root, &proof)
        } else {
            let (proof, _) = self.raw_consistency(cp.size, h.size)?;
            merkle::verify_consistency(cp.size, h.size, &cp.root, &h.root, &proof)
        };
        result.map_err(|e| {
            fork(format!(
                "the store's signed checkpoint and the held one cannot both be true ({e})"
            ))
        })
    }

    /// The consistency proof between two sizes from the stored nodes, and the stored root of
    /// the larger, unverified (the caller verifies against the roots it trusts).
    fn raw_consistency(
        &self,
        old: u64,
        new: u64,
    ) -> Result<(Vec<memlineage_core::Hash256>, memlineage_core::Hash256), Error> {
        let proof = crate::transparency::monitor::consistency_proof(&self.store, old, new)?;
        Ok((proof, self.root_at(new)?))
    }
}

fn check_origin(cp: &Checkpoint, origin: &str) -> Result<(), Error> {
    if cp.origin != origin {
        return Err(Error::Invalid(format!(
            "the trusted checkpoint is for the log `{}`, but this store is `{origin}`",
            cp.origin
        )));
    }
    Ok(())
}
