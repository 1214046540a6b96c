//! The canonical bytes of an entry body, written directly.
//!
//! [`EntryBody::to_value`] builds a generic CBOR tree that [`crate::canonical::encode`] then
//! sorts and writes: right for every record, but on the write hot path (every entry is
//! encoded once to be signed) the tree's allocations and the sort cost more than the bytes.
//! An entry body has a fixed set of keys, so their canonical order (RFC 8949 §4.2.1:
//! bytewise order of the encoded keys, which for text keys is shorter first, then bytewise)
//! is known in advance, and only the metadata map needs sorting. The result is byte for byte
//! `canonical::encode(&body.to_value())`: the known-answer tests in `tests/entry_kat.rs`
//! and the property test below compare the two.

use super::{EntryBody, FORMAT_VERSION};
use crate::hash::Hash256;

/// The body's keys in canonical order (RFC 8949 §4.2.1): by encoded length, then bytewise.
/// Kept beside the writer so that a test can check the order against the generic encoder.
pub(super) const KEY_ORDER: [&str; 16] = [
    "v", "ctx", "key", "len", "src", "tau", "attr", "kind", "meta", "time", "label", "scope",
    "writer", "content", "parents", "fallback",
];

impl EntryBody {
    /// The canonical CBOR encoding of the body: what is signed, and hashed into the entry id.
    ///
    /// Equal to `canonical::encode(&self.to_value())` for every body, without building the
    /// value tree. Does not validate the body (see [`EntryBody::validate`]).
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = Out(Vec::with_capacity(self.encoded_len_hint()));
        out.head(MAP, KEY_ORDER.len() as u64);
        out.text("v").uint(FORMAT_VERSION);
        out.text("ctx").opt_hash(self.context_hash);
        out.text("key").bytes(&self.key_id.0);
        out.text("len").uint(self.content_len);
        out.text("src").opt_hash(self.source_hash);
        out.text("tau").uint(u64::from(self.tau.bp()));
        out.text("attr").text(&self.attribution);
        out.text("kind").text(self.kind.as_str());
        out.text("meta").head(MAP, self.metadata.len() as u64);
        // A `BTreeMap` orders keys as strings; canonical order is by encoded key, which for
        // text is length first (the head grows with the length), then bytewise.
        let mut meta: Vec<(&String, &String)> = self.metadata.iter().collect();
        meta.sort_by(|(a, _), (b, _)| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
        for (k, v) in meta {
            out.text(k).text(v);
        }
        out.text("time").uint(self.created_at_ms);
        out.text("label").text(self.label.as_str());
        out.text("scope").text(self.scope.as_str());
        out.text("writer").text(&self.writer);
        out.text("content").bytes(&self.content_hash.0);
        out.text("parents").head(ARRAY, self.parents.len() as u64);
        for p in &self.parents {
            out.head(ARRAY, 2)
                .bytes(p.id.as_bytes())
                .uint(u64::from(p.weight.bp()));
        }
        out.text("fallback").text(self.fallback.as_str());
        out.0
    }

    /// An upper estimate of the encoded size, so that the output is allocated once.
    fn encoded_len_hint(&self) -> usize {
        let meta: usize = self
            .metadata
            .iter()
            .map(|(k, v)| k.len() + v.len() + 18)
            .sum();
        256 + self.scope.as_str().len()
            + self.writer.len()
            + self.attribution.len()
            + self.parents.len() * 48
            + meta
    }
}

/// RFC 8949 §3.1 major types used by entry bodies.
const UINT: u8 = 0;
const BYTES: u8 = 2;
const TEXT: u8 = 3;
const ARRAY: u8 = 4;
const MAP: u8 = 5;
/// The simple value `null` (RFC 8949 §3.3).
const NULL: u8 = 0xf6;

/// An output buffer that writes CBOR items in the preferred (shortest) serialization.
struct Out(Vec<u8>);

