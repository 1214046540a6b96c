//! Signing drafts for the write path: one at a time, or — for large batches — on signer
//! threads that start as soon as the first draft is made, so that drafting (labels, bodies,
//! ids) overlaps the signatures instead of preceding them.
//!
//! Ed25519 signing is deterministic (RFC 8032 §5.1.6), so an entry signed on a signer thread
//! is byte for byte the entry signed in line: only the wall time changes.

use super::signing_key::SigningKeyRef;
use crate::error::Error;
use crate::store::NewRecord;
use ed25519_dalek::VerifyingKey;
use memlineage_core::entry::EntryBody;
use memlineage_core::{EntryId, Hash256};
use std::sync::mpsc;

/// A request turned into an unsigned body, with what signing and storing it needs.
pub(super) struct Draft {
    pub(super) body: EntryBody,
    pub(super) key: SigningKeyRef,
    pub(super) content: Vec<u8>,
    pub(super) search_text: Option<String>,
}

/// A record signed in this process, with the verifying key of the key that signed it.
pub(super) struct Signed {
    pub(super) record: NewRecord,
    pub(super) signer: VerifyingKey,
}

impl Draft {
    /// The id the entry will have: SHA-256 of the canonical body (no signature needed).
    pub(super) fn id(&self) -> Result<EntryId, Error> {
        Ok(EntryId(Hash256::of(&self.body.canonical_bytes())))
    }

    /// Signs the body and makes the record to append.
    pub(super) fn sign(self) -> Result<Signed, Error> {
        let signer = self.key.public();
        let entry = self.key.sign_entry(self.body)?;
        Ok(Signed {
            record: NewRecord {
                entry,
                content: self.content,
                search_text: self.search_text,
            },
            signer,
        })
    }
}

/// Batches at least this large are signed on signer threads.
pub(super) const PARALLEL_SIGNING_MIN: usize = 32;
/// The most signer threads.
const MAX_SIGNING_THREADS: usize = 8;

/// How many signer threads large batches use: the available parallelism, at most
/// [`MAX_SIGNING_THREADS`]. Asked once per process: `available_parallelism` reads the cgroup
/// quota files on every call (a quarter of a single write's time when it was asked per write).
pub(super) fn signing_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_SIGNING_THREADS)
    })
}

/// Makes `count` drafts with `make(i)`, in order, on the calling thread, while `threads`
/// signer threads sign each one as soon as it is made (draft `i` goes to thread
/// `i % threads`). Returns the signed records in draft order; the first error — of a draft
/// or of a signature — fails the whole batch, and nothing is returned for it.
pub(super) fn sign_pipelined(
    count: usize,
    threads: usize,
    mut make: impl FnMut(usize) -> Result<Draft, Error>,
) -> Result<Vec<Signed>, Error> {
    let threads = threads.clamp(1, count.max(1));
    std::thread::scope(|scope| {
        let mut senders = Vec::with_capacity(threads);
        let mut handles = Vec::with_capacity(threads);
        for _ in 0..threads {
            let (tx, rx) = mpsc::channel::<Draft>();
            senders.push(tx);
            handles.push(scope.spawn(move || {
                rx.into_iter()
                    .map(Draft::sign)
                    .collect::<Result<Vec<Signed>, Error>>()
            }));
        }
        let mut drafted = Ok(());
        for i in 0..count {
            let draft = match make(i) {
                Ok(d) => d,
                Err(e) => {
                    drafted = Err(e);
                    break;
                }
            };
            // A signer only hangs up after a panic, which its join reports below.
            if senders[i % threads].send(draft).is_err() {
                break;
            }
        }
        drop(senders);
        let mut per_thread = Vec::with_capacity(threads);
        for h in handles {
            per_thread.push(
                h.join()
                    .unwrap_or_else(|_| Err(Error::internal("a signing thread panicked")))?,
            );
        }
        drafted?;
        interleave(per_thread, count)
    })
}

/// Puts round-robin results back in draft order: entry `i` is the `i / k`-th of thread
/// `i % k`.
fn interleave(per_thread: Vec<Vec<Signed>>, count: usize) -> Result<Vec<Signed>, Error> {
    let k = per_thread.len().max(1);
    let mut iters: Vec<_> = per_thread.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let next = iters.get_mut(i % k).and_then(Iterator::next);
        out.push(next.ok_or_else(|| Error::internal("a signing thread lost an entry"))?);
    }
    Ok(out)
}

#[cfg(test)]
impl Draft {
    /// A draft of `content` by `agent` (a fixed key), its creation time set by `n`, for this
    /// crate's unit tests.
    pub(super) fn for_tests(n: u64, content: String, search_text: Option<String>) -> Draft {
        use ed25519_dalek::SigningKey;
        use memlineage_core::entry::{EntryKind, Scope};
        use memlineage_core::keys;
        use memlineage_core::label::{Fallback, TrustLabel, Weight};
        let key = SigningKey::from_bytes(&[9u8; 32]);
        let content = content.into_bytes();
        let body = EntryBody {
            scope: Scope::default(),
            writer: "agent".into(),
            key_id: keys::key_id(&key.verifying_key()),
            kind: EntryKind::Observation,
            content_hash: Hash256::of(&content),
            content_len: content.len() as u64,
            source_hash: None,
            context_hash: None,
            parents: Vec::new(),
            attribution: "none".into(),
            tau: Weight::from_bp(5000).unwrap(),
            fallback: Fallback::Strict,
            label: TrustLabel::Trusted,
            created_at_ms: 1_700_000_000_000 + n,
            metadata: Default::default(),
        };
        Draft {
            body,
            key: SigningKeyRef::File(std::sync::Arc::new(crate::keyring::FileKey::new(key))),
            content,
            search_text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(n: u64) -> Draft {
        Draft::for_tests(n, format!("entry {n}"), None)
    }

    #[test]
    fn pipelined_signatures_equal_inline_ones_in_order() {
        for (count, threads) in [(0usize, 2usize), (1, 2), (5, 2), (33, 3), (64, 8)] {
            let inline: Vec<EntryId> = (0..count as u64)
                .map(|n| draft(n).sign().unwrap().record.entry.id())
                .collect();
            let piped = sign_pipelined(count, threads, |i| Ok(draft(i as u64))).unwrap();
            let ids: Vec<EntryId> = piped.iter().map(|s| s.record.entry.id()).collect();
            assert_eq!(ids, inline, "{count} on {threads}");
            for (s, n) in piped.iter().zip(0u64..) {
                assert_eq!(s.record.entry, draft(n).sign().unwrap().record.entry);
            }
        }
    }

    #[test]
    fn a_failed_draft_fails_the_batch() {
        let result = sign_pipelined(10, 2, |i| {
            if i == 6 {
                Err(crate::error::InputError::EmptyContent.into())
            } else {
                Ok(draft(i as u64))
            }
        });
        assert!(matches!(result, Err(Error::Input(_))));
    }
}
