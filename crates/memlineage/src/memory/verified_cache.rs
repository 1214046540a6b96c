//! What this handle has verified already: signatures, inclusions, signed labels.
//!
//! Retrieval verifies every entry before it enters a prompt (`retrieve.rs`), and the gate
//! verifies its whole context at every call. An agent recalls the same memories again and
//! again, so most of that work repeats a check that already passed. Three of the checks are
//! pure functions of immutable inputs; their *passing* answers are remembered here, keyed by
//! every input, in bounded tables in this process's memory:
//!
//! - **A signature.** Ed25519 verification (RFC 8032 §5.1.7) is a function of the signed
//!   bytes, the key and the signature. The entry id is the SHA-256 of the signed body (checked
//!   when the leaf is decoded), so the key of a remembered signature is SHA-256 over
//!   (id, key, signature): another key, another signature or another body is another key here,
//!   and is verified. (Bitcoin Core keeps the same kind of cache of verified signatures,
//!   `src/script/sigcache.h`.) Whether the key was its writer's valid key at the entry's index
//!   is not remembered: the registry decides that at every retrieval.
//! - **An inclusion.** That the leaf with hash `h` is at index `i` of the tree whose size and
//!   root a signed checkpoint states (RFC 6962 §2.1.1). It stays true of every later tree the
//!   first is consistent with (§2.1.2): when the checkpoint a retrieval anchors to moves
//!   forward, the consistency proof between the two is verified once from stored nodes, and
//!   the remembered inclusions carry over; when it does not verify, or the new checkpoint is
//!   not an extension of the old one, every remembered inclusion is forgotten.
//! - **A signed label.** The label an entry's writer signed is in its body, which hashes to its
//!   id; it is what the label check of its children reads from the parent's leaf.
//!
//! Everything else is checked at every retrieval: the leaf is decoded and its id checked
//! (that is how an entry is matched with what is remembered), the content against its signed
//! hash, the signer against the registry, the scope, the rules, the label against its
//! parents' labels, the effective label against the distrust records, and the stored tree's
//! root against the checkpoint. The store is outside this process: whatever is edited there,
//! a remembered answer is about the exact bytes that were verified, so a changed leaf, key or
//! signature is simply not found here, and is checked as if nothing had been remembered. Only
//! answers that passed are kept; a failure is always checked again.

use memlineage_core::label::TrustLabel;
use memlineage_core::{EntryId, Hash256};
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};

/// How many answers of each kind are kept (the oldest go first): 32,768 signatures, inclusions
/// and labels take about 6 MiB together.
pub(crate) const DEFAULT_CAPACITY: usize = 1 << 15;

/// The verified answers of one handle (see the module documentation).
pub(crate) struct VerifiedCache {
    inner: Mutex<Inner>,
}

struct Inner {
    capacity: usize,
    signatures: Bounded<Hash256, ()>,
    labels: Bounded<EntryId, TrustLabel>,
    /// The tree (size, root) the remembered inclusions are proved in.
    anchor: Option<(u64, Hash256)>,
    inclusions: Bounded<(u64, Hash256), ()>,
}

impl Default for VerifiedCache {
    fn default() -> Self {
        VerifiedCache::with_capacity(DEFAULT_CAPACITY)
    }
}

