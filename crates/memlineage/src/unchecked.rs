//! **Not for production.** Raw access to a handle's store, past every check: for the
//! evaluation (forged and unverified rows, the undefended baselines that read memory straight
//! from the store), the benchmarks (bulk generation of valid logs without the per-entry checks)
//! and tests that tamper with stores or inject faults. Compiled only with the cargo feature
//! `unchecked-store-access`, which `memlineage-eval` and `memlineage-bench` enable; the
//! library's default API has no path that appends, relabels or deletes without the handle's
//! checks.
//!
//! Cargo unifies features within one build: a workspace build that includes the evaluation or
//! the benchmarks compiles this module into the library for every crate of that build. Build a
//! deployment (`cargo build -p memlineage-cli` is such a build, since the CLI embeds the
//! evaluation) knowing that; the Python package and the HTTP service are built on their own.

use crate::error::Error;
use crate::memory::Memory;
pub use crate::memory::stage::Effect;
use crate::memory::stage::{append_unchecked, build, prepare};
use crate::store::{
    AppendBatch, AppendGuard, Backend, BackendRead, NewRecord, NoteRow, WriteStage,
};

/// Raw access to a handle's store ([`Memory::unchecked`]).
pub struct Unchecked<'m> {
    mem: &'m Memory,
}

impl Memory {
    /// Raw access to the store, past every check (module docs: not for production).
    pub fn unchecked(&self) -> Unchecked<'_> {
        Unchecked { mem: self }
    }
}

impl<'m> Unchecked<'m> {
    /// The backend itself: raw reads (nothing verified).
    pub fn backend(&self) -> &'m dyn Backend {
        self.mem.backend_ref()
    }

    /// Appends `records` with no check at all — no signature, registry, parent or label check
    /// — and the derived rows (Merkle nodes, edges, index copies) computed as for any append.
    /// Returns the index of the first.
    pub fn append(&self, records: &[NewRecord]) -> Result<u64, Error> {
        append_unchecked(self.backend(), records, &[])
    }

    /// [`Unchecked::append`] with derived-state `effects` (forgotten entries, raised labels)
    /// applied in the same transaction, as a backup tool restoring a log would.
    pub fn append_with_effects(
        &self,
        records: &[NewRecord],
        effects: &[Effect],
    ) -> Result<u64, Error> {
        append_unchecked(self.backend(), records, effects)
    }
}

/// Appends `records` with `effects` (and store `settings`, for a batch that starts an empty
/// log) to any backend, unchecked: a log copied between backends as it was.
pub fn append_to(
    backend: &dyn Backend,
    records: &[NewRecord],
    effects: &[Effect],
    settings: &[(String, String)],
) -> Result<u64, Error> {
    let staged = prepare(records, backend.counts_terms(), None);
    let mut check =
        |txn: &dyn BackendRead, first: u64| build(txn, first, &staged, effects, settings.to_vec());
    backend.append(&mut AppendGuard::new(&mut check))
}

/// Saves a checkpoint note into any backend, unchecked.
pub fn save_checkpoint(backend: &dyn Backend, size: u64, note: &str) -> Result<(), Error> {
    backend.save_checkpoint(&NoteRow::new(size, note.to_string()))
}

/// The rows an append of `records` with `effects` at `first` would write on the state `txn`
/// reads (what the handle's guard returns after its checks).
pub fn stage(
    txn: &dyn BackendRead,
    first: u64,
    records: &[NewRecord],
    effects: &[Effect],
) -> Result<AppendBatch, Error> {
    build(
        txn,
        first,
        &prepare(records, false, None),
        effects,
        Vec::new(),
    )
}

/// Runs `inner.append` with the guard's checks unchanged and `fault` called first at every
/// write stage: a fault-injecting backend wrapper forwards its appends through this (an error
/// from `fault` aborts the append at that stage).
pub fn append_with_faults(
    inner: &dyn Backend,
    guard: &mut AppendGuard<'_>,
    fault: &mut dyn FnMut(WriteStage) -> Result<(), Error>,
) -> Result<u64, Error> {
    let guard = std::cell::RefCell::new(guard);
    let mut check = |txn: &dyn BackendRead, first: u64| guard.borrow_mut().run(txn, first);
    let mut stages = |stage: WriteStage| {
        fault(stage)?;
        guard.borrow_mut().reached(stage)
    };
    inner.append(&mut AppendGuard::new(&mut check).with_stages(&mut stages))
}
