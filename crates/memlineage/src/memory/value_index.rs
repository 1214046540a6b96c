//! The value index wired to the handle (issue 19): filling it for stores made before it,
//! and answering the gate's question "where did this value first appear in the log?" with
//! verified entries (`docs/gate.md`, "Earliest carrier"; `docs/store.md`, "Value index").
//!
//! The index is a hint about where to look, never a source of trust: every carrier it names is
//! read, decoded and verified like a retrieval result, and a live one must really carry the
//! value (its content's keys are computed again), so a row added behind the program's back
//! cannot vouch for anything. What the index cannot prove is its own completeness: `verify`
//! checks that every live content entry is indexed under every key it carries.

use super::carrier_cache::{Carrier, scopes_key};
use super::{EntryView, Memory};
use crate::error::{Error, IntegrityCheck, IntegrityError};
use crate::store::{BackendRead, ValueRows};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope, SignedEntry};
use memlineage_core::gate::{
    ContextEntry, FirstCarrier, FirstCarriers, ValueKey, value_keys_of_text,
};
use memlineage_core::label::TrustLabel;
use std::collections::BTreeMap;

/// The setting that says the value index covers the whole log (every append indexes its own
/// entries once it is set).
pub(crate) const VALUE_INDEX_SETTING: &str = "value_index";
/// Its value: the version of the keys an entry is indexed under. The hash format
/// ([`ValueKey`]) is unchanged since 1; 2 reads the decimal digits of every script by their
/// value and decodes HTML character references (`canon::reading`), and indexes the values of
/// the texts hidden in an entry too (tag characters, base64: `gate/hidden.rs`), so an entry holding `١٠٠٠`
/// or `&#49;&#48;&#48;&#48;` is indexed under 1000 — a store indexed under 1 is filled again on
/// its next writable open. 3 also reads the Arabic thousands and decimal separators, amounts in
/// scientific notation, past a sign and with `_` grouping, and text split by markup
/// (`GB29<b>NWBK</b>…`).
pub(crate) const VALUE_INDEX_VERSION: &str = "3";

/// Entries read per step when filling the index.
const FILL_CHUNK: u64 = 1024;
/// Carriers of one key read per step.
const CARRIER_STEP: usize = 16;
/// Carriers of one key examined at most; beyond them the key counts as not looked up (an
/// unexamined `EXTERNAL` carrier: fail closed).
const MAX_CARRIERS_EXAMINED: usize = 256;
// A resumed examination stops where a fresh one would only if the bound is a whole number of
// steps (`Memory::first_carrier`).
const _: () = assert!(MAX_CARRIERS_EXAMINED.is_multiple_of(CARRIER_STEP));

/// How far the examination of one key's carriers got: the next log index to read carriers
/// from, and how many carriers it examined.
#[derive(Clone, Copy, Debug)]
struct Examination {
    from: u64,
    examined: usize,
}

impl Examination {
    const START: Examination = Examination {
        from: 0,
        examined: 0,
    };
}

/// The outcome of examining one key's carriers.
enum Lookup {
    /// A carrier that counts; `verified` is false for one that failed verification (counted as
    /// `EXTERNAL`, never remembered: a failure is looked up again).
    At { first: FirstCarrier, verified: bool },
    /// None counts, up to where the examination ended; `forged` when it met an index row
    /// naming no entry of the log (never remembered).
    Nowhere { end: Examination, forged: bool },
    /// The bound was reached: the key counts as not looked up.
    GaveUp,
}

/// The keys a stored entry is indexed under: those of its UTF-8 content, for entries that are
/// not control records (the text the write path indexes).
pub(crate) fn keys_of_stored(entry: &SignedEntry, content: Option<&[u8]>) -> Vec<ValueKey> {
    if entry.body().kind.is_control() {
        return Vec::new();
    }
    content
        .and_then(|c| std::str::from_utf8(c).ok())
        .map(value_keys_of_text)
        .unwrap_or_default()
}

impl Memory {
    /// Whether the value index covers the whole log.
    pub(crate) fn value_index_complete(&self, reads: &dyn BackendRead) -> Result<bool, Error> {
        Ok(reads.setting(VALUE_INDEX_SETTING)?.as_deref() == Some(VALUE_INDEX_VERSION))
    }

