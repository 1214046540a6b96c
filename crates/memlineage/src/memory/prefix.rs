//! Entry ids as people type them: a full id, or a unique prefix, resolved by one indexed range
//! read (`BackendRead::ids_from`: the ids at or above the prefix padded with zeros, two at most).

use super::Memory;
use crate::error::{Error, IdPrefixError, IntegrityCheck};
use memlineage_core::EntryId;
use memlineage_core::entry::{Scope, SignedEntry};
use std::fmt;
use std::str::FromStr;

/// An entry id or a prefix of one: 8 to 64 hexadecimal characters (any case; kept lowercase).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdPrefix(String);

impl IdPrefix {
    /// The shortest prefix accepted.
    pub const MIN_LEN: usize = 8;

    /// The prefix, lowercase.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The full id, when all 64 characters are given.
    pub fn full(&self) -> Option<EntryId> {
        (self.0.len() == 64).then(|| self.0.parse().ok()).flatten()
    }

    /// The smallest id with this prefix.
    fn lowest(&self) -> Option<EntryId> {
        let mut hex = self.0.clone();
        hex.extend(std::iter::repeat_n('0', 64 - hex.len()));
        hex.parse().ok()
    }
}

impl FromStr for IdPrefix {
    type Err = IdPrefixError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        if lower.len() < IdPrefix::MIN_LEN
            || lower.len() > 64
            || !lower.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(IdPrefixError::Malformed(s.chars().take(80).collect()));
        }
        Ok(IdPrefix(lower))
    }
}

impl fmt::Display for IdPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<EntryId> for IdPrefix {
    fn from(id: EntryId) -> IdPrefix {
        IdPrefix(id.to_hex())
    }
}

impl Memory {
    /// The entry id `prefix` names: itself when it is a full id (whether or not such an entry
    /// exists), else the one entry whose id starts with it. No match is
    /// [`IdPrefixError::NoMatch`], two or more [`IdPrefixError::Ambiguous`].
    pub fn resolve_prefix(&self, prefix: &IdPrefix) -> Result<EntryId, Error> {
        if let Some(id) = prefix.full() {
            return Ok(id);
        }
        let lowest = prefix
            .lowest()
            .ok_or_else(|| IdPrefixError::Malformed(prefix.0.clone()))?;
        let found: Vec<EntryId> = self
            .reads()
            .ids_from(&lowest, 2)?
            .into_iter()
            .filter(|id| id.to_hex().starts_with(&prefix.0))
            .collect();
        the_one(prefix, &found)
    }

    /// [`Memory::resolve_prefix`] among the entries a caller may see: only entries whose
    /// scope `visible` accepts can match, so an answer — one id, "no match" or "ambiguous" —
    /// says nothing about entries outside the caller's scopes (the HTTP service resolves
    /// prefixes in routes this way, `docs/service.md`). A full id is returned as it is: the
    /// caller checks that entry's scope when it reads it.
    ///
    /// Ids are read in pages by one indexed range read each; the cost grows with the number
    /// of ids sharing the prefix (one in 2^32 for an 8-character prefix), each of which is
    /// looked up once for its scope.
    pub fn resolve_prefix_visible(
        &self,
        prefix: &IdPrefix,
        visible: &dyn Fn(&Scope) -> bool,
    ) -> Result<EntryId, Error> {
        if let Some(id) = prefix.full() {
            return Ok(id);
        }
        let mut from = prefix
            .lowest()
            .ok_or_else(|| IdPrefixError::Malformed(prefix.0.clone()))?;
        let mut found: Vec<EntryId> = Vec::with_capacity(2);
        let mut last: Option<EntryId> = None;
        'pages: loop {
            let page = self.reads().ids_from(&from, PREFIX_PAGE)?;
            let full_page = page.len() == PREFIX_PAGE;
            for id in page {
                if last.is_some_and(|l| id <= l) {
                    continue;
                }
                last = Some(id);
                from = id;
                if !id.to_hex().starts_with(&prefix.0) {
                    break 'pages;
                }
                let Some(stored) = self.reads().entry_by_id(&id)? else {
                    continue;
                };
                let entry = SignedEntry::from_leaf(&stored.leaf).map_err(|e| {
                    Error::integrity(
                        IntegrityCheck::LeafDecode,
                        format!("entry {id}: the stored leaf does not decode: {e}"),
                    )
                })?;
                if visible(&entry.body().scope) {
                    found.push(id);
                    if found.len() == 2 {
                        break 'pages;
                    }
                }
            }
            if !full_page {
                break;
            }
        }
        the_one(prefix, &found)
    }
}

/// The one id of `found` (the matches of `prefix`, in id order), or why there is not one.
fn the_one(prefix: &IdPrefix, found: &[EntryId]) -> Result<EntryId, Error> {
    match found {
        [id] => Ok(*id),
        [] => Err(IdPrefixError::NoMatch {
            prefix: prefix.0.clone(),
        }
        .into()),
        [first, second, ..] => Err(IdPrefixError::Ambiguous {
            prefix: prefix.0.clone(),
            first: *first,
            second: *second,
        }
        .into()),
    }
}

/// Ids read per range read while resolving a prefix among visible entries.
const PREFIX_PAGE: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_8_to_64_hex_characters() {
        assert_eq!("ABCDEF01".parse::<IdPrefix>().unwrap().as_str(), "abcdef01");
        for bad in ["abc", "zzzzzzzz", &"a".repeat(65), ""] {
            assert!(bad.parse::<IdPrefix>().is_err(), "{bad:?}");
        }
        let id = EntryId(memlineage_core::Hash256::of(b"x"));
        let p = IdPrefix::from(id);
        assert_eq!(p.full(), Some(id));
        assert_eq!(p.to_string().parse::<IdPrefix>().unwrap(), p);
        let short: IdPrefix = id.to_hex()[..9].parse().unwrap();
        assert_eq!(short.full(), None);
        let low = short.lowest().unwrap().to_hex();
        assert!(low.starts_with(short.as_str()) && low.ends_with(&"0".repeat(55)));
    }
}
