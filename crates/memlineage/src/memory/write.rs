//! Writing entries: label at write time (O(parents)), sign (large batches on all cores),
//! append with group commit.

use super::Memory;
use super::distrusted::DistrustLog;
use super::read::decode_stored;
use super::registry::{Replayed, catch_up};
use super::relabel::LabelGuard;
use super::signing::{Draft, PARALLEL_SIGNING_MIN, Signed, sign_pipelined, signing_threads};
use super::stage::{self, Effect};
use crate::error::{Error, InputError, Refusal, StoreState};
use crate::store::{AppendGuard, BackendRead, NewRecord};
use ed25519_dalek::VerifyingKey;
use memlineage_core::entry::{EntryBody, EntryKind, Parent, Scope};
use memlineage_core::label::{Fallback, TrustClass, TrustLabel, Weight};
use memlineage_core::principal::Registry;
use memlineage_core::records::{Distrust, RegistryChange, Tombstone};
use memlineage_core::rule::{LabelRule, bounded_label};
use memlineage_core::trust::ParentEdge;
use memlineage_core::{AttributionName, EntryId, Hash256, PrincipalName};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The most parents whose labels one store call reads ahead (a batch with more makes more
/// calls): keeps each statement's parameter array small.
const READ_AHEAD_CHUNK: usize = 1024;

/// What to write. Build with [`WriteRequest::new`] and the `with_*` methods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRequest {
    /// The writer principal (its secret key must be in the keyring).
    pub writer: PrincipalName,
    /// Scope.
    pub scope: Scope,
    /// Kind.
    pub kind: EntryKind,
    /// Content bytes (stored beside the entry; erasable).
    pub content: Vec<u8>,
    /// h_src.
    pub source_hash: Option<Hash256>,
    /// h_ctx.
    pub context_hash: Option<Hash256>,
    /// Parents with weights (any order; duplicates keep the highest weight).
    pub parents: Vec<Parent>,
    /// The attribution algorithm that produced the weights.
    pub attribution: AttributionName,
    /// τ for this entry (default: the store's).
    pub tau: Option<Weight>,
    /// Fallback for this entry (default: the store's).
    pub fallback: Option<Fallback>,
    /// Free metadata.
    pub metadata: BTreeMap<String, String>,
}

impl WriteRequest {
    /// A root entry of `kind` with `content`, in the default scope.
    pub fn new(
        writer: &PrincipalName,
        kind: EntryKind,
        content: impl Into<Vec<u8>>,
    ) -> WriteRequest {
        WriteRequest {
            writer: writer.clone(),
            scope: Scope::default(),
            kind,
            content: content.into(),
            source_hash: None,
            context_hash: None,
            parents: Vec::new(),
            attribution: AttributionName::NONE,
            tau: None,
            fallback: None,
            metadata: BTreeMap::new(),
        }
    }
    /// Sets the scope.
    pub fn with_scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }
    /// Sets the parents and the algorithm that weighted them.
    pub fn with_parents(mut self, parents: Vec<Parent>, attribution: AttributionName) -> Self {
        self.parents = parents;
        self.attribution = attribution;
        self
    }
    /// Sets h_src.
    pub fn with_source(mut self, source: Hash256) -> Self {
        self.source_hash = Some(source);
        self
    }
    /// Sets h_ctx.
    pub fn with_context(mut self, ctx: Hash256) -> Self {
        self.context_hash = Some(ctx);
        self
    }
    /// Overrides τ and/or the fallback.
    pub fn with_label_rule(mut self, tau: Option<Weight>, fallback: Option<Fallback>) -> Self {
        self.tau = tau;
        self.fallback = fallback;
        self
    }
    /// Adds a metadata pair.
    pub fn with_meta(mut self, key: &str, value: &str) -> Self {
        self.metadata.insert(key.to_string(), value.to_string());
        self
    }
}

/// The result of a write.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Written {
    /// The new entry's id.
    pub id: EntryId,
    /// Its leaf index.
    pub index: u64,
    /// Its signed label.
    pub label: TrustLabel,
}

