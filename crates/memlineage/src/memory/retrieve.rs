//! Verifier-aware retrieval (paper §M5): nothing enters a prompt unverified.
//!
//! Before an entry is returned for a prompt, its leaf is decoded strictly and its id checked;
//! its content is checked against the signed hash; its signer is checked against the registry
//! replayed from the log; its signature is verified (one batch for the whole result set); its
//! inclusion in the latest signed checkpoint is proved from stored nodes; and its signed label is
//! checked against its parents' labels, with its own rule bounded by the store's (and as an
//! external writer's once a distrust record named its writer); its recorded rule must not be
//! laxer than the store's; for a search, its *signed* scope must lie within the requested
//! scope (the store's scope column only pre-filters); and its effective label is recomputed
//! from the log's distrust records (see `effective.rs`), so a deleted row of the store's
//! `effective` table never makes a distrusted entry look trusted. An entry that fails any
//! check is dropped, reported in [`Retrieval::dropped`], and never rendered. Forgotten entries
//! and control records are never returned.
//!
//! A retrieval reads through one read snapshot of the backend (one read transaction): the
//! candidates, the registry and distrust records, the checkpoint, the proofs' nodes and the
//! parents' leaves all come from one consistent state of the log. When it must sign a fresh
//! checkpoint first, it ends the snapshot, signs, and reads on from a new one.
//!
//! The handle remembers three kinds of answers that passed — a signature, an inclusion in a
//! signed tree (carried over to later trees through a verified consistency proof), a signed
//! label — keyed by every input they depend on (`verified_cache.rs`), and does not repeat
//! those checks for the same bytes; every other check runs at every retrieval.
//!
//! What only `verify` checks is listed in `docs/store.md`.

use super::anchor::Anchor;
use super::control::operator_of;
use super::distrusted::DistrustLog;
use super::effective::EffectiveWalk;
use super::parent_labels::ParentLabels;
use super::read::{
    check_checkpoint_root, check_checkpoint_size, root_at_in, unverified_consistency_proof,
};
use super::registry::Replayed;
use super::signature_helper;
use super::verified_cache::VerifiedCache;
use super::{EntryView, Memory};
use crate::error::{Error, Refusal};
use crate::store::{BackendRead, StoredEntry};
use memlineage_core::checkpoint::Checkpoint;
use memlineage_core::entry::Scope;
use memlineage_core::keys::{self, BatchItem, Domain};
use memlineage_core::label::TrustLabel;
use memlineage_core::merkle;
use memlineage_core::render::prompt::{RenderedEntry, context_hash, render_text};
use memlineage_core::rule::{LabelRule, required_label};
use memlineage_core::trust::ParentEdge;
use memlineage_core::{EntryId, Hash256};

/// An entry dropped by retrieval, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Dropped {
    /// The entry id (as indexed).
    pub id: EntryId,
    /// Its leaf index.
    pub index: u64,
    /// What failed.
    pub reason: String,
}

/// The verified result of a retrieval, ready for a prompt.
#[derive(Clone, Debug)]
pub struct Retrieval {
    /// Verified entries, best match first.
    pub entries: Vec<EntryView>,
    /// Entries that failed verification (never rendered).
    pub dropped: Vec<Dropped>,
    /// The prompt rendering of `entries` (structural blocks with escaped content).
    pub rendered: String,
    /// h_ctx of `rendered`: pass it as the context hash of entries derived from this context.
    pub context_hash: Hash256,
    /// The signed checkpoint the inclusion proofs were checked against.
    pub checkpoint: Option<Checkpoint>,
}

/// Whether a retrieval returns forgotten entries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Forgotten {
    /// Never (prompts).
    Skip,
    /// Yes, verified like the others (lineage examination).
    Include,
}

impl Retrieval {
    /// The rendered entries (for the JSON rendering).
    pub fn rendered_entries(&self) -> Vec<RenderedEntry> {
        self.entries.iter().map(rendered_entry).collect()
    }
}

