//! Serde helpers: entry ids as 64 lowercase hex digits in gate decisions.

use crate::hash::EntryId;
use serde::{Deserialize, Deserializer, Serializer};

fn parse<'de, D: Deserializer<'de>>(s: &str) -> Result<EntryId, D::Error> {
    s.parse().map_err(serde::de::Error::custom)
}

/// One id.
pub(crate) mod one {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(id: &EntryId, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(id.hex().as_str())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<EntryId, D::Error> {
        let s = String::deserialize(d)?;
        parse::<D>(&s)
    }
}

/// An optional id (`null` when absent).
pub(crate) mod opt {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(id: &Option<EntryId>, s: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => s.serialize_some(id.hex().as_str()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<EntryId>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| parse::<D>(&s))
            .transpose()
    }
}

/// A list of ids.
pub(crate) mod list {
    use super::*;
    use serde::ser::SerializeSeq;

    pub(crate) fn serialize<S: Serializer>(ids: &[EntryId], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(ids.len()))?;
        for id in ids {
            seq.serialize_element(id.hex().as_str())?;
        }
        seq.end()
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<EntryId>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|s| parse::<D>(s))
            .collect()
    }
}
