//! Batch signature verification of a chunk of entries on all cores (RFC 8032; weak keys and
//! small-order `R` are filtered first, see `memlineage_core::keys::verify_batch`), in the
//! background: while one chunk's signatures are verified, the audit reads and checks the next.

use ed25519_dalek::VerifyingKey;
use memlineage_core::EntryId;
use memlineage_core::entry::SignedEntry;
use memlineage_core::keys::{self, BatchItem, Domain};
use std::thread::{Scope, ScopedJoinHandle};

/// One signature to check: the entry's index and id (to name it), the entry, the signer's key.
pub(super) type Item = (u64, EntryId, SignedEntry, VerifyingKey);

/// Signature checks running on other threads.
pub(super) struct Pending<'scope> {
    handles: Vec<ScopedJoinHandle<'scope, Vec<(u64, EntryId)>>>,
    /// Everything, when a thread could not report (it panicked).
    all: Vec<(u64, EntryId)>,
}

/// The threads the signatures are verified on.
fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    })
}

/// Starts verifying `items`, in parts, one thread each.
pub(super) fn spawn<'scope>(
    scope: &'scope Scope<'scope, '_>,
    mut items: Vec<Item>,
) -> Pending<'scope> {
    let all = items.iter().map(|(i, id, _, _)| (*i, *id)).collect();
    let per = items.len().div_ceil(threads()).max(1);
    let mut parts = Vec::new();
    while items.len() > per {
        let tail = items.split_off(per);
        parts.push(std::mem::replace(&mut items, tail));
    }
    parts.push(items);
    let handles = parts
        .into_iter()
        .map(|part| scope.spawn(move || failures(&part)))
        .collect();
    Pending { handles, all }
}

impl Pending<'_> {
    /// Waits for the checks: the entries whose signature does not verify, in index order.
    pub(super) fn join(self) -> Vec<(u64, EntryId)> {
        let mut bad = Vec::new();
        for h in self.handles {
            match h.join() {
                Ok(v) => bad.extend(v),
                Err(_) => return self.all,
            }
        }
        bad.sort_unstable();
        bad.dedup();
        bad
    }
}

/// The items of `part` whose signature does not verify.
fn failures(part: &[Item]) -> Vec<(u64, EntryId)> {
    let batch: Vec<BatchItem<'_>> = part
        .iter()
        .map(|(_, _, entry, key)| BatchItem {
            key,
            bytes: entry.body_bytes(),
            signature: entry.signature(),
        })
        .collect();
    match keys::verify_batch(Domain::EntryV1, &batch) {
        Ok(()) => Vec::new(),
        Err(keys::KeyError::BatchFailed(v)) => v
            .into_iter()
            .filter_map(|i| part.get(i).map(|(x, id, _, _)| (*x, *id)))
            .collect(),
        Err(_) => part.iter().map(|(x, id, _, _)| (*x, *id)).collect(),
    }
}
