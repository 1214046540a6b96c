//! Writing entries: label at write time (O(parents)), sign, append with group commit.

use super::{Memory, catch_up, verify_registry_signature};
use crate::error::Error;
use crate::store::{Effect, NewRecord, Store, StoreRead};
use memlineage_core::entry::{EntryBody, EntryKind, Parent, Scope, SignedEntry};
use memlineage_core::keys;
use memlineage_core::label::{Fallback, TrustClass, TrustLabel, Weight};
use memlineage_core::principal::Registry;
use memlineage_core::records::{Distrust, RegistryChange, Tombstone};
use memlineage_core::trust::{ParentEdge, compute_label};
use memlineage_core::{EntryId, Hash256};
use std::collections::{BTreeMap, HashMap};

/// What to write. Build with [`WriteRequest::new`] and the `with_*` methods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRequest {
    /// The writer principal (its secret key must be in the keyring).
    pub writer: String,
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
    pub attribution: String,
    /// τ for this entry (default: the store's).
    pub tau: Option<Weight>,
    /// Fallback for this entry (default: the store's).
    pub fallback: Option<Fallback>,
    /// Free metadata.
    pub metadata: BTreeMap<String, String>,
}

impl WriteRequest {
    /// A root entry of `kind` with `content`, in the default scope.
    pub fn new(writer: &str, kind: EntryKind, content: impl Into<Vec<u8>>) -> WriteRequest {
        WriteRequest {
            writer: writer.to_string(),
            scope: Scope::default(),
            kind,
            content: content.into(),
            source_hash: None,
            context_hash: None,
            parents: Vec::new(),
            attribution: "none".to_string(),
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
    pub fn with_parents(mut self, parents: Vec<Parent>, attribution: &str) -> Self {
        self.parents = parents;
        self.attribution = attribution.to_string();
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

impl<S: Store> Memory<S> {
    /// Writes one entry durably and returns its id.
    pub fn write(&self, req: WriteRequest) -> Result<Written, Error> {
        let mut out = self.write_batch(vec![req])?;
        out.pop()
            .ok_or_else(|| Error::Store("append returned nothing".into()))
    }

    /// Writes many entries in one transaction with one fsync (group commit). Entries may name
    /// earlier entries of the same batch as parents. All or nothing.
    pub fn write_batch(&self, reqs: Vec<WriteRequest>) -> Result<Vec<Written>, Error> {
        let registry = self.refresh_registry()?;
        let mut batch_labels: HashMap<EntryId, TrustLabel> = HashMap::new();
        let mut records = Vec::with_capacity(reqs.len());
        for req in reqs {
            let rec = self.prepare(&registry, req, &batch_labels)?;
            batch_labels.insert(rec.entry.id(), rec.entry.body().label);
            records.push(rec);
        }
        self.append(records)
    }

    /// Builds and signs one record: the label is computed from the parents' *effective* labels.
    fn prepare(
        &self,
        registry: &Registry,
        req: WriteRequest,
        batch: &HashMap<EntryId, TrustLabel>,
    ) -> Result<NewRecord, Error> {
        let key = self.keys.get(&req.writer)?;
        let principal = registry.get(&req.writer).ok_or_else(|| {
            Error::Invalid(format!(
                "principal `{}` is not registered (add it with `memlineage principal add`)",
                req.writer
            ))
        })?;
        let key_id = keys::key_id(&key.verifying_key());
        if principal.current_key().map(|k| k.key_id) != Some(key_id) {
            return Err(Error::Invalid(format!(
                "the loaded key of `{}` is not its current registered key (revoked or rotated)",
                req.writer
            )));
        }
        let class = principal.class;
        let mut parents = req.parents;
        EntryBody::normalise_parents(&mut parents);
        let mut edges = Vec::with_capacity(parents.len());
        for p in &parents {
            let label = match batch.get(&p.id) {
                Some(l) => *l,
                None => self.effective_label(&p.id)?,
            };
            edges.push(ParentEdge {
                label,
                weight: p.weight,
            });
        }
        let tau = req.tau.unwrap_or(self.settings.tau);
        let fallback = req.fallback.unwrap_or(self.settings.fallback);
        let label = compute_label(class, &edges, tau, fallback).label;
        let search_text = if req.kind.is_control() {
            None
        } else {
            std::str::from_utf8(&req.content).ok().map(str::to_string)
        };
        let body = EntryBody {
            scope: req.scope,
            writer: req.writer,
            key_id,
            kind: req.kind,
            content_hash: Hash256::of(&req.content),
            content_len: req.content.len() as u64,
            source_hash: req.source_hash,
            context_hash: req.context_hash,
            parents,
            attribution: req.attribution,
            tau,
            fallback,
            label,
            created_at_ms: self.clock.now_ms(),
            metadata: req.metadata,
        };
        let entry = SignedEntry::sign(body, &key)?;
        Ok(NewRecord {
            entry,
            content: req.content,
            search_text,
        })
    }

    /// The effective label of a stored entry: the signed label, raised by any distrust.
    pub fn effective_label(&self, id: &EntryId) -> Result<TrustLabel, Error> {
        let stored = self
            .store
            .entry_by_id(id)?
            .ok_or(Error::UnknownParent(*id))?;
        let entry = SignedEntry::from_leaf(&stored.leaf)?;
        Ok(stored
            .effective_label
            .map_or(entry.body().label, |e| e.max(entry.body().label)))
    }

    /// Appends prepared records; the guard re-validates them inside the transaction.
    pub(super) fn append(&self, records: Vec<NewRecord>) -> Result<Vec<Written>, Error> {
        let mut cache = self.lock_cache()?;
        let mut new_registry: Option<(Registry, u64)> = None;
        let mut guard = |reader: &dyn StoreRead, first: u64, recs: &[NewRecord]| {
            let mut registry = cache.registry.clone();
            let mut next = cache.next;
            catch_up(reader, &mut registry, &mut next)?;
            let mut in_batch: HashMap<EntryId, usize> = HashMap::new();
            let mut effects = Vec::new();
            for (offset, rec) in recs.iter().enumerate() {
                let index = first + offset as u64;
                let entry = &rec.entry;
                let body = entry.body();
                if body.content_hash != Hash256::of(&rec.content) {
                    return Err(Error::Invalid("content does not match its hash".into()));
                }
                for p in &body.parents {
                    if !in_batch.contains_key(&p.id) && reader.entry_by_id(&p.id)?.is_none() {
                        return Err(Error::UnknownParent(p.id));
                    }
                }
                if body.kind == EntryKind::Registry {
                    let change = RegistryChange::from_content(&rec.content)?;
                    verify_registry_signature(&registry, index, entry, &change)?;
                    registry.apply(index, entry, &change)?;
                    next = index + 1;
                } else {
                    let (principal, key) = registry.signer_at(&body.writer, &body.key_id, index)?;
                    entry.verify_signature(key)?;
                    if body.kind.is_control() && principal.class != TrustClass::Trusted {
                        return Err(Error::Invalid(format!(
                            "only trusted principals may write {} records",
                            body.kind
                        )));
                    }
                    effects.extend(control_effects(reader, rec, &registry)?);
                }
                in_batch.insert(entry.id(), offset);
            }
            new_registry = Some((registry, next));
            Ok(effects)
        };
        let first = self.store.append(&records, &mut guard)?;
        if let Some((registry, next)) = new_registry {
            cache.registry = registry;
            cache.next = next;
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
    reader: &dyn StoreRead,
    rec: &NewRecord,
    registry: &Registry,
) -> Result<Vec<Effect>, Error> {
    let entry = &rec.entry;
    match entry.body().kind {
        EntryKind::Tombstone => {
            let t = Tombstone::from_content(&rec.content)?;
            let target = reader
                .entry_by_id(&t.target)?
                .ok_or(Error::NotFound(t.target))?;
            let target_entry = SignedEntry::from_leaf(&target.leaf)?;
            if target_entry.body().kind.is_control() {
                return Err(Error::Invalid(
                    "control records (registry, tombstone, distrust, gate decision) cannot be forgotten"
                        .into(),
                ));
            }
            Ok(vec![Effect::Forget {
                target: t.target,
                tombstone: entry.id(),
                erase: t.erase,
            }])
        }
        EntryKind::Distrust => {
            let d = Distrust::from_content(&rec.content)?;
            super::control::distrust_effects(reader, &d, registry)
        }
        _ => Ok(Vec::new()),
    }
}
