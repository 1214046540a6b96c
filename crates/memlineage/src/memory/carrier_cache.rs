//! What the gate remembers between decisions (issue 16): the earliest carrier of a value and
//! the taint path of an entry, answers that only some records of the log can change.
//!
//! The gate asks, at every decision, where each checked value first appeared in the log
//! (`value_index.rs`) and the taint path of every untrusted entry it names. An agent checks the
//! same payee, the same amount, against the same context, call after call, and each answer is
//! several store reads and a verification. Unlike the answers of `verified_cache.rs`, these are
//! not pure functions of bytes: they depend on the state of the log. What each depends on:
//!
//! - **An earliest carrier found** (a verified carrier that counts, at index `i`). A later
//!   append gets an index above the log's size, so it can never be earlier than `i`; the
//!   carriers before `i` were each passed over for a reason that only a **registry** record (a
//!   revocation can make a carrier fail verification), a **distrust** record (a forgotten
//!   trusted carrier that becomes untrusted counts again; a label rises) or a **tombstone** (a
//!   trusted earliest carrier forgotten no longer vouches; an erased one no longer carries)
//!   can change. The carrier's own label and taint path change only with those records too.
//! - **No carrier that counts** below some log index. An append can add a carrier, so the
//!   answer is kept with the index the examination reached and the number of carriers it
//!   examined, and every later use resumes the examination there: an indexed range read of
//!   the carriers appended since (`value_carriers(key, from, …)`), examined exactly as a
//!   fresh lookup would examine them, up to the same bound.
//! - **A taint path**: the strong path from an entry up to its untrusted root, over ancestors
//!   (immutable) and their effective labels, which only distrust records (and the writer
//!   classes of the registry) change.
//!
//! - **A verified view of an entry** (the gate's `ContextEntry` of a context entry or an
//!   ancestor, its parents and its leaf index, after the verification a retrieval does:
//!   signature, content hash, inclusion in the signed checkpoint, signed and effective label,
//!   taint path). The entry's bytes and position never change; what its verification reads
//!   besides — the registry (its signer at its index, its writer's class), distrust records
//!   (its effective label, its writer's), tombstones (forgotten, erased) — changes only with
//!   those three kinds of record, and the checkpoint it was proved in only when a new one is
//!   signed. So a view is used only under the same stamp rule as the other answers *and* while
//!   the latest stored checkpoint note is byte-for-byte the one read before the view was
//!   verified (a new checkpoint, or a cosignature added, makes every view verified before it
//!   unusable until it is verified again). Only views that passed are kept; an entry that
//!   fails is verified again at every decision (and fails again).
//!
//! So every answer is stamped with the log size read *before* the reads that computed it, and
//! is used only while no registry, distrust or tombstone record has an index at or above its
//! stamp. Before a decision uses any answer, the handle reads the log's size and, when it grew,
//! the records of those three kinds appended since the last look (three indexed range reads in
//! one read snapshot); any such record makes every older answer unusable (and they are
//! dropped). A log that got *smaller* (an older copy of the store put back behind the handle)
//! drops everything. Answers that failed — a carrier that did not verify, an examination that
//! gave up, or one that met an index row naming no entry (a forged row, which `verify`
//! reports) — are never kept: they are looked up again.
//!
//! What this cannot see, like `verified_cache.rs`: an edit of the store's rows behind the
//! running handle that keeps the log's size (a rewritten `effective` or `forgotten` row, a
//! deleted index row). Such an edit is store corruption that `verify` reports; a handle opened
//! afterwards, or one told to forget ([`super::Memory::forget_verified`]), reads it afresh.

use super::verified_cache::Bounded;
use memlineage_core::entry::Scope;
use memlineage_core::gate::{ContextEntry, FirstCarrier, ValueKey};
use memlineage_core::{EntryId, Hash256};
use std::sync::{Arc, Mutex, MutexGuard};

/// A verified entry as the gate reads it (see the module documentation): what a retrieval of
/// it that passed gave the gate.
#[derive(Clone, Debug)]
pub(crate) struct GateView {
    /// The gate's view: effective label, writer, kind, content, taint path.
    pub(crate) entry: ContextEntry,
    /// The ids of all its parents (every edge).
    pub(crate) parents: Vec<EntryId>,
    /// Its leaf index.
    pub(crate) index: u64,
    /// Whether a tombstone had forgotten it (a context entry that is forgotten is read
    /// another way, as `EXTERNAL`: only an ancestry walk uses such a view).
    pub(crate) forgotten: bool,
}

