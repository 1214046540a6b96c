//! The signed scope of each entry the service has read, remembered so that checking a token's
//! scopes against the entries a request names (a gate's context, a write's parents, a forget's
//! target) reads the store once per entry, not once per request.
//!
//! An entry's scope is part of its signed body and the log is append-only, so a remembered
//! scope never goes stale: an entry does not change scope, and one that was in the log stays
//! there (a store rolled back under the service is caught by the reads that follow, which
//! verify what they read). Only scopes of entries that were read successfully are remembered;
//! an id that is not in the log is looked up again every time.

use memlineage_core::EntryId;
use memlineage_core::entry::Scope;
use std::collections::HashMap;
use std::sync::Mutex;

/// Entries remembered at most; the table is emptied when it is full (the next requests read
/// their entries again), which bounds the memory at a few MiB whatever the store's size.
const MAX_REMEMBERED: usize = 65_536;

/// Entry id → signed scope, bounded.
#[derive(Default)]
pub struct EntryScopes {
    map: Mutex<HashMap<EntryId, Scope>>,
}

impl EntryScopes {
    /// The scope of `id`, when remembered.
    pub fn get(&self, id: &EntryId) -> Option<Scope> {
        self.map.lock().ok()?.get(id).cloned()
    }

    /// Remembers the scope of an entry read from the log.
    pub fn remember(&self, id: EntryId, scope: &Scope) {
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= MAX_REMEMBERED && !map.contains_key(&id) {
                map.clear();
            }
            map.insert(id, scope.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::Hash256;

    fn len(scopes: &EntryScopes) -> usize {
        scopes.map.lock().unwrap().len()
    }

    fn id(i: u64) -> EntryId {
        EntryId(Hash256::of(&i.to_be_bytes()))
    }

    #[test]
    fn remembers_and_stays_bounded() {
        let scopes = EntryScopes::default();
        let a = Scope::new("tenant-a").unwrap();
        assert_eq!(scopes.get(&id(0)), None);
        scopes.remember(id(0), &a);
        assert_eq!(scopes.get(&id(0)), Some(a.clone()));
        for i in 1..(MAX_REMEMBERED as u64 + 10) {
            scopes.remember(id(i), &a);
            assert!(len(&scopes) <= MAX_REMEMBERED);
        }
        // Emptied once when full, then filled again.
        assert_eq!(len(&scopes), 10);
        assert_eq!(scopes.get(&id(MAX_REMEMBERED as u64 + 9)), Some(a));
        assert_eq!(scopes.get(&id(0)), None);
    }
}