impl Memory {
    /// Writes one entry durably and returns its id.
    pub fn write(&self, req: WriteRequest) -> Result<Written, Error> {
        let mut out = self.write_batch(vec![req])?;
        out.pop()
            .ok_or_else(|| Error::internal("append returned nothing"))
    }

    /// Writes many entries in one transaction with one fsync (group commit). Entries may name
    /// earlier entries of the same batch as parents. All or nothing.
    ///
    /// Batches of 32 entries or more are signed on all cores (Ed25519 signing
    /// is deterministic, so the entries are the same as when signed one by one).
    ///
    /// Labels are re-validated inside the transaction: when a distrust record committed since
    /// they were computed raises what an entry's parents (or its writer) imply, the batch is
    /// re-labelled, re-signed and appended again, up to [`RELABEL_ATTEMPTS`] times.
    pub fn write_batch(&self, reqs: Vec<WriteRequest>) -> Result<Vec<Written>, Error> {
        let first = self.write_batch_once(reqs, &[])?;
        self.relabel_until_written(first)
    }

    /// Finishes a write whose first attempt was `outcome`: while a label is stale, the
    /// batch is re-labelled, re-signed and appended again, up to [`RELABEL_ATTEMPTS`]
    /// attempts in all.
    pub(super) fn relabel_until_written(&self, outcome: Attempt) -> Result<Vec<Written>, Error> {
        let mut outcome = outcome;
        let mut attempt = 1;
        loop {
            match outcome {
                Ok(written) => return Ok(written),
                Err((stale, records)) => {
                    // Drafting sees only distrust records already committed, so a label made
                    // stale by a distrust record of this very batch would be stale again on
                    // every attempt: fail at once (the error says to write it again, apart).
                    let distrusts_itself = records
                        .iter()
                        .any(|r| r.entry.body().kind == EntryKind::Distrust);
                    if distrusts_itself {
                        return Err(stale);
                    }
                    if attempt >= RELABEL_ATTEMPTS {
                        return Err(stale);
                    }
                    tracing::debug!(attempt, "labels changed during the write: {stale}");
                    attempt += 1;
                    // The ids the previous attempt gave the batch's entries: a re-labelled
                    // entry gets a new id, and later entries of the batch that name it as a
                    // parent are pointed at it.
                    let previous: Vec<EntryId> = records.iter().map(|r| r.entry.id()).collect();
                    let reqs = records
                        .into_iter()
                        .map(request_of)
                        .collect::<Result<_, _>>()?;
                    outcome = self.write_batch_once(reqs, &previous)?;
                }
            }
        }
    }

    /// One attempt of [`Memory::write_batch`]: the outer error fails the write; the inner one
    /// is a stale label, returned with the records so that they can be re-labelled.
    /// `previous[i]` is the id entry `i` had in the previous attempt (empty on the first).
    fn write_batch_once(
        &self,
        reqs: Vec<WriteRequest>,
        previous: &[EntryId],
    ) -> Result<Attempt, Error> {
        let replayed = self.refresh_registry_and_distrust(self.reads())?;
        let labels_seen = replayed.distrust.next();
        let (records, signers) = self.sign_requests(&replayed, reqs, previous)?;
        match self.append_records(&records, &signers, Some(labels_seen), Vec::new(), None) {
            Ok(written) => {
                self.note_written(&written);
                Ok(Ok(written))
            }
            Err(stale @ Error::StaleLabel { .. }) => Ok(Err((stale, records))),
            Err(e) => Err(e),
        }
    }

    /// Remembers the signed labels of entries just written (parents of later writes).
    pub(super) fn note_written(&self, written: &[Written]) {
        self.labels.extend(written.iter().map(|w| (w.id, w.label)));
    }

