//! Attribution over stored entries: fetch the parents' verified content, run an attributor,
//! return the weighted parents for a write (`memlineage write --attribution ALGO`).

use super::Memory;
use crate::attribution::{AttributedParents, Attributor, ParentText};
use crate::error::{Error, InputError, IntegrityCheck, IntegrityError};
use memlineage_core::entry::Parent;
use memlineage_core::label::Weight;
use memlineage_core::{AttributionName, EntryId};
use std::collections::HashMap;

impl Memory {
    /// Weighs `parent_ids` as parents of `child` with `attributor`.
    ///
    /// The parents' content is fetched through verified retrieval ([`Memory::recall`]): a parent
    /// that fails verification is an error ([`Error::Integrity`]) and is never shown to the
    /// attributor; a parent that is not in the log is [`Error::UnknownParent`]. A forgotten or
    /// erased parent cannot be read, so it gets weight 1 without being attributed (fail closed:
    /// its taint still propagates). An attributor error is [`Error::Invalid`].
    pub fn attribute_parents(
        &self,
        attributor: &dyn Attributor,
        child: &str,
        parent_ids: &[EntryId],
    ) -> Result<Vec<Parent>, Error> {
        self.attribute_parents_detailed(attributor, child, parent_ids)
            .map(|a| a.parents)
    }

    /// [`Memory::attribute_parents`], with the algorithm's name and its fallback status.
    pub fn attribute_parents_detailed(
        &self,
        attributor: &dyn Attributor,
        child: &str,
        parent_ids: &[EntryId],
    ) -> Result<AttributedParents, Error> {
        let mut unique: Vec<EntryId> = Vec::with_capacity(parent_ids.len());
        for id in parent_ids {
            if !unique.contains(id) {
                unique.push(*id);
            }
        }
        let retrieval = self.recall(&unique).map_err(|e| match e {
            Error::NotFound(id) => Error::UnknownParent(id),
            e => e,
        })?;
        if let Some(d) = retrieval.dropped.first() {
            return Err(IntegrityError::new(
                IntegrityCheck::Verification,
                format!(
                    "parent {} failed verification and cannot be attributed: {}",
                    d.id, d.reason
                ),
            )
            .at(d.index)
            .entry(d.id)
            .into());
        }
        let texts: HashMap<EntryId, String> = retrieval
            .entries
            .iter()
            .filter_map(|v| v.text().map(|t| (v.entry.id(), t)))
            .collect();
        let readable: Vec<ParentText<'_>> = unique
            .iter()
            .filter_map(|id| texts.get(id).map(|t| ParentText { id: *id, text: t }))
            .collect();
        let unread: Vec<EntryId> = unique
            .iter()
            .filter(|id| !texts.contains_key(id))
            .copied()
            .collect();
        let name = attributor.name();
        let attribution = AttributionName::new(&name).map_err(|e| InputError::Attribution {
            name: name.clone(),
            problem: format!("cannot be recorded: {e}"),
        })?;
        let result = attributor
            .attribute_detailed(child, &readable)
            .map_err(|e| InputError::Attribution {
                name: name.clone(),
                problem: format!("failed: {e}"),
            })?;
        if result.weights.len() != readable.len() {
            return Err(InputError::Attribution {
                name,
                problem: format!(
                    "returned {} weights for {} parents",
                    result.weights.len(),
                    readable.len()
                ),
            }
            .into());
        }
        let by_id: HashMap<EntryId, Weight> =
            readable.iter().map(|p| p.id).zip(result.weights).collect();
        let parents = parent_ids
            .iter()
            .map(|id| Parent {
                id: *id,
                weight: by_id.get(id).copied().unwrap_or(Weight::ONE),
            })
            .collect();
        // The answer's own name when it has one (the judge mode that answered).
        let answered_as = match result.name {
            Some(own) => {
                AttributionName::try_from(own.clone()).map_err(|e| InputError::Attribution {
                    name: own,
                    problem: format!("cannot be recorded: {e}"),
                })?
            }
            None => attribution,
        };
        Ok(AttributedParents {
            parents,
            attribution: answered_as,
            fell_back: result.fell_back,
            unread,
        })
    }
}