    /// Fills the value index of a store made before it existed, from the stored contents, and
    /// marks it complete; nothing to do when it is (or when the store is opened read-only: the
    /// gate then refuses to decide, see [`Memory::first_carriers`]). Entries erased before the
    /// index existed have no content left to index (`docs/store.md`, "Value index").
    pub(crate) fn fill_value_index(&self) -> Result<(), Error> {
        if self.backend.read_only() || self.value_index_complete(self.reads())? {
            return Ok(());
        }
        // Entries appended while this runs index themselves.
        let total = self.reads().size()?;
        let mut start = 0;
        while start < total {
            let rows = self.reads().entries(start, FILL_CHUNK.min(total - start))?;
            let Some(last) = rows.last().map(|r| r.index) else {
                break;
            };
            let mut keys = Vec::new();
            for row in &rows {
                let entry = super::read::decode_stored(row)?;
                keys.extend(
                    keys_of_stored(&entry, row.content.as_deref())
                        .into_iter()
                        .map(|k| (k, row.index)),
                );
            }
            self.backend.save_values(&ValueRows::new(keys, None))?;
            start = last + 1;
        }
        self.backend.save_values(&ValueRows::new(
            Vec::new(),
            Some((
                VALUE_INDEX_SETTING.to_string(),
                VALUE_INDEX_VERSION.to_string(),
            )),
        ))
    }

    /// The gate's answers from the value index (what [`Memory::gate`] asks before deciding;
    /// public for tools and benchmarks): for every key, the earliest entry of the log
    /// that carries the value and that the caller may see (`readable`: scopes whose entries it
    /// may read, `None` for every scope), and the log positions of `entries` (the context and
    /// the repair pool). Which carrier counts (`docs/gate.md`, "Earliest carrier"):
    ///
    /// - one that fails verification counts, as `EXTERNAL` (fail closed: it may be the
    ///   attacker's);
    /// - one the caller may not read is passed over (its existence is not the caller's to know);
    /// - a live one whose content does not carry the value is passed over (a forged index row
    ///   vouches for nothing; `verify` reports it);
    /// - a forgotten or erased one counts only when it is untrusted: it can still taint, it can
    ///   no longer vouch;
    /// - else it counts, at its effective label (a distrusted one is untrusted).
    ///
    /// A key whose carriers run past [`MAX_CARRIERS_EXAMINED`] without one that counts is left
    /// out: the gate then counts an unexamined `EXTERNAL` carrier.
    ///
    /// Every answer is looked up in the store here; the gate itself uses the answers its
    /// handle remembers (`carrier_cache.rs`), which are the same.
    pub fn first_carriers(
        &self,
        keys: &[ValueKey],
        readable: Option<&[Scope]>,
        entries: &[&ContextEntry],
    ) -> Result<FirstCarriers, Error> {
        let snap = self.backend.snapshot()?;
        let mut positions = Vec::with_capacity(entries.len());
        for e in entries {
            if let Some(l) = snap.labels_by_id(&e.id)? {
                positions.push((e.id, l.index));
            }
        }
        drop(snap);
        self.first_carriers_at(None, keys, readable, positions)
    }

    /// Brings the gate's remembered answers up to date with the log (`carrier_cache.rs`): reads
    /// its size and, when it grew, the registry, distrust and tombstone records appended since
    /// the last look, in one read snapshot. Returns the size, with which answers computed from
    /// now on are stamped and against which remembered ones are used, and the latest
    /// checkpoint note read in the same snapshot (what the gate's remembered views are
    /// anchored to, `Memory::gate_views`); `None` when nothing remembered may be used (the
    /// handle remembers nothing).
    pub(crate) fn gate_epoch(&self) -> Result<super::gate_epochs::Epoch, Error> {
        if !self.carriers.enabled() {
            return Ok(None);
        }
        let snap = self.backend.snapshot()?;
        let size = snap.size()?;
        let note = snap.latest_checkpoint()?;
        let from = self.carriers.scan_from(size);
        let mut latest = None;
        if from < size {
            for kind in [
                EntryKind::Registry,
                EntryKind::Distrust,
                EntryKind::Tombstone,
            ] {
                if let Some(r) = snap.control_records(kind, from)?.last() {
                    latest = latest.max(Some(r.index));
                }
            }
        }
        Ok(self
            .carriers
            .scanned(from, size, latest)
            .then_some((size, note)))
    }

