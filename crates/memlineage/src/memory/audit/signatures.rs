//! Batch signature verification of a chunk of entries on all cores (RFC 8032; weak keys and
//! small-order `R` are filtered first, see `memlineage_core::keys::verify_batch`).

use memlineage_core::entry::SignedEntry;
use memlineage_core::keys::{self, BatchItem, Domain};

/// Verifies the signatures of `to_check` (position into `decoded`, signer's key) on up to
/// eight threads; returns the positions into `decoded` that fail, sorted.
pub(super) fn verify_signatures(
    decoded: &[(u64, SignedEntry)],
    to_check: &[(usize, ed25519_dalek::VerifyingKey)],
) -> Vec<usize> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let per = to_check.len().div_ceil(threads.max(1)).max(1);
    let mut bad = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = to_check
            .chunks(per)
            .map(|part| {
                s.spawn(move || {
                    let items: Vec<BatchItem<'_>> = part
                        .iter()
                        .map(|(pos, key)| BatchItem {
                            key,
                            bytes: decoded[*pos].1.body_bytes(),
                            signature: decoded[*pos].1.signature(),
                        })
                        .collect();
                    match keys::verify_batch(Domain::EntryV1, &items) {
                        Ok(()) => Vec::new(),
                        Err(keys::KeyError::BatchFailed(v)) => {
                            v.into_iter().map(|i| part[i].0).collect()
                        }
                        Err(_) => part.iter().map(|(p, _)| *p).collect(),
                    }
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(v) => bad.extend(v),
                Err(_) => bad.extend(to_check.iter().map(|(p, _)| *p)),
            }
        }
    });
    bad.sort_unstable();
    bad.dedup();
    bad
}