fn rendered_entry(v: &EntryView) -> RenderedEntry {
    let body = v.entry.body();
    RenderedEntry {
        id: v.entry.id(),
        label: v.effective_label,
        writer: body.writer.clone(),
        kind: body.kind,
        created_at_ms: body.created_at_ms,
        strong_parents: body
            .parents
            .iter()
            .filter(|p| p.weight > body.tau)
            .map(|p| p.id)
            .collect(),
        content: v.text().unwrap_or_default(),
    }
}

/// A read snapshot of the backend, for one retrieval.
type Snapshot<'m> = Box<dyn BackendRead + 'm>;

impl Memory {
    /// Full-text search (BM25) within `scope` and below, verified and rendered: ranked by the
    /// handle's lexical index when it keeps one ([`Memory::with_lexical_index`]), else by the
    /// backend's full-text search; candidates, ranking and verification read one snapshot.
    pub fn search(&self, query: &str, scope: &Scope, limit: usize) -> Result<Retrieval, Error> {
        let snap = self.lexical_snapshot()?;
        let indices = self.lexical_ranking(&*snap, query, scope, limit)?;
        self.retrieve_in(snap, indices, scope)
    }

    /// Reads the entries an index found (leaf indices, best first) and verifies them for a
    /// prompt within `scope`, exactly as [`Memory::search`] verifies its results: whatever
    /// index found them, the checks are the same, so an index outside the handle (or a
    /// tampered one) can only choose and order candidates.
    pub fn retrieve_indices(&self, indices: Vec<u64>, scope: &Scope) -> Result<Retrieval, Error> {
        let snap = self.backend.snapshot()?;
        self.retrieve_in(snap, indices, scope)
    }

    /// [`Memory::retrieve_indices`] within a snapshot the caller already holds.
    pub(crate) fn retrieve_in(
        &self,
        snap: Snapshot<'_>,
        indices: Vec<u64>,
        scope: &Scope,
    ) -> Result<Retrieval, Error> {
        let mut candidates = Vec::with_capacity(indices.len());
        let mut dropped = Vec::new();
        let mut batch = batch_read(indices.len(), snap.entries_by_index(&indices));
        for index in indices {
            let stored = match &mut batch {
                Some(all) => all.next().flatten(),
                None => snap.entry_by_index(index)?,
            };
            match stored {
                Some(stored) => candidates.push(stored),
                None => dropped.push(Dropped {
                    id: EntryId(Hash256::default()),
                    index,
                    reason: "indexed for search but missing from the log".into(),
                }),
            }
        }
        self.verify_for_prompt(
            snap,
            candidates,
            dropped,
            Some(scope),
            Forgotten::Skip,
            true,
        )
    }

    /// Verifies and renders the given entries, in the order given (the active context of a
    /// session, or the gate's context).
    pub fn recall(&self, ids: &[EntryId]) -> Result<Retrieval, Error> {
        self.recall_rendered(ids, true)
    }

    /// [`Memory::recall`], with the prompt rendering (and its context hash) left empty when
    /// `render` is false: for the gate, which reads the verified entries and renders nothing.
    pub(crate) fn recall_rendered(
        &self,
        ids: &[EntryId],
        render: bool,
    ) -> Result<Retrieval, Error> {
        let snap = self.backend.snapshot()?;
        let candidates = ids
            .iter()
            .zip(entries_by_id(&*snap, ids))
            .map(|(id, stored)| stored?.ok_or(Error::NotFound(*id)))
            .collect::<Result<Vec<_>, Error>>()?;
        self.verify_for_prompt(snap, candidates, Vec::new(), None, Forgotten::Skip, render)
    }

    /// Verifies the given entries like [`Memory::recall`], *including* forgotten ones (their
    /// content is absent when it was erased): for the gate's value provenance, which must
    /// examine every ancestor of a context entry but never renders one into a prompt (the
    /// rendering is left empty). Entries missing from the log are left out.
    pub(crate) fn recall_lineage(&self, ids: &[EntryId]) -> Result<Retrieval, Error> {
        let snap = self.backend.snapshot()?;
        let candidates = entries_by_id(&*snap, ids)
            .filter_map(Result::transpose)
            .collect::<Result<Vec<_>, Error>>()?;
        self.verify_lineage(snap, candidates)
    }

