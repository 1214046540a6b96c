//! Copying a log to another store, verified end to end (`memlineage migrate`; `docs/store.md`,
//! "Moving a log between stores").
//!
//! Any location to any location: the source is audited first ([`Memory::verify`]: every
//! leaf, signature, registry change, label, derived row, the tree and the signed checkpoint),
//! so a damaged or tampered log is never copied. The signed records are then appended to the
//! new store as they are — a chunk per transaction, with the derived state the source holds
//! (forgotten rows, erasures, raised labels) and its settings — and the latest signed
//! checkpoint note is copied. Finally the copy is opened and checked against the source: its
//! own full audit; every leaf, id, content, forgotten row and effective label equal to the
//! source's, entry by entry; the index copies equal; the root over every copied leaf equal;
//! and the copy's latest checkpoint verified against the operator's key and the copy's own
//! tree, and equal to the source's. Nothing is signed anew: the copy holds the same log.

use super::Memory;
use super::read::decode_stored;
use super::stage::{Effect, build, prepare};
use crate::error::{Error, IntegrityCheck};
use crate::store::{AppendGuard, BackendRead, NewRecord, NoteRow, OpenMode, StoreLocation};

/// Entries copied per transaction.
pub const COPY_CHUNK: u64 = 2048;

/// The settings a store keeps (`docs/formats.md`, "Store settings").
const SETTINGS: [&str; 4] = ["origin", "tau", "fallback", "operator"];

/// What a copy did and checked.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CopyReport {
    /// The source (no secrets).
    pub from: String,
    /// The copy (no secrets).
    pub to: String,
    /// Entries copied (the source's size when the copy began).
    pub entries: u64,
    /// The root over every copied leaf, equal in both stores (hex).
    pub root: String,
    /// The size the latest signed checkpoint covers, verified in the copy.
    pub checkpoint_size: u64,
    /// Signatures the audits of the source and of the copy verified.
    pub signatures_verified: u64,
}

impl Memory {
    /// Copies this store's log into a new store at `to` (which must not hold one) and verifies
    /// the copy end to end (module docs); returns the copy, opened, and what was checked.
    /// `progress` gets `(done, total)` entries as the copy and the checks advance. Writers
    /// should be stopped: entries appended to the source during the copy are not copied, and a
    /// tombstone or distrust record appended meanwhile makes the comparison fail.
    pub fn copy_to(
        &self,
        to: &StoreLocation,
        progress: &mut dyn FnMut(&str, u64, u64),
    ) -> Result<(Memory, CopyReport), Error> {
        let audit = self.verify(&mut |d, t| progress("auditing the source", d, t))?;
        if !audit.ok() {
            return Err(Error::integrity(
                IntegrityCheck::Verification,
                format!(
                    "the source store does not verify ({} problems, the first: {}); nothing was copied (run `memlineage verify` on it)",
                    audit.problem_count,
                    audit.problems.first().map_or("", |p| p.reason.as_str())
                ),
            ));
        }
        let source_cp = self.latest_checkpoint()?.ok_or_else(|| {
            Error::integrity(
                IntegrityCheck::Checkpoint,
                "the source has no signed checkpoint to verify the copy against: sign one first (`memlineage checkpoint`)",
            )
        })?;
        let src = self.reads();
        let note = src.latest_checkpoint()?.unwrap_or_default();
        let total = src.size()?;
        let dest = to.open(OpenMode::Create)?;
        let mut settings: Vec<(String, String)> = Vec::new();
        for k in SETTINGS {
            if let Some(v) = src.setting(k)? {
                settings.push((k.to_string(), v));
            }
        }
        // The copy indexes every value it appends (issue 19); the keys of entries whose
        // content the source had erased are not carried over (docs/store.md, "Value index").
        settings.push((
            super::value_index::VALUE_INDEX_SETTING.to_string(),
            super::value_index::VALUE_INDEX_VERSION.to_string(),
        ));
        let mut start = 0;
        while start < total {
            let rows = src.entries(start, COPY_CHUNK.min(total - start))?;
            let (records, effects) = records_of(&rows)?;
            let first_settings = std::mem::take(&mut settings);
            let staged = prepare(&records, dest.counts_terms(), None);
            let mut check = |txn: &dyn BackendRead, first: u64| {
                build(txn, first, &staged, &effects, first_settings.clone())
            };
            let at = dest.append(&mut AppendGuard::new(&mut check))?;
            if at != start {
                return Err(Error::internal(format!(
                    "the copy's chunk landed at index {at}, not {start}: another writer appended to the new store"
                )));
            }
            start += rows.len() as u64;
            progress("copying", start, total);
            if rows.is_empty() {
                break;
            }
        }
        dest.save_checkpoint(&NoteRow::new(source_cp.size, note))?;
        let copy = Memory::open(dest)?;
        let copy_audit = copy.verify(&mut |d, t| progress("auditing the copy", d, t))?;
        if !copy_audit.ok() {
            return Err(Error::integrity(
                IntegrityCheck::Verification,
                format!(
                    "the copy does not verify ({} problems, the first: {})",
                    copy_audit.problem_count,
                    copy_audit
                        .problems
                        .first()
                        .map_or("", |p| p.reason.as_str())
                ),
            ));
        }
        compare(self.reads(), copy.reads(), total, progress)?;
        let root = self.root_at(total)?;
        if copy.root_at(total)? != root {
            return Err(differs(format!("the root over {total} leaves")));
        }
        let copy_cp = copy
            .latest_checkpoint()?
            .ok_or_else(|| differs("the checkpoint"))?;
        if (copy_cp.size, copy_cp.root) != (source_cp.size, source_cp.root) {
            return Err(differs("the latest signed checkpoint"));
        }
        let report = CopyReport {
            from: self.location(),
            to: copy.location(),
            entries: total,
            root: root.to_hex(),
            checkpoint_size: copy_cp.size,
            signatures_verified: audit.signatures + copy_audit.signatures,
        };
        Ok((copy, report))
    }
}