    /// Drafts and signs `reqs` against the registry and distrust records of `replayed`:
    /// the records in order, with the verifying key that signed each. `previous[i]` is the id
    /// entry `i` had in a previous attempt (empty on the first).
    pub(super) fn sign_requests(
        &self,
        replayed: &Replayed,
        reqs: Vec<WriteRequest>,
        previous: &[EntryId],
    ) -> Result<(Vec<NewRecord>, Vec<VerifyingKey>), Error> {
        let Replayed {
            registry, distrust, ..
        } = replayed;
        let mut batch = BatchIds {
            previous,
            renamed: HashMap::new(),
            labels: HashMap::new(),
        };
        let read_ahead = self.parent_labels_ahead(&reqs, distrust)?;
        let threads = signing_threads();
        let count = reqs.len();
        let signed: Vec<Signed> = if threads > 1 && count >= PARALLEL_SIGNING_MIN {
            // Drafts are made in order (an entry may derive from an earlier one of the batch,
            // named by its id, which needs no signature) while signer threads sign the drafts
            // made so far.
            let mut ids = Vec::with_capacity(count);
            let mut reqs = reqs.into_iter();
            let signed = sign_pipelined(count, threads, |i| {
                let req = reqs
                    .next()
                    .ok_or_else(|| Error::internal("a batch request went missing"))?;
                let draft = self.draft(
                    registry,
                    distrust,
                    batch.rename(req),
                    &batch.labels,
                    &read_ahead,
                )?;
                let id = draft.id()?;
                batch.note(i, id, draft.body.label);
                ids.push(id);
                Ok(draft)
            })?;
            if signed
                .iter()
                .zip(&ids)
                .any(|(s, id)| s.record.entry.id() != *id)
            {
                return Err(Error::internal("an entry's id changed when it was signed"));
            }
            signed
        } else {
            let mut signed = Vec::with_capacity(count);
            for (i, req) in reqs.into_iter().enumerate() {
                let s = self
                    .draft(
                        registry,
                        distrust,
                        batch.rename(req),
                        &batch.labels,
                        &read_ahead,
                    )?
                    .sign()?;
                batch.note(i, s.record.entry.id(), s.record.entry.body().label);
                signed.push(s);
            }
            signed
        };
        Ok(signed.into_iter().map(|s| (s.record, s.signer)).unzip())
    }

    /// Builds the body of one record: the label is computed from the parents' *effective*
    /// labels, with the entry's rule bounded by the store's, and as an external writer's once
    /// a distrust record named the writer.
    fn draft(
        &self,
        registry: &Registry,
        distrust: &DistrustLog,
        req: WriteRequest,
        batch: &HashMap<EntryId, TrustLabel>,
        read_ahead: &HashMap<EntryId, TrustLabel>,
    ) -> Result<Draft, Error> {
        if req.content.is_empty() && !req.kind.is_control() {
            return Err(InputError::EmptyContent.into());
        }
        let name = req.writer.as_str();
        let principal = registry.get(name).ok_or_else(|| Refusal::NotRegistered {
            name: name.to_string(),
        })?;
        if let Some(at) = principal.revoked_at {
            return Err(Refusal::Revoked {
                name: name.to_string(),
                at,
                reason: principal.revoke_reason.clone(),
            }
            .into());
        }
        let current = principal.current_key().map(|k| k.key_id);
        let key = self.signing_key(&req.writer, current)?;
        let key_id = key.key_id();
        if current != Some(key_id) {
            return Err(Refusal::KeyNotCurrent {
                name: name.to_string(),
                current,
            }
            .into());
        }
        // Entries logged after a distrust record names their writer take an external writer's
        // label (`EXTERNAL`); the guard re-checks this at the entry's index.
        let class = distrust.class_at(registry, name, u64::MAX);
        let mut parents = req.parents;
        EntryBody::normalise_parents(&mut parents);
        let mut edges = Vec::with_capacity(parents.len());
        for p in &parents {
            let label = match batch.get(&p.id) {
                Some(l) => *l,
                None => match read_ahead.get(&p.id) {
                    Some(label) => *label,
                    None => self.parent_label(&p.id, distrust)?,
                },
            };
            edges.push(ParentEdge {
                label,
                weight: p.weight,
            });
        }
        let store_rule = self.store_rule();
        let rule = LabelRule::new(
            req.tau.unwrap_or(store_rule.tau),
            req.fallback.unwrap_or(store_rule.fallback),
        );
        if let Some(laxer) = rule.laxer_than(store_rule) {
            return Err(Refusal::LaxerRule {
                laxer: laxer.to_string(),
            }
            .into());
        }
        let (tau, fallback) = (rule.tau, rule.fallback);
        let label = bounded_label(class, &edges, rule, store_rule).label;
        let search_text = if req.kind.is_control() {
            None
        } else {
            std::str::from_utf8(&req.content).ok().map(str::to_string)
        };
        let body = EntryBody {
            scope: req.scope,
            writer: req.writer.into(),
            key_id,
            kind: req.kind,
            content_hash: Hash256::of(&req.content),
            content_len: req.content.len() as u64,
            source_hash: req.source_hash,
            context_hash: req.context_hash,
            parents,
            attribution: req.attribution.as_str().to_string(),
            tau,
            fallback,
            label,
            created_at_ms: self.clock.now_ms(),
            metadata: req.metadata,
        };
        Ok(Draft {
            body,
            key,
            content: req.content,
            search_text,
        })
    }