    /// [`Memory::recall_lineage`] of the entries at the given leaf indices (the value index
    /// names carriers by index): one read of the entries, not one by index and one by id.
    pub(crate) fn recall_lineage_at(&self, indices: &[u64]) -> Result<Retrieval, Error> {
        let snap = self.backend.snapshot()?;
        let candidates = snap
            .entries_by_index(indices)?
            .into_iter()
            .flatten()
            .collect();
        self.verify_lineage(snap, candidates)
    }

    /// The verification of the `recall_lineage` calls: forgotten entries included, nothing
    /// rendered, no scope.
    fn verify_lineage(
        &self,
        snap: Snapshot<'_>,
        candidates: Vec<StoredEntry>,
    ) -> Result<Retrieval, Error> {
        self.verify_for_prompt(
            snap,
            candidates,
            Vec::new(),
            None,
            Forgotten::Include,
            false,
        )
    }

    fn verify_for_prompt(
        &self,
        snap: Snapshot<'_>,
        candidates: Vec<StoredEntry>,
        mut dropped: Vec<Dropped>,
        scope: Option<&Scope>,
        forgotten: Forgotten,
        render: bool,
    ) -> Result<Retrieval, Error> {
        let Replayed {
            registry, distrust, ..
        } = self.refresh_registry_and_distrust(&*snap)?;
        // Every candidate decoded first: their signatures go to the helper thread at once, to
        // be verified beside all the other checks (`signature_helper.rs`); the signed labels of
        // all returned entries are known and the leaves of all their other parents are read in
        // one store call before the checks (`parent_labels.rs`); each parent is decoded once.
        let indices: Vec<u64> = candidates.iter().map(|c| c.index).collect();
        let decoded: Vec<Decoded> = candidates
            .into_iter()
            .filter(|c| forgotten == Forgotten::Include || c.forgotten_by.is_none())
            .map(Decoded::new)
            .collect();
        let pending = self
            .signatures
            .start(signature_items(&decoded, &registry, &self.verified));
        let store_rule = self.store_rule();
        // The checkpoint the proofs anchor to; refreshed when this process can sign as the
        // operator (a key file, or the external signer holds its key) and entries were
        // written since the last one (unless the backend is read-only, or
        // a reader requires witnesses: a checkpoint signed here has no cosignature yet).
        let mut snap = snap;
        let mut checkpoint = self.signed_checkpoint_for(&*snap, &registry)?;
        let uncovered = indices
            .iter()
            .any(|i| checkpoint.as_ref().is_none_or(|cp| *i >= cp.size));
        let may_sign = !self.backend.read_only() && self.required_witnesses().is_none();
        if uncovered && may_sign && operator_of(&registry).is_ok_and(|op| self.can_sign(&op)) {
            // The checkpoint being replaced must still match the log, as before a refresh.
            if let Some(cp) = &checkpoint {
                check_checkpoint_size(cp, snap.size()?)?;
                check_checkpoint_root(cp, root_at_in(&*snap, cp.size)?)?;
            }
            // Signing writes: the snapshot ends first, and the reads go on from a new one.
            drop(snap);
            self.checkpoint()?;
            snap = self.backend.snapshot()?;
            let now = self.refresh_registry_and_distrust(&*snap)?;
            checkpoint = self.signed_checkpoint_for(&*snap, &now.registry)?;
        }
        let snap = &*snap;
        let mut walk = EffectiveWalk::new(snap, &registry, &distrust, store_rule)?;
        // Read after the note: a checkpoint saved meanwhile is covered by it.
        let size = snap.size()?;
        if let Some(cp) = &checkpoint {
            check_checkpoint_size(cp, size)?;
            self.verified
                .anchor_to(cp.size, cp.root, |old_size, old_root| {
                    unverified_consistency_proof(snap, old_size, cp.size).is_ok_and(|proof| {
                        merkle::verify_consistency(old_size, cp.size, &old_root, &cp.root, &proof)
                            .is_ok()
                    })
                });
        }
        // The proofs of the entries whose inclusion this handle proved before are not read.
        let proved = |index: u64, leaf_hash: &Hash256| {
            checkpoint
                .as_ref()
                .is_some_and(|cp| self.verified.included(cp.size, &cp.root, index, leaf_hash))
        };
        let live = decoded
            .iter()
            .filter(|d| !proved(d.index, &d.leaf_hash))
            .map(|d| d.index);
        let anchor = match &checkpoint {
            Some(cp) => Some(Anchor::new(snap, cp, live)?),
            None => None,
        };
        let mut signed_labels = ParentLabels::new(snap, &self.verified);
        for d in &decoded {
            if let Ok(body) = d.view.as_ref().map(|v| v.entry.body())
                && !body.kind.is_control()
            {
                signed_labels.insert(d.id, body.label);
            }
        }
        signed_labels.prefetch(
            decoded
                .iter()
                .filter_map(|d| d.view.as_ref().ok())
                .map(|v| v.entry.body())
                .filter(|body| !body.kind.is_control())
                .flat_map(|body| body.parents.iter().map(|p| p.id)),
        );
        let mut ok: Vec<(EntryView, ed25519_dalek::VerifyingKey)> = Vec::new();
        for d in decoded {
            let (id, index, was_forgotten, leaf_hash) =
                (d.id, d.index, d.was_forgotten, d.leaf_hash);
            let mut drop = |reason: String| dropped.push(Dropped { id, index, reason });
            let view = match d.view {
                Ok(v) => v,
                Err(e) => {
                    drop(e.to_string());
                    continue;
                }
            };
            let body = view.entry.body();
            if body.kind.is_control() {
                continue;
            }
            if let Some(wanted) = scope
                && !wanted.contains(&body.scope)
            {
                drop(format!(
                    "its signed scope `{}` is not within the requested scope `{wanted}` (the store's scope index disagrees with the log: run `memlineage verify`)",
                    body.scope
                ));
                continue;
            }
            if let Some(laxer) = LabelRule::new(body.tau, body.fallback).laxer_than(store_rule) {
                drop(format!("it was signed with a {laxer}"));
                continue;
            }
            match &view.content {
                Some(c) if Hash256::of(c) == body.content_hash => {}
                // Erased by its tombstone: the signed hash stays, the bytes are gone.
                None if was_forgotten => {}
                _ => {
                    drop("content does not match its signed hash".into());
                    continue;
                }
            }
            let key = match registry.signer_at(&body.writer, &body.key_id, index) {
                Ok((_, key)) => *key,
                Err(e) => {
                    drop(format!("signer: {e}"));
                    continue;
                }
            };
            match (&checkpoint, &anchor) {
                (Some(_), Some(_)) if proved(index, &leaf_hash) => {}
                (Some(cp), Some(anchor)) if index < cp.size && cp.size <= size => {
                    match anchor.includes(index, leaf_hash) {
                        Ok(true) => {
                            self.verified
                                .remember_inclusion(cp.size, &cp.root, index, leaf_hash);
                        }
                        Ok(false) => {
                            drop("inclusion proof does not reach the signed checkpoint".into());
                            continue;
                        }
                        Err(e) => {
                            drop(format!("inclusion proof: {e}"));
                            continue;
                        }
                    }
                }
                _ => {
                    drop(if self.required_witnesses().is_some() {
                        "not yet covered by a checkpoint its reader's witnesses cosigned (run `memlineage checkpoint --witness`)".into()
                    } else {
                        "not yet covered by a signed checkpoint (run `memlineage checkpoint`)"
                            .into()
                    });
                    continue;
                }
            }
            match self.required_label(&registry, &distrust, &view, &mut signed_labels) {
                Ok(required) if body.label >= required => {}
                Ok(required) => {
                    drop(format!(
                        "signed label {} is lower than its parents imply ({required})",
                        body.label
                    ));
                    continue;
                }
                Err(e) => {
                    drop(format!("label: {e}"));
                    continue;
                }
            }
            match walk.label_of(index, &view.entry) {
                Ok(e) if e <= view.effective_label => {}
                Ok(e) => {
                    drop(format!(
                        "its effective label is {} in the store's index but the log's distrust records imply {e} (the derived table was edited: run `memlineage verify`)",
                        view.effective_label
                    ));
                    continue;
                }
                Err(e) => {
                    drop(format!("effective label: {e}"));
                    continue;
                }
            }
            ok.push((view, key));
        }
        // One batch verification for the result set's signatures this handle has not verified
        // before: the helper's, when it verified every such candidate (a superset), else here.
        let unchecked: Vec<usize> = (0..ok.len())
            .filter(|&i| {
                let (v, key) = &ok[i];
                !self.verified.signature_verified(
                    &v.entry.id(),
                    key.as_bytes(),
                    &v.entry.signature().to_bytes(),
                )
            })
            .collect();
        let wanted: Vec<_> = unchecked
            .iter()
            .map(|&i| (ok[i].0.entry.id(), ok[i].1))
            .collect();
        let bad: Vec<usize> = match pending.verified(&wanted) {
            _ if unchecked.is_empty() => Vec::new(),
            Some(true) => Vec::new(),
            _ => {
                let items: Vec<BatchItem<'_>> = unchecked
                    .iter()
                    .map(|&i| BatchItem {
                        key: &ok[i].1,
                        bytes: ok[i].0.entry.body_bytes(),
                        signature: ok[i].0.entry.signature(),
                    })
                    .collect();
                match keys::verify_batch(Domain::EntryV1, &items) {
                    Ok(()) => Vec::new(),
                    Err(keys::KeyError::BatchFailed(v)) => {
                        v.iter().map(|&j| unchecked[j]).collect()
                    }
                    Err(_) => unchecked.clone(),
                }
            }
        };
        for &i in unchecked.iter().filter(|i| !bad.contains(i)) {
            let (v, key) = &ok[i];
            self.verified.remember_signature(
                &v.entry.id(),
                key.as_bytes(),
                &v.entry.signature().to_bytes(),
            );
        }
        let mut entries = Vec::with_capacity(ok.len());
        for (i, (view, _)) in ok.into_iter().enumerate() {
            if bad.contains(&i) {
                dropped.push(Dropped {
                    id: view.entry.id(),
                    index: view.index,
                    reason: "signature does not verify".into(),
                });
            } else {
                entries.push(view);
            }
        }
        let (rendered, context_hash) = if render {
            let rendered_entries: Vec<RenderedEntry> = entries.iter().map(rendered_entry).collect();
            let rendered = render_text(&rendered_entries);
            let hash = context_hash(&rendered);
            (rendered, hash)
        } else {
            (String::new(), Hash256::default())
        };
        Ok(Retrieval {
            entries,
            dropped,
            rendered,
            context_hash,
            checkpoint,
        })
    }