    /// [`Memory::first_carriers`] with the log positions of the context and pool entries
    /// already known (`positions`: id and leaf index, as their verified views say), using and
    /// keeping remembered answers when `epoch` (from [`Memory::gate_epoch`]) is given.
    pub(crate) fn first_carriers_at(
        &self,
        epoch: Option<u64>,
        keys: &[ValueKey],
        readable: Option<&[Scope]>,
        positions: impl IntoIterator<Item = (EntryId, u64)>,
    ) -> Result<FirstCarriers, Error> {
        if epoch.is_none() || !self.carriers.index_complete() {
            if !self.value_index_complete(self.reads())? {
                return Err(IntegrityError::new(
                    IntegrityCheck::ValueIndex,
                    "the value index has not been filled for this store with the current keys (made before the index or its current keys existed, and opened read-only since): open it once for writing, which fills it, before the gate decides on it",
                )
                .into());
            }
            self.carriers.remember_index_complete();
        }
        let mut out = FirstCarriers::new();
        for (id, index) in positions {
            out.insert_position(id, index);
        }
        let scopes = scopes_key(readable);
        for key in keys {
            let (mut stamp, mut start) = (epoch, Examination::START);
            if epoch.is_some() {
                match self.carriers.carrier(key, &scopes) {
                    Some((_, Carrier::At(first))) => {
                        out.insert(*key, Some(first));
                        continue;
                    }
                    Some((older, Carrier::Nowhere { from, examined })) => {
                        // The answer holds below `from` since `older`; the carriers appended
                        // since are examined now, as a fresh lookup would examine them.
                        stamp = Some(older);
                        start = Examination { from, examined };
                    }
                    None => {}
                }
            }
            let remember = |answer: Carrier| {
                if let Some(stamp) = stamp {
                    self.carriers.remember_carrier(key, &scopes, stamp, answer);
                }
            };
            match self.first_carrier(key, readable, start, epoch)? {
                Lookup::At { first, verified } => {
                    if verified {
                        remember(Carrier::At(first.clone()));
                    }
                    out.insert(*key, Some(first));
                }
                Lookup::Nowhere { end, forged } => {
                    if !forged {
                        remember(Carrier::Nowhere {
                            from: end.from,
                            examined: end.examined,
                        });
                    }
                    out.insert(*key, None);
                }
                Lookup::GaveUp => {}
            }
        }
        Ok(out)
    }

    /// The examination of one key's carriers, from `start`: in log order, [`CARRIER_STEP`] at
    /// a time, up to [`MAX_CARRIERS_EXAMINED`] in all (a multiple of the step, so that an
    /// examination resumed at any point stops exactly where a fresh one would).
    fn first_carrier(
        &self,
        key: &ValueKey,
        readable: Option<&[Scope]>,
        start: Examination,
        epoch: Option<u64>,
    ) -> Result<Lookup, Error> {
        let Examination {
            mut from,
            mut examined,
        } = start;
        let mut forged = false;
        loop {
            if examined >= MAX_CARRIERS_EXAMINED {
                return Ok(Lookup::GaveUp);
            }
            let step = CARRIER_STEP.min(MAX_CARRIERS_EXAMINED - examined);
            let indices = self.reads().value_carriers(key, from, step)?;
            let Some(&last) = indices.last() else {
                return Ok(Lookup::Nowhere {
                    end: Examination { from, examined },
                    forged,
                });
            };
            let r = self.recall_lineage_at(&indices)?;
            let mut verified: BTreeMap<u64, &EntryView> =
                r.entries.iter().map(|v| (v.index, v)).collect();
            let dropped: BTreeMap<u64, EntryId> =
                r.dropped.iter().map(|d| (d.index, d.id)).collect();
            for index in &indices {
                examined += 1;
                if let Some(id) = dropped.get(index) {
                    return Ok(Lookup::At {
                        first: unverified(*index, *id),
                        verified: false,
                    });
                }
                let Some(v) = verified.remove(index) else {
                    // Listed by the index but not in the log: a forged row.
                    forged = true;
                    continue;
                };
                if let Some(first) = self.counts(v, key, readable, epoch)? {
                    return Ok(Lookup::At {
                        first,
                        verified: true,
                    });
                }
            }
            from = last + 1;
        }
    }

    /// Whether a verified carrier counts as the value's earliest (see
    /// [`Memory::first_carriers`]), and as what.
    fn counts(
        &self,
        v: &EntryView,
        key: &ValueKey,
        readable: Option<&[Scope]>,
        epoch: Option<u64>,
    ) -> Result<Option<FirstCarrier>, Error> {
        let body = v.entry.body();
        if let Some(scopes) = readable
            && !scopes.iter().any(|s| s.contains(&body.scope))
        {
            return Ok(None);
        }
        let untrusted = v.effective_label.is_untrusted();
        let gone = v.forgotten_by.is_some() || v.content.is_none();
        if gone && !untrusted {
            return Ok(None);
        }
        if let Some(content) = &v.content
            && !keys_of_stored(&v.entry, Some(content)).contains(key)
        {
            return Ok(None);
        }
        let mut entry = self.context_entry(v, epoch)?;
        entry.content = None;
        Ok(Some(FirstCarrier {
            index: v.index,
            entry,
        }))
    }
}

/// A carrier that failed verification: an `EXTERNAL` carrier, the root of its own taint path.
fn unverified(index: u64, id: EntryId) -> FirstCarrier {
    FirstCarrier {
        index,
        entry: ContextEntry {
            id,
            label: TrustLabel::External,
            writer: String::new(),
            kind: EntryKind::Observation,
            content: None,
            taint_path: vec![id],
        },
    }
}