impl Out {
    /// A head: major type and argument in the shortest form (RFC 8949 §4.2.1, first bullet).
    fn head(&mut self, major: u8, n: u64) -> &mut Self {
        let m = major << 5;
        match n {
            0..=23 => self.0.push(m | n as u8),
            24..=0xff => self.0.extend_from_slice(&[m | 24, n as u8]),
            0x100..=0xffff => {
                self.0.push(m | 25);
                self.0.extend_from_slice(&(n as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                self.0.push(m | 26);
                self.0.extend_from_slice(&(n as u32).to_be_bytes());
            }
            _ => {
                self.0.push(m | 27);
                self.0.extend_from_slice(&n.to_be_bytes());
            }
        }
        self
    }

    fn uint(&mut self, n: u64) -> &mut Self {
        self.head(UINT, n)
    }

    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.head(BYTES, b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }

    fn text(&mut self, s: &str) -> &mut Self {
        self.head(TEXT, s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
        self
    }

    fn opt_hash(&mut self, h: Option<Hash256>) -> &mut Self {
        match h {
            Some(h) => self.bytes(&h.0),
            None => {
                self.0.push(NULL);
                self
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KEY_ORDER;
    use crate::canonical::{self, Value};
    use crate::entry::{EntryBody, EntryKind, Parent, Scope};
    use crate::hash::{EntryId, Hash256};
    use crate::label::{Fallback, TrustLabel, Weight};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_key_order_is_the_canonical_order() {
        let map = Value::Map(
            KEY_ORDER
                .iter()
                .rev()
                .map(|k| (Value::Text((*k).to_string()), Value::Null))
                .collect(),
        );
        let generic = canonical::encode(&map).expect("encodes");
        let mut direct = vec![0xb0]; // map(16)
        for k in KEY_ORDER {
            direct.push(0x60 + k.len() as u8);
            direct.extend_from_slice(k.as_bytes());
            direct.push(0xf6);
        }
        assert_eq!(generic, direct);
    }

    fn hash() -> impl Strategy<Value = Hash256> {
        any::<[u8; 32]>().prop_map(Hash256)
    }

    fn weight() -> impl Strategy<Value = Weight> {
        (0u16..=10_000).prop_map(|bp| Weight::from_bp(bp).unwrap_or(Weight::ONE))
    }

    prop_compose! {
        fn body()(
            scope in "[a-z]{1,8}(/[a-z0-9]{1,8}){0,3}",
            writer in "[a-z]{1,12}",
            key in hash(),
            kind in prop::sample::select(vec![
                EntryKind::UserInput, EntryKind::ToolOutput, EntryKind::Derived, EntryKind::Observation,
            ]),
            content in hash(),
            len in any::<u64>(),
            src in prop::option::of(hash()),
            ctx in prop::option::of(hash()),
            parents in prop::collection::vec((hash(), weight()), 0..6),
            attribution in "[a-z-]{0,20}",
            tau in weight(),
            fallback in prop::sample::select(vec![Fallback::Strict, Fallback::Permissive]),
            label in prop::sample::select(vec![
                TrustLabel::Trusted, TrustLabel::DerivedTrusted,
                TrustLabel::DerivedUntrusted, TrustLabel::External,
            ]),
            time in any::<u64>(),
            metadata in prop::collection::btree_map("[ -~]{0,70}", "\\PC{0,30}", 0..8),
        ) -> EntryBody {
            let mut parents: Vec<Parent> = parents
                .into_iter()
                .map(|(id, weight)| Parent { id: EntryId(id), weight })
                .collect();
            EntryBody::normalise_parents(&mut parents);
            EntryBody {
                scope: Scope::new(&scope).expect("the pattern is a valid scope"),
                writer,
                key_id: key,
                kind,
                content_hash: content,
                content_len: len,
                source_hash: src,
                context_hash: ctx,
                parents,
                attribution,
                tau,
                fallback,
                label,
                created_at_ms: time,
                metadata: metadata.into_iter().collect::<BTreeMap<_, _>>(),
            }
        }
    }

    proptest! {
        #[test]
        fn direct_bytes_equal_the_generic_encoding(body in body()) {
            let generic = canonical::encode(&body.to_value()).expect("encodes");
            prop_assert_eq!(body.canonical_bytes(), generic);
        }
    }
}