    /// The checkpoint the proofs anchor to: the latest note opened with the operator's keys in
    /// `registry` (the signature check is cached per note, `verified_note.rs`), or with a
    /// reader's witness policy the newest one its quorum cosigned; with a reader, checked
    /// against the checkpoint it holds (`reader.rs`). The tree checks are the caller's
    /// (`Anchor::new` checks the root).
    fn signed_checkpoint_for(
        &self,
        reader: &dyn BackendRead,
        registry: &memlineage_core::principal::Registry,
    ) -> Result<Option<Checkpoint>, Error> {
        let anchor = self.anchor_note(reader, registry)?;
        self.check_history_with(reader, anchor.as_ref().map(|(cp, n)| (cp, n.as_str())))?;
        Ok(anchor.map(|(cp, _)| cp))
    }

    /// The least label an entry must carry: from its writer's class at its index (external
    /// once a distrust record named the writer) and its parents' signed labels, with its own
    /// rule bounded by the store's.
    fn required_label(
        &self,
        registry: &memlineage_core::principal::Registry,
        distrust: &DistrustLog,
        view: &EntryView,
        signed_labels: &mut ParentLabels<'_>,
    ) -> Result<TrustLabel, Error> {
        let body = view.entry.body();
        if registry.get(&body.writer).is_none() {
            return Err(Refusal::NotRegistered {
                name: body.writer.clone(),
            }
            .into());
        }
        let class = distrust.class_at(registry, &body.writer, view.index);
        let mut edges = Vec::with_capacity(body.parents.len());
        for p in &body.parents {
            // Signed labels, from the parent's leaf (decoded strictly, its body hashing to the
            // parent id): what the writer could know; distrust raises are not its fault.
            let label = signed_labels.label_of(&p.id)?;
            edges.push(ParentEdge {
                label,
                weight: p.weight,
            });
        }
        Ok(required_label(
            class,
            &edges,
            LabelRule::new(body.tau, body.fallback),
            self.store_rule(),
        ))
    }
}

