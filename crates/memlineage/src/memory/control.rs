//! Control records: principal registry changes, forgetting (tombstones) and retroactive
//! distrust (beyond the paper).

use super::read::decode_stored;
use super::stage::Effect;
use super::{Memory, WriteRequest, Written};
use crate::error::{Error, InputError, IntegrityCheck};
use crate::store::{BackendRead, NewRecord};
use memlineage_core::entry::EntryKind;
use memlineage_core::label::{TrustClass, TrustLabel};
use memlineage_core::principal::Registry;
use memlineage_core::records::{Distrust, DistrustTarget, RegistryChange, Tombstone};
use memlineage_core::rule::{LabelRule, required_label};
use memlineage_core::trust::ParentEdge;
use memlineage_core::{EntryId, PrincipalName};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

impl Memory {
    /// The operator's name (the genesis principal).
    pub fn operator(&self) -> Result<PrincipalName, Error> {
        operator_of(&*self.refresh_registry()?)
    }

    /// Appends a registry change signed by `signer` (the operator), with the store's
    /// `settings` when it is the genesis record.
    pub(super) fn registry_change(
        &self,
        signer: &PrincipalName,
        change: RegistryChange,
        settings: Vec<(String, String)>,
    ) -> Result<Written, Error> {
        let req = WriteRequest::new(signer, EntryKind::Registry, change.to_content());
        // Registry records are signed directly (not through `draft`, whose registry checks
        // assume a registered writer): the guard verifies them inside the transaction.
        // The operator's current key (at genesis: the key just loaded, as the registry is
        // still empty).
        let current = self.refresh_registry().ok().and_then(|r| {
            r.get(signer.as_str())
                .and_then(|p| p.current_key())
                .map(|k| k.key_id)
        });
        let key = self.signing_key(signer, current)?;
        let content = req.content;
        let body = memlineage_core::entry::EntryBody {
            scope: req.scope,
            writer: req.writer.into(),
            key_id: key.key_id(),
            kind: EntryKind::Registry,
            content_hash: memlineage_core::Hash256::of(&content),
            content_len: content.len() as u64,
            source_hash: None,
            context_hash: None,
            parents: Vec::new(),
            attribution: req.attribution.as_str().to_string(),
            tau: self.settings.tau,
            fallback: self.settings.fallback,
            label: TrustLabel::Trusted,
            created_at_ms: self.clock.now_ms(),
            metadata: req.metadata,
        };
        let entry = key.sign_entry(body)?;
        let mut out = self.append(
            vec![NewRecord {
                entry,
                content,
                search_text: None,
            }],
            settings,
        )?;
        out.pop()
            .ok_or_else(|| Error::internal("append returned nothing"))
    }

    /// Registers a principal (signed by the operator, whose key must be loaded).
    pub fn add_principal(
        &self,
        name: &PrincipalName,
        class: TrustClass,
        key: &ed25519_dalek::VerifyingKey,
    ) -> Result<Written, Error> {
        let op = self.operator()?;
        self.registry_change(
            &op,
            RegistryChange::Add {
                name: name.to_string(),
                class,
                key: *key,
            },
            Vec::new(),
        )
    }

    /// Replaces a principal's key (signed by the operator with its current key). When the
    /// operator rotates its own key, the change is signed with the old key, and the keyring
    /// switches to the new one.
    pub fn rotate_principal(
        &self,
        name: &PrincipalName,
        new_key: &ed25519_dalek::SigningKey,
    ) -> Result<Written, Error> {
        let w = self.rotate_principal_to(name, &new_key.verifying_key())?;
        if self.keys.contains(name) {
            self.keys.insert(name, new_key.clone());
        }
        Ok(w)
    }

    /// Replaces a principal's key by a public key whose secret this process does not hold:
    /// a new key the external signer holds (`Memory::set_signer`), signed in by the operator.
    pub fn rotate_principal_to(
        &self,
        name: &PrincipalName,
        new_key: &ed25519_dalek::VerifyingKey,
    ) -> Result<Written, Error> {
        let op = self.operator()?;
        self.registry_change(
            &op,
            RegistryChange::Rotate {
                name: name.to_string(),
                key: *new_key,
            },
            Vec::new(),
        )
    }

    /// Revokes a principal: every entry it signs from now on is refused.
    pub fn revoke_principal(&self, name: &PrincipalName, reason: &str) -> Result<Written, Error> {
        let op = self.operator()?;
        self.registry_change(
            &op,
            RegistryChange::Revoke {
                name: name.to_string(),
                reason: reason.to_string(),
            },
            Vec::new(),
        )
    }

    /// Forgets an entry: appends a signed tombstone by `writer`; with `erase`, the content
    /// bytes are deleted too, while the leaf and every proof still verify. Retrieval never
    /// returns a forgotten entry. History is never rewritten.
    pub fn forget(
        &self,
        writer: &PrincipalName,
        target: &EntryId,
        erase: bool,
        reason: &str,
    ) -> Result<Written, Error> {
        let t = Tombstone {
            target: *target,
            erase,
            reason: reason.to_string(),
        };
        self.write(WriteRequest::new(
            writer,
            EntryKind::Tombstone,
            t.to_content(),
        ))
    }

