//! The rollback window (issue 12, `docs/merkle-and-checkpoints.md` §"The rollback window"): a
//! revocation, a key rotation, a distrust record or a tombstone protects nothing against
//! someone who can put back an older copy of the store — until a checkpoint that covers it is
//! witnessed, or held by a client. Until then it is reported *at risk*.

use super::Memory;
use crate::error::{Error, IntegrityCheck, IntegrityError};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, SignedEntry};
use memlineage_core::records::{Distrust, DistrustTarget, RegistryChange, Tombstone};
use memlineage_core::witness::Policy;

/// A control record that a rollback could still undo.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AtRisk {
    /// Its log index.
    pub index: u64,
    /// Its id.
    pub id: EntryId,
    /// Its kind.
    pub kind: EntryKind,
    /// What it does, in words.
    pub what: String,
}

/// Which control records are not yet beyond a rollback's reach.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RollbackWindow {
    /// The size of the newest checkpoint whose cosignatures meet the policy, if any.
    pub witnessed_size: Option<u64>,
    /// The size of the checkpoint this handle's reader holds, if any.
    pub held_size: Option<u64>,
    /// Records at or after the larger of the two (every record, when neither exists).
    pub at_risk: Vec<AtRisk>,
}

impl RollbackWindow {
    /// The number of entries that are safe from a rollback: covered by a witnessed or held
    /// checkpoint.
    pub fn covered_size(&self) -> u64 {
        self.witnessed_size
            .unwrap_or(0)
            .max(self.held_size.unwrap_or(0))
    }
}

impl Memory {
    /// The revocations, key rotations, distrust records and tombstones that a rollback could
    /// still undo: those not covered by a checkpoint witnessed per `policy` (by default the
    /// reader's witness policy; with none, nothing counts as witnessed) nor by the checkpoint
    /// this handle's reader holds.
    pub fn rollback_window(&self, policy: Option<&Policy>) -> Result<RollbackWindow, Error> {
        let policy = policy
            .filter(|p| !p.requires_nothing())
            .or_else(|| self.required_witnesses());
        let witnessed_size = match policy {
            Some(p) => self.witnessed_checkpoint(p)?.map(|(cp, _)| cp.size),
            None => None,
        };
        let held_size = self.held_checkpoint().map(|h| h.size);
        let from = witnessed_size.unwrap_or(0).max(held_size.unwrap_or(0));
        let snap = self.backend.snapshot()?;
        let mut records = Vec::new();
        for kind in [
            EntryKind::Registry,
            EntryKind::Distrust,
            EntryKind::Tombstone,
        ] {
            records.extend(snap.control_records(kind, from)?);
        }
        records.sort_by_key(|r| r.index);
        let mut at_risk = Vec::new();
        for rec in records {
            let index = rec.index;
            // Read back from the store: a record that does not decode is an integrity error
            // (every stored control record passed the handle's checks when it was appended).
            let broken = |what: &str, e: &dyn std::fmt::Display| -> Error {
                IntegrityError::new(
                    IntegrityCheck::ControlRecord,
                    format!("the control record at index {index} {what}: {e}"),
                )
                .at(index)
                .into()
            };
            let entry =
                SignedEntry::from_leaf(&rec.leaf).map_err(|e| broken("does not decode", &e))?;
            let kind = entry.body().kind;
            let content = |e: &dyn std::fmt::Display| broken("has content that does not parse", e);
            let what = match kind {
                EntryKind::Registry => {
                    match RegistryChange::from_content(&rec.content).map_err(|e| content(&e))? {
                        RegistryChange::Revoke { name, .. } => format!("revocation of `{name}`"),
                        RegistryChange::Rotate { name, .. } => format!("key rotation of `{name}`"),
                        RegistryChange::Add { .. } => continue,
                    }
                }
                EntryKind::Distrust => match Distrust::from_content(&rec.content)
                    .map_err(|e| content(&e))?
                    .target
                {
                    DistrustTarget::Entry(id) => format!("distrust of entry {}", id.short()),
                    DistrustTarget::Principal(p) => format!("distrust of principal `{p}`"),
                },
                EntryKind::Tombstone => {
                    let t = Tombstone::from_content(&rec.content).map_err(|e| content(&e))?;
                    let verb = if t.erase { "erasure" } else { "tombstone" };
                    format!("{verb} of entry {}", t.target.short())
                }
                _ => continue,
            };
            at_risk.push(AtRisk {
                index: rec.index,
                id: entry.id(),
                kind,
                what,
            });
        }
        Ok(RollbackWindow {
            witnessed_size,
            held_size,
            at_risk,
        })
    }
}