impl VerifiedCache {
    /// A cache keeping up to `capacity` answers of each kind; 0 remembers nothing.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        VerifiedCache {
            inner: Mutex::new(Inner {
                capacity,
                signatures: Bounded::new(capacity),
                labels: Bounded::new(capacity),
                anchor: None,
                inclusions: Bounded::new(capacity),
            }),
        }
    }

    /// Forgets every answer (and keeps `capacity`).
    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        let capacity = inner.capacity;
        *inner = Inner {
            capacity,
            signatures: Bounded::new(capacity),
            labels: Bounded::new(capacity),
            anchor: None,
            inclusions: Bounded::new(capacity),
        };
    }

    /// Whether the signature of entry `id` by `key` verified before.
    pub(crate) fn signature_verified(&self, id: &EntryId, key: &[u8; 32], sig: &[u8; 64]) -> bool {
        self.lock()
            .signatures
            .contains(&signature_key(id, key, sig))
    }

    /// Remembers that the signature of entry `id` by `key` verified.
    pub(crate) fn remember_signature(&self, id: &EntryId, key: &[u8; 32], sig: &[u8; 64]) {
        self.lock()
            .signatures
            .insert(signature_key(id, key, sig), ());
    }

    /// The signed label of entry `id`, when remembered.
    pub(crate) fn label(&self, id: &EntryId) -> Option<TrustLabel> {
        self.lock().labels.get(id).copied()
    }

    /// Remembers the signed label of entry `id` (read from a leaf whose body hashes to `id`).
    pub(crate) fn remember_label(&self, id: EntryId, label: TrustLabel) {
        self.lock().labels.insert(id, label);
    }

    /// Moves the inclusions' tree to `(size, root)`. `consistent` is asked, only when the
    /// tree grew, whether the remembered tree is a prefix of the new one (it verifies the
    /// consistency proof between the two); anything else forgets every inclusion.
    pub(crate) fn anchor_to(
        &self,
        size: u64,
        root: Hash256,
        consistent: impl FnOnce(u64, Hash256) -> bool,
    ) {
        let mut inner = self.lock();
        match inner.anchor {
            Some(now) if now == (size, root) => return,
            Some((old_size, old_root)) if old_size < size && !inner.inclusions.is_empty() => {
                // Verified with the lock held: another retrieval of the same handle waits for
                // one proof rather than racing to move the anchor.
                if !consistent(old_size, old_root) {
                    inner.inclusions.clear();
                }
            }
            _ => inner.inclusions.clear(),
        }
        inner.anchor = Some((size, root));
    }

    /// Whether the leaf with hash `leaf` is known to be at `index` of the tree `(size, root)`.
    pub(crate) fn included(&self, size: u64, root: &Hash256, index: u64, leaf: &Hash256) -> bool {
        let inner = self.lock();
        inner.anchor == Some((size, *root)) && inner.inclusions.contains(&(index, *leaf))
    }

    /// Remembers that the leaf with hash `leaf` is at `index` of the tree `(size, root)`
    /// (ignored unless that is the tree the inclusions are anchored to).
    pub(crate) fn remember_inclusion(&self, size: u64, root: &Hash256, index: u64, leaf: Hash256) {
        let mut inner = self.lock();
        if inner.anchor == Some((size, *root)) {
            inner.inclusions.insert((index, leaf), ());
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere while the lock was held leaves, at worst, a remembered answer that
        // had passed: the tables hold nothing else.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// SHA-256 over the id, the key and the signature (domain-separated).
fn signature_key(id: &EntryId, key: &[u8; 32], sig: &[u8; 64]) -> Hash256 {
    let mut bytes = Vec::with_capacity(40 + 32 + 32 + 64);
    bytes.extend_from_slice(b"memlineage verified signature v1\0");
    bytes.extend_from_slice(id.as_bytes());
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(sig);
    Hash256::of(&bytes)
}

/// A map that keeps its `capacity` most recently inserted keys (also the tables of
/// `carrier_cache.rs`).
pub(super) struct Bounded<K, V> {
    capacity: usize,
    map: HashMap<K, V>,
    order: VecDeque<K>,
}

impl<K: Eq + Hash + Copy, V> Bounded<K, V> {
    pub(super) fn new(capacity: usize) -> Self {
        Bounded {
            capacity,
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(super) fn insert(&mut self, key: K, value: V) {
        if self.capacity == 0 {
            return;
        }
        if self.map.insert(key, value).is_none() {
            self.order.push_back(key);
            if self.order.len() > self.capacity
                && let Some(oldest) = self.order.pop_front()
            {
                self.map.remove(&oldest);
            }
        }
    }

    pub(super) fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    pub(super) fn contains(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.map.clear();
        self.order.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(b: u8) -> Hash256 {
        Hash256::of(&[b])
    }

    #[test]
    fn a_signature_is_remembered_for_its_exact_inputs_only() {
        let c = VerifiedCache::default();
        let id = EntryId(h(1));
        let (key, sig) = ([7u8; 32], [9u8; 64]);
        assert!(!c.signature_verified(&id, &key, &sig));
        c.remember_signature(&id, &key, &sig);
        assert!(c.signature_verified(&id, &key, &sig));
        assert!(!c.signature_verified(&EntryId(h(2)), &key, &sig));
        assert!(!c.signature_verified(&id, &[8u8; 32], &sig));
        let mut other = sig;
        other[63] ^= 1;
        assert!(!c.signature_verified(&id, &key, &other));
    }

    #[test]
    fn the_oldest_answers_go_first_and_capacity_zero_remembers_nothing() {
        let c = VerifiedCache::with_capacity(2);
        for b in 0..3 {
            c.remember_label(EntryId(h(b)), TrustLabel::Trusted);
        }
        assert_eq!(c.label(&EntryId(h(0))), None);
        assert_eq!(c.label(&EntryId(h(2))), Some(TrustLabel::Trusted));
        let none = VerifiedCache::with_capacity(0);
        none.remember_label(EntryId(h(0)), TrustLabel::Trusted);
        assert_eq!(none.label(&EntryId(h(0))), None);
    }

    #[test]
    fn inclusions_carry_over_only_to_a_consistent_larger_tree() {
        let c = VerifiedCache::default();
        c.anchor_to(10, h(10), |_, _| unreachable!("no previous tree"));
        c.remember_inclusion(10, &h(10), 3, h(3));
        // Another tree's inclusion is not recorded.
        c.remember_inclusion(11, &h(11), 4, h(4));
        assert!(c.included(10, &h(10), 3, &h(3)));
        assert!(!c.included(10, &h(10), 3, &h(4)));
        // A consistent extension keeps it.
        c.anchor_to(20, h(20), |size, root| size == 10 && root == h(10));
        assert!(c.included(20, &h(20), 3, &h(3)));
        assert!(!c.included(10, &h(10), 3, &h(3)));
        // An inconsistent one forgets it.
        c.anchor_to(30, h(30), |_, _| false);
        assert!(!c.included(30, &h(30), 3, &h(3)));
        // A smaller or forked tree forgets without asking.
        c.remember_inclusion(30, &h(30), 5, h(5));
        c.anchor_to(25, h(25), |_, _| unreachable!("not an extension"));
        assert!(!c.included(25, &h(25), 5, &h(5)));
        c.remember_inclusion(25, &h(25), 5, h(5));
        c.anchor_to(25, h(26), |_, _| unreachable!("same size, other root"));
        assert!(!c.included(25, &h(26), 5, &h(5)));
    }

    #[test]
    fn clear_forgets_everything() {
        let c = VerifiedCache::default();
        c.remember_label(EntryId(h(0)), TrustLabel::Trusted);
        c.anchor_to(1, h(1), |_, _| true);
        c.remember_inclusion(1, &h(1), 0, h(0));
        c.clear();
        assert_eq!(c.label(&EntryId(h(0))), None);
        assert!(!c.included(1, &h(1), 0, &h(0)));
    }
}