/// The most verified views remembered (each holds its entry's content): the contexts an agent
/// gates on are few and reused, so this bounds the memory (≤ 4096 × 16 KiB) without costing
/// hits.
const MAX_VIEWS: usize = 4096;

/// A view whose content is larger than this is not remembered (verified again each time).
const MAX_VIEW_CONTENT: usize = 16 * 1024;

/// The answer remembered for one value key (and one set of readable scopes).
#[derive(Clone, Debug)]
pub(crate) enum Carrier {
    /// The earliest carrier that counts.
    At(FirstCarrier),
    /// No carrier below log index `from` counts; `examined` carriers were examined.
    Nowhere {
        /// Where the examination resumes.
        from: u64,
        /// How many carriers it examined (the bound is on the whole examination).
        examined: usize,
    },
}

/// The gate's remembered answers (see the module documentation).
pub(crate) struct CarrierCache {
    inner: Mutex<Inner>,
}

struct Inner {
    capacity: usize,
    /// Every registry, distrust and tombstone record with an index below this has been seen.
    scanned_to: u64,
    /// The index of the latest such record seen.
    latest_change: Option<u64>,
    /// Whether the store's value index was seen complete (its setting is written once, when
    /// the index covers the log, and every append indexes itself from then on).
    index_complete: bool,
    /// (value key, readable scopes) → (stamp, answer).
    carriers: Bounded<(ValueKey, Hash256), (u64, Carrier)>,
    /// Entry id → (stamp, taint path).
    taint_paths: Bounded<EntryId, (u64, Vec<EntryId>)>,
    /// Entry id → (stamp, SHA-256 of the latest checkpoint note read before it was verified,
    /// verified view).
    views: Bounded<EntryId, (u64, Hash256, Arc<GateView>)>,
}

impl Inner {
    fn usable(&self, stamp: u64) -> bool {
        self.latest_change.is_none_or(|l| l < stamp)
    }

    fn drop_answers(&mut self) {
        self.carriers.clear();
        self.taint_paths.clear();
        self.views.clear();
    }
}

