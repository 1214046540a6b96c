//! What the handle's own indexes (lexical, `lexical.rs`; vector, `semantic.rs`) hold of an
//! entry, and the scopes they filter by.

use crate::store::StoredEntry;
use memlineage_core::entry::{Scope, SignedEntry};
use std::collections::HashMap;

/// An entry's searchable text, with the decoded entry: its content, when it is live, not a
/// control record, and UTF-8 — the text the backends' full-text indexes get.
pub(super) fn searchable(stored: &StoredEntry) -> Option<(SignedEntry, &str)> {
    if stored.forgotten_by.is_some() {
        return None;
    }
    let entry = SignedEntry::from_leaf(&stored.leaf).ok()?;
    if entry.body().kind.is_control() {
        return None;
    }
    let text = std::str::from_utf8(stored.content.as_deref()?).ok()?;
    Some((entry, text))
}

/// The distinct signed scopes of indexed entries, each with a small id, so that an index keeps
/// one `u32` per entry and a search decides each scope once.
#[derive(Default)]
pub(super) struct Scopes {
    scopes: Vec<Scope>,
    ids: HashMap<String, u32>,
}

impl Scopes {
    /// The id of `scope`, added when new.
    pub(super) fn intern(&mut self, scope: &Scope) -> u32 {
        if let Some(id) = self.ids.get(scope.as_str()) {
            return *id;
        }
        let id = u32::try_from(self.scopes.len()).unwrap_or(u32::MAX);
        self.ids.insert(scope.as_str().to_string(), id);
        self.scopes.push(scope.clone());
        id
    }

    /// For each scope id, whether that scope lies within `scope` (the search's pre-filter).
    pub(super) fn within(&self, scope: &Scope) -> Vec<bool> {
        self.scopes.iter().map(|s| scope.contains(s)).collect()
    }

    /// Every scope, by id.
    pub(super) fn all(&self) -> &[Scope] {
        &self.scopes
    }

    /// Scopes whose ids are their positions in `scopes` (as [`Scopes::all`] gave them); a
    /// scope given twice keeps its first id.
    pub(super) fn from_list(scopes: Vec<Scope>) -> Scopes {
        let mut out = Scopes::default();
        for s in scopes {
            let id = u32::try_from(out.scopes.len()).unwrap_or(u32::MAX);
            out.ids.entry(s.as_str().to_string()).or_insert(id);
            out.scopes.push(s);
        }
        out
    }

    /// Bytes held, approximately.
    pub(super) fn bytes(&self) -> usize {
        self.scopes.iter().map(|s| s.as_str().len() * 2 + 64).sum()
    }
}
