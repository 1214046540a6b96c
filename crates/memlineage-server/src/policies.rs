//! Gate policies: the ones the operator named at start-up (`--policy NAME=FILE`), and inline
//! policies sent with a request, parsed once and kept by the SHA-256 of their text (a policy
//! with regular expressions is not recompiled on every call).

use memlineage_core::gate::Policy;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Inline policies kept at most.
const INLINE_KEPT: usize = 64;

/// Named and recently used policies.
pub struct Policies {
    named: HashMap<String, Arc<Policy>>,
    inline: Mutex<HashMap<[u8; 32], Arc<Policy>>>,
}

impl Policies {
    /// Parses the named policies (an error names the policy).
    pub fn new(named: &[(String, String)]) -> Result<Policies, String> {
        let mut map = HashMap::new();
        for (name, text) in named {
            let p = Policy::parse(text).map_err(|e| format!("policy `{name}`: {e}"))?;
            map.insert(name.clone(), Arc::new(p));
        }
        Ok(Policies {
            named: map,
            inline: Mutex::new(HashMap::new()),
        })
    }

    /// A named policy.
    pub fn named(&self, name: &str) -> Option<Arc<Policy>> {
        self.named.get(name).cloned()
    }

    /// The names of the named policies, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.named.keys().cloned().collect();
        v.sort();
        v
    }

    /// An inline policy, parsed (or taken from the cache).
    pub fn inline(&self, text: &str) -> Result<Arc<Policy>, String> {
        let key: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        if let Some(p) = self.inline.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(p);
        }
        let p = Arc::new(Policy::parse(text).map_err(|e| format!("policy: {e}"))?);
        if let Ok(mut m) = self.inline.lock() {
            if m.len() >= INLINE_KEPT {
                m.clear();
            }
            m.insert(key, Arc::clone(&p));
        }
        Ok(p)
    }
}