impl CarrierCache {
    /// A cache keeping up to `capacity` answers of each kind; 0 remembers nothing.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        CarrierCache {
            inner: Mutex::new(Inner {
                capacity,
                scanned_to: 0,
                latest_change: None,
                index_complete: false,
                carriers: Bounded::new(capacity),
                taint_paths: Bounded::new(capacity),
                views: Bounded::new(capacity.min(MAX_VIEWS)),
            }),
        }
    }

    /// Whether it remembers anything at all.
    pub(crate) fn enabled(&self) -> bool {
        self.lock().capacity > 0
    }

    /// Forgets every answer.
    pub(crate) fn clear(&self) {
        self.lock().drop_answers();
    }

    /// The log size below which the records that change answers have been seen, for a log of
    /// `size` entries now: a log smaller than that was replaced behind the handle, and
    /// everything is forgotten (the look starts again from 0).
    pub(crate) fn scan_from(&self, size: u64) -> u64 {
        let mut inner = self.lock();
        if size < inner.scanned_to {
            inner.drop_answers();
            inner.scanned_to = 0;
            inner.latest_change = None;
            inner.index_complete = false;
        }
        inner.scanned_to
    }

    /// Records a look at the log from index `from` up to size `to`, in which `latest` is the
    /// index of the latest registry, distrust or tombstone record (if any). Returns whether
    /// every such record below `to` has now been seen (false when another thread's look
    /// restarted from 0 meanwhile: then nothing remembered is used this time).
    pub(crate) fn scanned(&self, from: u64, to: u64, latest: Option<u64>) -> bool {
        let mut inner = self.lock();
        if let Some(l) = latest
            && inner.latest_change.is_none_or(|now| now < l)
        {
            inner.latest_change = Some(l);
            // Every answer stamped at or below `l` is unusable now; newer ones (none can be,
            // in practice) would be kept, but dropping them all is simpler and safe.
            inner.drop_answers();
        }
        if from <= inner.scanned_to {
            inner.scanned_to = inner.scanned_to.max(to);
        }
        inner.scanned_to >= to
    }

    /// Whether the value index was seen complete (and this cache remembers anything).
    pub(crate) fn index_complete(&self) -> bool {
        let inner = self.lock();
        inner.capacity > 0 && inner.index_complete
    }

    /// Remembers that the value index was seen complete.
    pub(crate) fn remember_index_complete(&self) {
        self.lock().index_complete = true;
    }

    /// The answer for `key` under `scopes`, when one is remembered and still usable.
    pub(crate) fn carrier(&self, key: &ValueKey, scopes: &Hash256) -> Option<(u64, Carrier)> {
        let inner = self.lock();
        let (stamp, answer) = inner.carriers.get(&(*key, *scopes))?;
        inner.usable(*stamp).then(|| (*stamp, answer.clone()))
    }

    /// Remembers the answer for `key` under `scopes`, computed from reads that began when the
    /// log had `stamp` entries (ignored when a record at or above `stamp` is known already).
    pub(crate) fn remember_carrier(
        &self,
        key: &ValueKey,
        scopes: &Hash256,
        stamp: u64,
        answer: Carrier,
    ) {
        let mut inner = self.lock();
        if inner.usable(stamp) {
            inner.carriers.insert((*key, *scopes), (stamp, answer));
        }
    }

    /// The taint path of `id`, when one is remembered and still usable.
    pub(crate) fn taint_path(&self, id: &EntryId) -> Option<Vec<EntryId>> {
        let inner = self.lock();
        let (stamp, path) = inner.taint_paths.get(id)?;
        inner.usable(*stamp).then(|| path.clone())
    }

    /// Remembers the taint path of `id`, computed from reads that began when the log had
    /// `stamp` entries.
    pub(crate) fn remember_taint_path(&self, id: EntryId, stamp: u64, path: Vec<EntryId>) {
        let mut inner = self.lock();
        if inner.usable(stamp) {
            inner.taint_paths.insert(id, (stamp, path));
        }
    }

    /// The verified view of `id`, when one is remembered, still usable, and was verified
    /// under the checkpoint note whose SHA-256 is `anchor` (the latest one now).
    pub(crate) fn view(&self, id: &EntryId, anchor: &Hash256) -> Option<Arc<GateView>> {
        let inner = self.lock();
        let (stamp, verified_under, view) = inner.views.get(id)?;
        (inner.usable(*stamp) && verified_under == anchor).then(|| Arc::clone(view))
    }

    /// Remembers the verified view of an entry, verified by reads that began when the log had
    /// `stamp` entries and its latest checkpoint note had the SHA-256 `anchor`. A view already
    /// remembered is replaced (its anchor may be older).
    pub(crate) fn remember_view(&self, stamp: u64, anchor: Hash256, view: GateView) {
        if view
            .entry
            .content
            .as_ref()
            .is_some_and(|c| c.len() > MAX_VIEW_CONTENT)
        {
            return;
        }
        let mut inner = self.lock();
        if inner.usable(stamp) {
            let id = view.entry.id;
            inner.views.insert(id, (stamp, anchor, Arc::new(view)));
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere while the lock was held leaves, at worst, answers with their stamps:
        // each is used only while it is still usable.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The key of the scopes a caller may read (`None`: every scope), for the remembered answers:
/// SHA-256 over the scopes in order, each with its length.
pub(crate) fn scopes_key(readable: Option<&[Scope]>) -> Hash256 {
    let mut bytes = Vec::with_capacity(64);
    match readable {
        None => bytes.extend_from_slice(b"memlineage carriers: every scope\0"),
        Some(scopes) => {
            bytes.extend_from_slice(b"memlineage carriers: scopes\0");
            for s in scopes {
                bytes.extend_from_slice(&(s.as_str().len() as u64).to_be_bytes());
                bytes.extend_from_slice(s.as_str().as_bytes());
            }
        }
    }
    Hash256::of(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::entry::EntryKind;
    use memlineage_core::gate::ContextEntry;
    use memlineage_core::label::TrustLabel;

    fn first(index: u64) -> Carrier {
        Carrier::At(FirstCarrier {
            index,
            entry: ContextEntry {
                id: EntryId(Hash256::of(&index.to_be_bytes())),
                label: TrustLabel::Trusted,
                writer: "user".into(),
                kind: EntryKind::UserInput,
                content: None,
                taint_path: Vec::new(),
            },
        })
    }

    #[test]
    fn an_answer_is_unusable_once_a_record_at_or_above_its_stamp_is_seen() {
        let c = CarrierCache::with_capacity(8);
        let (k, s) = (ValueKey([1; 16]), scopes_key(None));
        assert_eq!(c.scan_from(10), 0);
        assert!(c.scanned(0, 10, Some(3)));
        c.remember_carrier(&k, &s, 10, first(5));
        assert!(c.carrier(&k, &s).is_some());
        // Another set of scopes is another answer.
        assert!(c.carrier(&k, &scopes_key(Some(&[]))).is_none());
        // Appends with no such record keep it.
        assert_eq!(c.scan_from(20), 10);
        assert!(c.scanned(10, 20, None));
        assert!(c.carrier(&k, &s).is_some());
        // A record at index 25 makes it unusable, and one computed before it is not kept.
        assert!(c.scanned(20, 30, Some(25)));
        assert!(c.carrier(&k, &s).is_none());
        c.remember_carrier(&k, &s, 25, first(5));
        assert!(c.carrier(&k, &s).is_none());
        c.remember_carrier(&k, &s, 26, first(5));
        assert!(c.carrier(&k, &s).is_some());
    }

    #[test]
    fn a_smaller_log_forgets_everything_and_a_gap_is_not_covered() {
        let c = CarrierCache::with_capacity(8);
        let (k, s) = (ValueKey([2; 16]), scopes_key(None));
        assert!(c.scanned(c.scan_from(10), 10, None));
        c.remember_carrier(&k, &s, 10, first(1));
        c.remember_taint_path(EntryId(Hash256::of(b"x")), 10, vec![]);
        assert_eq!(c.scan_from(5), 0);
        assert!(c.carrier(&k, &s).is_none());
        assert!(c.taint_path(&EntryId(Hash256::of(b"x"))).is_none());
        // A look that began above what has been seen covers nothing.
        assert!(!c.scanned(3, 8, None));
        assert!(c.scanned(0, 8, None));
    }

    fn view(seed: u64, content: usize) -> GateView {
        let Carrier::At(first) = first(seed) else {
            unreachable!()
        };
        let mut entry = first.entry;
        entry.content = Some("x".repeat(content));
        GateView {
            entry,
            parents: Vec::new(),
            index: seed,
            forgotten: false,
        }
    }

    #[test]
    fn a_view_is_used_only_under_its_checkpoint_and_stamp() {
        let c = CarrierCache::with_capacity(8);
        let (a, b) = (Hash256::of(b"note a"), Hash256::of(b"note b"));
        assert!(c.scanned(c.scan_from(10), 10, None));
        let v = view(3, 10);
        let id = v.entry.id;
        c.remember_view(10, a, v);
        assert!(c.view(&id, &a).is_some());
        // Another checkpoint note: verified again.
        assert!(c.view(&id, &b).is_none());
        // A registry, distrust or tombstone record at or above the stamp: dropped.
        assert!(c.scanned(10, 20, Some(12)));
        assert!(c.view(&id, &a).is_none());
        // Large contents are not kept.
        let big = view(4, MAX_VIEW_CONTENT + 1);
        let big_id = big.entry.id;
        c.remember_view(21, a, big);
        assert!(c.view(&big_id, &a).is_none());
    }

    #[test]
    fn capacity_zero_remembers_nothing() {
        let c = CarrierCache::with_capacity(0);
        assert!(!c.enabled());
        let (k, s) = (ValueKey([3; 16]), scopes_key(None));
        c.remember_carrier(&k, &s, 1, first(0));
        assert!(c.carrier(&k, &s).is_none());
    }

    #[test]
    fn scopes_keys_differ_by_scope_list() {
        let a = Scope::new("a").unwrap();
        let ab = Scope::new("a/b").unwrap();
        assert_ne!(scopes_key(None), scopes_key(Some(&[])));
        assert_ne!(
            scopes_key(Some(std::slice::from_ref(&a))),
            scopes_key(Some(&[a.clone(), ab.clone()]))
        );
        assert_eq!(
            scopes_key(Some(std::slice::from_ref(&ab))),
            scopes_key(Some(&[ab]))
        );
    }
}