    /// The effective labels of the batch's parents, each looked up once: from the label cache
    /// while the log holds no distrust record (as [`Memory::parent_label`] does), the others
    /// read in one store call ([`BackendRead::labels_by_ids`]: one round trip on PostgreSQL,
    /// where 256 entries with two parents each cost 512 before) — every parent once a distrust
    /// record exists (effective labels may then differ from the signed ones). Read after the registry and
    /// distrust refresh, as the single reads were, so the guard's re-check is unchanged. A
    /// parent missing here (not in the log, or an entry of this very batch) is looked up as
    /// before, so an unknown parent fails with the same error.
    fn parent_labels_ahead(
        &self,
        reqs: &[WriteRequest],
        distrust: &DistrustLog,
    ) -> Result<HashMap<EntryId, TrustLabel>, Error> {
        let cached = distrust.is_empty();
        let mut labels = HashMap::new();
        let mut wanted: Vec<EntryId> = Vec::new();
        for id in reqs.iter().flat_map(|r| r.parents.iter().map(|p| p.id)) {
            if labels.contains_key(&id) {
                continue;
            }
            match self.labels.get(&id).filter(|_| cached) {
                Some(label) => {
                    labels.insert(id, label);
                }
                None => wanted.push(id),
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        for chunk in wanted.chunks(READ_AHEAD_CHUNK) {
            let read = self.reads().labels_by_ids(chunk)?;
            for (id, l) in chunk.iter().zip(read) {
                if let Some(l) = l {
                    self.labels.extend([(*id, l.signed)]);
                    labels.insert(*id, l.effective_label());
                }
            }
        }
        Ok(labels)
    }

    /// The effective label of parent `id` for a new entry: from the label cache while the
    /// log holds no distrust record (then every effective label is the signed one), else from
    /// the store; a label read from the store is cached.
    fn parent_label(&self, id: &EntryId, distrust: &DistrustLog) -> Result<TrustLabel, Error> {
        if distrust.is_empty()
            && let Some(label) = self.labels.get(id)
        {
            return Ok(label);
        }
        let labels = self
            .reads()
            .labels_by_id(id)?
            .ok_or(Error::UnknownParent(*id))?;
        self.labels.extend([(*id, labels.signed)]);
        Ok(labels.effective_label())
    }

    /// The effective label of a stored entry: the signed label, raised by any distrust
    /// ([`BackendRead::labels_by_id`]: no leaf is read).
    pub fn effective_label(&self, id: &EntryId) -> Result<TrustLabel, Error> {
        Ok(self
            .reads()
            .labels_by_id(id)?
            .ok_or(Error::UnknownParent(*id))?
            .effective_label())
    }

    /// Appends records signed elsewhere in this crate; the guard re-validates all of them
    /// inside the transaction.
    pub(super) fn append(
        &self,
        records: Vec<NewRecord>,
        settings: Vec<(String, String)>,
    ) -> Result<Vec<Written>, Error> {
        self.append_records(&records, &[], None, settings, None)
    }

    /// Appends records; the guard re-validates them inside the transaction, against the
    /// registry as of the transaction.
    ///
    /// `prepared[i]`, where present, is the verifying key of the key that signed record `i`
    /// by `draft` and `Draft::sign`, which also computed its content hash from its
    /// content and found each of its parents in the log or earlier in the batch. For such a
    /// record the guard skips what cannot have changed — the content hash, the parents'
    /// presence (the log is append-only) and, when the registry's key for the signer is that
    /// very key, the signature check (an Ed25519 signature made with a key verifies under
    /// it) — and still checks the signer against the registry at the record's index (so a
    /// revocation or rotation committed meanwhile by another writer is refused).
    ///
    /// `labels_seen` is the log size up to which distrust records had been replayed when the
    /// labels were computed (`None`: recheck every label); see [`LabelGuard`].
    ///
    /// `settings` are recorded with the batch: only the genesis batch of [`Memory::init`] has
    /// any, and then the log must still be empty and hold no settings.
    ///
    /// `derived`: the records' [`stage::Derived`] rows when computed ahead (by
    /// [`Memory::sign_writes`]); else they are computed here.
    pub(super) fn append_records(
        &self,
        records: &[NewRecord],
        prepared: &[VerifyingKey],
        labels_seen: Option<u64>,
        settings: Vec<(String, String)>,
        derived: Option<&stage::Derivations>,
    ) -> Result<Vec<Written>, Error> {
        let store_rule = self.store_rule();
        // The cache is not held while the backend runs (`registry.rs`, "Lock order").
        let cached = self.cache.get()?;
        let mut new_registry: Option<(Registry, u64)> = None;
        let mut new_distrust: Option<DistrustLog> = None;
        let recs = records;
        // What does not depend on the log position is staged before the log head is taken.
        let count_terms = self.backend.counts_terms();
        let ahead = derived.and_then(|d| d.rows_for(records, count_terms));
        let staged = stage::prepare(records, count_terms, ahead);
        let mut check = |reader: &dyn BackendRead, first: u64| {
            if !settings.is_empty() && (first != 0 || reader.setting("origin")?.is_some()) {
                return Err(StoreState::AlreadyInitialised.into());
            }
            let mut labels =
                LabelGuard::new(reader, &cached.distrust, labels_seen, recs, store_rule)?;
            // The cached registry is cloned only when it changes: records appended by another
            // writer since it was refreshed, or a registry record in this batch.
            let mut registry = Cow::Borrowed(&*cached.registry);
            let mut next = cached.next;
            let fresh = reader.control_records(EntryKind::Registry, next)?;
            if !fresh.is_empty() {
                catch_up(&fresh, registry.to_mut(), &mut next)?;
            }
            let mut in_batch: HashMap<EntryId, usize> = HashMap::new();
            let mut effects = Vec::new();
            for (offset, rec) in recs.iter().enumerate() {
                let index = first + offset as u64;
                let entry = &rec.entry;
                let body = entry.body();
                let signer = prepared.get(offset);
                if signer.is_none() {
                    if body.content_hash != Hash256::of(&rec.content) {
                        return Err(Refusal::ContentMismatch.into());
                    }
                    for p in &body.parents {
                        if !in_batch.contains_key(&p.id) && reader.entry_by_id(&p.id)?.is_none() {
                            return Err(Error::UnknownParent(p.id));
                        }
                    }
                }
                if body.kind == EntryKind::Registry {
                    let change = RegistryChange::from_content(&rec.content)?;
                    registry.verify_record_signature(index, entry, &change)?;
                    let registry = registry.to_mut();
                    registry.apply(index, entry, &change)?;
                    next = index + 1;
                    labels.note(index, rec, &[])?;
                } else {
                    let (principal, key) = registry.signer_at(&body.writer, &body.key_id, index)?;
                    if signer != Some(key) {
                        entry.verify_signature(key)?;
                    }
                    if body.kind.is_control() && principal.class != TrustClass::Trusted {
                        return Err(Refusal::NotTrusted { kind: body.kind }.into());
                    }
                    labels.check(reader, &registry, index, rec)?;
                    let caused = control_effects(reader, rec, &registry, store_rule)?;
                    labels.note(index, rec, &caused)?;
                    effects.extend(caused);
                }
                in_batch.insert(entry.id(), offset);
            }
            if let Cow::Owned(registry) = registry {
                new_registry = Some((registry, next));
            }
            new_distrust = labels.into_distrust();
            stage::build(reader, first, &staged, &effects, settings.clone())
        };
        let first = self
            .backend
            .append(&mut AppendGuard::new(&mut check).with_early_edges(staged.edges()))?;
        // Embeddings at write time, when a model is attached (derived data: `semantic.rs`).
        self.index_written();
        if new_registry.is_some() || new_distrust.is_some() {
            let (registry, next) = match new_registry {
                Some((r, next)) => (Arc::new(r), next),
                None => (cached.registry, cached.next),
            };
            self.cache.offer(Replayed {
                registry,
                next,
                // What the refresh before the append checked; the append's own records are
                // replayed above, and `next` says so.
                checked_to: cached.checked_to,
                distrust: new_distrust.map_or(cached.distrust, Arc::new),
            })?;
        }
        Ok(records
            .iter()
            .enumerate()
            .map(|(i, r)| Written {
                id: r.entry.id(),
                index: first + i as u64,
                label: r.entry.body().label,
            })
            .collect())
    }
}

/// The derived-state changes of a tombstone or distrust record.
fn control_effects(
    reader: &dyn BackendRead,
    rec: &NewRecord,
    registry: &Registry,
    store_rule: LabelRule,
) -> Result<Vec<Effect>, Error> {
    let entry = &rec.entry;
    match entry.body().kind {
        EntryKind::Tombstone => {
            let t = Tombstone::from_content(&rec.content)?;
            let target = reader
                .entry_by_id(&t.target)?
                .ok_or(Error::NotFound(t.target))?;
            let target_entry = decode_stored(&target)?;
            if target_entry.body().kind.is_control() {
                return Err(Refusal::ControlNotForgettable.into());
            }
            Ok(vec![Effect::Forget {
                target: t.target,
                tombstone: entry.id(),
                erase: t.erase,
            }])
        }
        EntryKind::Distrust => {
            let d = Distrust::from_content(&rec.content)?;
            super::control::distrust_effects(reader, &d, registry, store_rule)
        }
        _ => Ok(Vec::new()),
    }
}

/// The ids and labels of a batch's entries drafted so far, for the entries after them.
struct BatchIds<'a> {
    /// `previous[i]`: the id entry `i` had in the previous attempt (empty on the first).
    previous: &'a [EntryId],
    /// Previous attempt's id → this attempt's id.
    renamed: HashMap<EntryId, EntryId>,
    /// Signed labels of the entries drafted so far.
    labels: HashMap<EntryId, TrustLabel>,
}

impl BatchIds<'_> {
    /// Notes entry `i` of the batch, with its id and signed label.
    fn note(&mut self, i: usize, id: EntryId, label: TrustLabel) {
        if let Some(old) = self.previous.get(i) {
            self.renamed.insert(*old, id);
        }
        self.labels.insert(id, label);
    }

