//! Entries signed ahead of their commit: [`Memory::sign_writes`] drafts and signs on the
//! caller's thread, and [`Memory::append_signed`] only validates and appends — so that a
//! process that funnels every write through one committing thread (the service's group
//! commit, `memlineage-server`'s `committer.rs`) keeps the Ed25519 signatures, the labels and
//! the entry ids off that thread, where they were up to half of its time per entry.
//!
//! Nothing is trusted for having been signed early: the append's guard re-checks, against the
//! log as of the transaction, each signer against the registry at the entry's index (a key
//! revoked or rotated meanwhile is refused) and every label against the distrust records
//! committed since the labels were computed (paper §M4; `relabel.rs`): a label made stale is
//! computed and signed again, as [`Memory::write_batch`] does. What the early draft did check —
//! the content hash, the parents' presence in the log (append-only) — holds by construction,
//! which is why [`SignedWrites`] can be made only by [`Memory::sign_writes`] and is taken as
//! such only by the handle that made it.

use super::Memory;
use super::stage::Derivations;
use super::write::{WriteRequest, Written};
use crate::error::Error;
use crate::store::NewRecord;
use ed25519_dalek::VerifyingKey;
use memlineage_core::principal::Registry;

/// Entries drafted, labelled and signed by [`Memory::sign_writes`], waiting for
/// [`Memory::append_signed`]. Opaque: the records' checks are skipped at the append only
/// because this handle made them.
#[derive(Debug)]
pub struct SignedWrites {
    records: Vec<NewRecord>,
    /// The verifying key of the key that signed each record.
    signers: Vec<VerifyingKey>,
    /// The log size up to which distrust records had been replayed when the labels were
    /// computed (the least of the parts appended together).
    labels_seen: u64,
    /// The handle that signed them ([`Memory`]'s process-unique number).
    handle: u64,
    /// What each record yields on its own (leaf, leaf hash, value keys, terms), derived on
    /// the signing thread so that the appending one does not ([`stage::Derived`]).
    derived: Derivations,
}

impl SignedWrites {
    /// How many entries.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Moves `other`'s entries after these, to append them together (one transaction).
    /// Entries of another handle make the whole set be checked in full at the append.
    pub fn extend(&mut self, other: SignedWrites) {
        if self.records.is_empty() {
            *self = other;
            return;
        }
        if other.handle != self.handle {
            self.handle = FOREIGN;
        }
        self.labels_seen = self.labels_seen.min(other.labels_seen);
        self.records.extend(other.records);
        self.signers.extend(other.signers);
        self.derived.extend(other.derived);
    }

    /// Splits off the entries from `at` on (as [`Vec::split_off`]; `at` past the end splits
    /// off nothing).
    pub fn split_off(&mut self, at: usize) -> SignedWrites {
        let at = at.min(self.records.len());
        SignedWrites {
            records: self.records.split_off(at),
            signers: self.signers.split_off(at),
            labels_seen: self.labels_seen,
            handle: self.handle,
            derived: self.derived.split_off(at),
        }
    }
}

/// The handle number no [`Memory`] has: a set mixing handles' entries.
const FOREIGN: u64 = 0;

/// A number for each handle of this process, never [`FOREIGN`].
pub(super) fn next_handle() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(FOREIGN + 1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Memory {
    /// Drafts, labels and signs `reqs` now, on this thread, for a later
    /// [`Memory::append_signed`] (by this handle): the work [`Memory::write_batch`] does before
    /// its transaction. Entries may name earlier entries of `reqs` as parents; batches of 32
    /// or more are signed on all cores. Fails as `write_batch` would for a request it refuses
    /// (an unknown parent or writer, a laxer rule, empty content); nothing is written.
    ///
    /// The registry and distrust replay are this handle's cached ones, refreshed from the log
    /// only when a writer is not found registered with its current key there: the append
    /// re-checks both against the log as of its transaction.
    pub fn sign_writes(&self, reqs: Vec<WriteRequest>) -> Result<SignedWrites, Error> {
        let cached = self.cache.get()?;
        let replayed = if self.writers_current(&cached.registry, &reqs) {
            cached
        } else {
            self.refresh_registry_and_distrust(self.reads())?
        };
        let labels_seen = replayed.distrust.next();
        let (records, signers) = self.sign_requests(&replayed, reqs, &[])?;
        let derived = Derivations::of(&records, self.backend.counts_terms());
        Ok(SignedWrites {
            records,
            signers,
            labels_seen,
            handle: self.handle,
            derived,
        })
    }

    /// Appends entries signed by [`Memory::sign_writes`] in one transaction with one fsync,
    /// all or nothing, and returns them in order. A label that a distrust record committed
    /// since made stale is computed and signed again (the entry then gets a new id), as by
    /// [`Memory::write_batch`].
    pub fn append_signed(&self, writes: &SignedWrites) -> Result<Vec<Written>, Error> {
        let (signers, labels_seen): (&[VerifyingKey], Option<u64>) = if writes.handle == self.handle
        {
            (&writes.signers, Some(writes.labels_seen))
        } else {
            // Another handle's entries: every check, every label.
            (&[], None)
        };
        match self.append_records(
            &writes.records,
            signers,
            labels_seen,
            Vec::new(),
            Some(&writes.derived),
        ) {
            Ok(written) => {
                self.note_written(&written);
                Ok(written)
            }
            Err(stale @ Error::StaleLabel { .. }) => {
                self.relabel_until_written(Err((stale, writes.records.clone())))
            }
            Err(e) => Err(e),
        }
    }

    /// Whether every writer of `reqs` is in `registry`, not revoked, with the key this handle
    /// signs with as its current key — then drafting against `registry` refuses nothing that
    /// the log as of now would accept.
    fn writers_current(&self, registry: &Registry, reqs: &[WriteRequest]) -> bool {
        let mut last: Option<&str> = None;
        reqs.iter().all(|r| {
            let name = r.writer.as_str();
            if last == Some(name) {
                return true;
            }
            last = Some(name);
            registry.get(name).is_some_and(|p| {
                p.revoked_at.is_none()
                    && p.current_key().is_some_and(|k| {
                        self.keys
                            .get_with_id(&r.writer)
                            .is_ok_and(|(_, id)| id == k.key_id)
                    })
            })
        })
    }
}