/// The records of stored rows, and the derived state they carry in the source.
fn records_of(rows: &[crate::store::StoredEntry]) -> Result<(Vec<NewRecord>, Vec<Effect>), Error> {
    let mut effects = Vec::new();
    let mut records = Vec::with_capacity(rows.len());
    for r in rows {
        let entry = decode_stored(r)?;
        if let Some(tombstone) = r.forgotten_by {
            effects.push(Effect::Forget {
                target: r.id,
                tombstone,
                erase: r.content.is_none(),
            });
        }
        if let Some(label) = r.effective_label {
            effects.push(Effect::RaiseLabel { id: r.id, label });
        }
        let content = r.content.clone().unwrap_or_default();
        // As the write path indexes: the text of content entries that are UTF-8.
        let search_text = if entry.body().kind.is_control() {
            None
        } else {
            std::str::from_utf8(&content).ok().map(str::to_string)
        };
        records.push(NewRecord {
            entry,
            content,
            search_text,
        });
    }
    Ok((records, effects))
}

/// Every entry of both stores, chunk by chunk: leaf, id, content, forgotten row and effective
/// label; and the index copies.
fn compare(
    a: &dyn BackendRead,
    b: &dyn BackendRead,
    total: u64,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<(), Error> {
    let mut start = 0;
    while start < total {
        let n = COPY_CHUNK.min(total - start);
        let (x, y) = (a.entries(start, n)?, b.entries(start, n)?);
        if x.len() != y.len() {
            return Err(differs(format!("the number of entries from index {start}")));
        }
        for (p, q) in x.iter().zip(&y) {
            let same = (
                p.index,
                p.id,
                &p.leaf,
                &p.content,
                p.forgotten_by,
                p.effective_label,
            ) == (
                q.index,
                q.id,
                &q.leaf,
                &q.content,
                q.forgotten_by,
                q.effective_label,
            );
            if !same {
                return Err(differs(format!("the entry at index {}", p.index)));
            }
        }
        if a.index_rows(start, n)? != b.index_rows(start, n)? {
            return Err(differs(format!("the index copies from index {start}")));
        }
        start += n;
        progress("comparing", start, total);
    }
    Ok(())
}

fn differs(what: impl std::fmt::Display) -> Error {
    Error::integrity(
        IntegrityCheck::Verification,
        format!(
            "the copy differs from the source in {what} (was the source written to during the copy?)"
        ),
    )
}