    /// Points parents named by an id of the previous attempt at the entry's new id.
    fn rename(&self, mut req: WriteRequest) -> WriteRequest {
        if !self.renamed.is_empty() {
            for p in &mut req.parents {
                if let Some(new) = self.renamed.get(&p.id) {
                    p.id = *new;
                }
            }
        }
        req
    }
}

/// One attempt at a batch: written, or a stale label with the records to re-label.
pub(super) type Attempt = Result<Vec<Written>, (Error, Vec<NewRecord>)>;

/// How many times [`Memory::write_batch`] re-labels a batch whose labels a concurrently
/// committed distrust record made stale.
pub const RELABEL_ATTEMPTS: u32 = 4;

/// The request that produced `rec`, to label and sign it again (its τ and fallback as
/// resolved; its creation time is taken afresh).
fn request_of(rec: NewRecord) -> Result<WriteRequest, Error> {
    let NewRecord { entry, content, .. } = rec;
    let body = entry.body().clone();
    Ok(WriteRequest {
        writer: PrincipalName::try_from(body.writer)
            .map_err(|e| Error::internal(format!("a drafted entry's writer: {e}")))?,
        scope: body.scope,
        kind: body.kind,
        content,
        source_hash: body.source_hash,
        context_hash: body.context_hash,
        parents: body.parents,
        attribution: AttributionName::try_from(body.attribution)
            .map_err(|e| Error::internal(format!("a drafted entry's attribution: {e}")))?,
        tau: Some(body.tau),
        fallback: Some(body.fallback),
        metadata: body.metadata,
    })
}