    /// Retroactively distrusts an entry or a principal: the effective label of the target
    /// becomes `EXTERNAL` and every descendant's effective label is recomputed from its
    /// parents' effective labels, without rewriting history.
    pub fn distrust(
        &self,
        writer: &PrincipalName,
        target: DistrustTarget,
        reason: &str,
    ) -> Result<Written, Error> {
        let d = Distrust {
            target,
            reason: reason.to_string(),
        };
        self.write(WriteRequest::new(
            writer,
            EntryKind::Distrust,
            d.to_content(),
        ))
    }
}

/// Computes the label raises caused by a distrust record. Descendants are visited in log
/// order (a topological order of the DAG), and the walk stops where a label does not change.
/// Each descendant is relabelled with its own rule bounded by the store's (`store_rule`), as
/// at write time. Entries the principal writes after the record are labelled `EXTERNAL` when
/// they are written (see `write.rs`), so they need no effect here.
pub(super) fn distrust_effects(
    reader: &dyn BackendRead,
    d: &Distrust,
    registry: &Registry,
    store_rule: LabelRule,
) -> Result<Vec<Effect>, Error> {
    let seeds: Vec<(u64, EntryId)> = match &d.target {
        DistrustTarget::Entry(id) => {
            let e = reader.entry_by_id(id)?.ok_or(Error::NotFound(*id))?;
            vec![(e.index, e.id)]
        }
        DistrustTarget::Principal(name) => {
            if registry.get(name).is_none() {
                return Err(InputError::UnknownPrincipal(name.clone()).into());
            }
            // The writer index finds the candidates; each is checked against its signed body
            // (`verify` audits the index itself).
            let mut out = Vec::new();
            for index in reader.indices_by_writer(name)? {
                if let Some(e) = reader.entry_by_index(index)?
                    && decode_stored(&e)?.body().writer == *name
                {
                    out.push((e.index, e.id));
                }
            }
            out
        }
    };
    let mut raised: HashMap<EntryId, TrustLabel> = HashMap::new();
    let mut effects = Vec::new();
    let mut queue: BinaryHeap<Reverse<(u64, EntryId)>> = BinaryHeap::new();
    for (_, id) in seeds {
        raised.insert(id, TrustLabel::External);
        effects.push(Effect::RaiseLabel {
            id,
            label: TrustLabel::External,
        });
        for (child, _) in reader.children(&id)? {
            if let Some(c) = reader.entry_by_id(&child)? {
                queue.push(Reverse((c.index, child)));
            }
        }
    }
    let mut visited = std::collections::HashSet::new();
    while let Some(Reverse((_, id))) = queue.pop() {
        if !visited.insert(id) {
            continue;
        }
        let stored = reader.entry_by_id(&id)?.ok_or(Error::NotFound(id))?;
        let entry = decode_stored(&stored)?;
        let body = entry.body();
        // A seed (or an entry raised earlier in this walk) is never lowered by a later visit.
        let current = stored
            .effective_label
            .map_or(body.label, |l| l.max(body.label));
        let current = raised.get(&id).map_or(current, |r| current.max(*r));
        let class = registry
            .get(&body.writer)
            .map_or(TrustClass::External, |p| p.class);
        let mut edges = Vec::with_capacity(body.parents.len());
        for p in &body.parents {
            let label = match raised.get(&p.id) {
                Some(l) => *l,
                None => {
                    let ps = reader.entry_by_id(&p.id)?.ok_or(Error::NotFound(p.id))?;
                    let pe = decode_stored(&ps)?;
                    ps.effective_label
                        .map_or(pe.body().label, |l| l.max(pe.body().label))
                }
            };
            edges.push(ParentEdge {
                label,
                weight: p.weight,
            });
        }
        let new = required_label(
            class,
            &edges,
            LabelRule::new(body.tau, body.fallback),
            store_rule,
        );
        if new > current {
            raised.insert(id, new);
            effects.push(Effect::RaiseLabel { id, label: new });
            for (child, _) in reader.children(&id)? {
                if let Some(c) = reader.entry_by_id(&child)? {
                    queue.push(Reverse((c.index, child)));
                }
            }
        }
    }
    Ok(effects)
}

/// The operator of a replayed registry, as a name.
pub(super) fn operator_of(registry: &Registry) -> Result<PrincipalName, Error> {
    let op = registry.operator().ok_or_else(|| {
        Error::integrity(IntegrityCheck::Genesis, "the log has no genesis record")
    })?;
    PrincipalName::new(op)
        .map_err(|e| Error::integrity(IntegrityCheck::Genesis, format!("the operator's name: {e}")))
}