/// The entries `ids`, in order (each `None` when not in the log), from one batched store read;
/// when that read fails or answers the wrong number, one read per id as the iterator advances,
/// so that errors are those of single reads, in the same order.
fn entries_by_id<'a>(
    reader: &'a dyn BackendRead,
    ids: &'a [EntryId],
) -> impl Iterator<Item = Result<Option<StoredEntry>, Error>> + 'a {
    let mut batch = batch_read(ids.len(), reader.entries_by_id(ids));
    ids.iter().map(move |id| match &mut batch {
        Some(all) => Ok(all.next().flatten()),
        None => reader.entry_by_id(id),
    })
}

/// The entries of one batched store read (`BackendRead::entries_by_index`, `entries_by_id`),
/// when it succeeded with one answer per key asked; `None` otherwise, and the caller then
/// reads one key at a time as before the batch, so that an error is the one the first
/// failing single read reports, at the same point.
fn batch_read(
    asked: usize,
    read: Result<Vec<Option<StoredEntry>>, Error>,
) -> Option<std::vec::IntoIter<Option<StoredEntry>>> {
    read.ok()
        .filter(|all| all.len() == asked)
        .map(Vec::into_iter)
}

/// The signatures of the decoded candidates that could be returned (not control records) and
/// whose signer is valid at their index, for the helper thread.
fn signature_items(
    decoded: &[Decoded],
    registry: &memlineage_core::principal::Registry,
    verified: &VerifiedCache,
) -> Vec<signature_helper::Item> {
    decoded
        .iter()
        .filter_map(|d| d.view.as_ref().ok())
        .filter(|v| !v.entry.body().kind.is_control())
        .filter_map(|v| {
            let body = v.entry.body();
            let (_, key) = registry
                .signer_at(&body.writer, &body.key_id, v.index)
                .ok()?;
            let signature = v.entry.signature().to_bytes();
            if verified.signature_verified(&v.entry.id(), key.as_bytes(), &signature) {
                return None;
            }
            Some((
                v.entry.id(),
                *key,
                v.entry.body_bytes().to_vec(),
                *v.entry.signature(),
            ))
        })
        .collect()
}

/// A candidate of a retrieval, decoded: what the checks need of its stored row, and its view
/// (or why its leaf does not decode).
struct Decoded {
    id: EntryId,
    index: u64,
    was_forgotten: bool,
    leaf_hash: Hash256,
    view: Result<EntryView, Error>,
}

impl Decoded {
    fn new(stored: StoredEntry) -> Decoded {
        Decoded {
            id: stored.id,
            index: stored.index,
            was_forgotten: stored.forgotten_by.is_some(),
            leaf_hash: merkle::leaf_hash(&stored.leaf),
            view: EntryView::from_stored(stored),
        }
    }
}
