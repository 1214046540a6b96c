//! The direct decoding of a log leaf: straight from the bytes to a [`SignedEntry`], without
//! the generic [`Value`](crate::canonical::Value) tree and without re-encoding the body.
//!
//! The generic path (`canonical::decode`, then the field readers, then `canonical::encode` of
//! the body to get the signed bytes) copies every string into the tree and back out, and was
//! most of a leaf's decoding time, which a retrieval pays for every returned entry and every
//! parent. Every valid leaf has one shape (`docs/formats.md`, "Log leaf" and "Entry body"): a
//! map of `sig` and `body` in that order, the body a map of sixteen fields in canonical key
//! order. This decoder reads exactly that shape, with the same checks: every head in its
//! shortest form (RFC 8949 §4.2.1), definite lengths, metadata keys strictly increasing in the
//! bytewise order of their encodings (§4.2.1, so no duplicate, §5.6), valid UTF-8, no trailing
//! bytes, and then the same field parsers and [`EntryBody::validate`] as the generic path.
//!
//! It never reports an error itself: for anything else it answers `None`, and
//! [`SignedEntry::from_leaf`] then runs the generic decoder, so every refused leaf is refused
//! with exactly the error it always was. What it accepts the generic decoder accepts with an
//! equal entry, and every leaf the generic decoder accepts this one accepts
//! (`fuzz_checks::entry_leaf` checks both on every input the fuzz targets and property tests
//! make). Because strict decoding means `encode(decode(b)) == b`, the signed body bytes are
//! the body's slice of the leaf itself.

use super::{EntryBody, EntryKind, FORMAT_VERSION, Parent, Scope, SignedEntry, limits};
use crate::hash::{EntryId, Hash256};
use crate::keys;
use crate::label::{Fallback, TrustLabel, Weight};
use std::collections::BTreeMap;

/// The leaf up to the signature bytes: map(2), "sig", bytes(64) — "sig" sorts before "body"
/// because the shorter encoding sorts first (RFC 8949 §4.2.1).
const LEAF_HEAD: [u8; 7] = [0xa2, 0x63, b's', b'i', b'g', 0x58, 0x40];
/// Between the signature and the body: the key "body".
const BODY_KEY: [u8; 5] = [0x64, b'b', b'o', b'd', b'y'];
/// Where the body starts in every valid leaf.
const BODY_START: usize = LEAF_HEAD.len() + 64 + BODY_KEY.len();
/// The body's head: a map of sixteen fields.
const BODY_HEAD: u8 = 0xb0;

/// The entry the leaf encodes, or `None` when it is not a valid leaf in its one canonical form
/// (the caller then asks the generic decoder, for the error).
pub(crate) fn decode_leaf(leaf: &[u8]) -> Option<SignedEntry> {
    let mut c = Cursor { b: leaf, pos: 0 };
    c.literal(&LEAF_HEAD)?;
    let signature = keys::signature_from_bytes(c.take(64)?).ok()?;
    c.literal(&BODY_KEY)?;
    let body = body(&mut c)?;
    if c.pos != leaf.len() {
        return None;
    }
    let body_bytes = leaf.get(BODY_START..)?.to_vec();
    let id = EntryId(Hash256::of(&body_bytes));
    Some(SignedEntry::from_parts(body, body_bytes, signature, id))
}

/// The sixteen fields in canonical key order (shorter keys first, then bytewise).
fn body(c: &mut Cursor<'_>) -> Option<EntryBody> {
    c.literal(&[BODY_HEAD])?;
    c.key("v")?;
    if c.uint()? != FORMAT_VERSION {
        return None;
    }
    c.key("ctx")?;
    let context_hash = c.opt_hash()?;
    c.key("key")?;
    let key_id = c.hash()?;
    c.key("len")?;
    let content_len = c.uint()?;
    c.key("src")?;
    let source_hash = c.opt_hash()?;
    c.key("tau")?;
    let tau = weight(c.uint()?)?;
    c.key("attr")?;
    let attribution = c.text()?.to_string();
    c.key("kind")?;
    let kind = c.text()?.parse::<EntryKind>().ok()?;
    c.key("meta")?;
    let metadata = meta(c)?;
    c.key("time")?;
    let created_at_ms = c.uint()?;
    c.key("label")?;
    let label = c.text()?.parse::<TrustLabel>().ok()?;
    c.key("scope")?;
    let scope = Scope::new(c.text()?).ok()?;
    c.key("writer")?;
    let writer = c.text()?.to_string();
    c.key("content")?;
    let content_hash = c.hash()?;
    c.key("parents")?;
    let parents = parents(c)?;
    c.key("fallback")?;
    let fallback = c.text()?.parse::<Fallback>().ok()?;
    let body = EntryBody {
        scope,
        writer,
        key_id,
        kind,
        content_hash,
        content_len,
        source_hash,
        context_hash,
        parents,
        attribution,
        tau,
        fallback,
        label,
        created_at_ms,
        metadata,
    };
    body.validate().ok()?;
    Some(body)
}

fn weight(n: u64) -> Option<Weight> {
    u16::try_from(n).ok().and_then(Weight::from_bp)
}

/// `[[id, weight], …]`: ids of 32 bytes, weights at most 10 000 basis points.
fn parents(c: &mut Cursor<'_>) -> Option<Vec<Parent>> {
    let count = c.head(4)?;
    if count > limits::MAX_PARENTS as u64 {
        return None;
    }
    let mut out = Vec::with_capacity(usize::try_from(count).ok()?);
    for _ in 0..count {
        c.literal(&[0x82])?;
        let id = EntryId(c.hash()?);
        let weight = weight(c.uint()?)?;
        out.push(Parent { id, weight });
    }
    Some(out)
}

/// A map of text to text, its keys strictly increasing in the bytewise order of their
/// encodings. The count is not trusted for allocation: each pair consumes input or fails.
fn meta(c: &mut Cursor<'_>) -> Option<BTreeMap<String, String>> {
    let count = c.head(5)?;
    let mut out = BTreeMap::new();
    let mut previous: &[u8] = &[];
    for _ in 0..count {
        let start = c.pos;
        let key = c.text()?;
        let encoded = c.b.get(start..c.pos)?;
        if !out.is_empty() && previous >= encoded {
            return None;
        }
        previous = encoded;
        let value = c.text()?;
        out.insert(key.to_string(), value.to_string());
    }
    Some(out)
}

/// A position in the leaf. Every read checks the bounds and answers `None` past the end.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    /// Exactly these bytes next.
    fn literal(&mut self, expected: &[u8]) -> Option<()> {
        (self.take(expected.len())? == expected).then_some(())
    }

    /// The argument of a head of major type `major`, which must be in its shortest form
    /// (RFC 8949 §4.2.1); additional information 28–31 (reserved, indefinite) is refused.
    fn head(&mut self, major: u8) -> Option<u64> {
        let initial = *self.take(1)?.first()?;
        if initial >> 5 != major {
            return None;
        }
        let (len, least) = match initial & 0x1f {
            info @ 0..=23 => return Some(u64::from(info)),
            24 => (1, 24),
            25 => (2, 0x100),
            26 => (4, 0x1_0000),
            27 => (8, 0x1_0000_0000),
            _ => return None,
        };
        let arg = self
            .take(len)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        (arg >= least).then_some(arg)
    }

    fn uint(&mut self) -> Option<u64> {
        self.head(0)
    }

    fn text(&mut self) -> Option<&'a str> {
        let len = usize::try_from(self.head(3)?).ok()?;
        std::str::from_utf8(self.take(len)?).ok()
    }

    /// The text key `name` (all keys here are shorter than 24 bytes: a one-byte head).
    fn key(&mut self, name: &str) -> Option<()> {
        let len = u8::try_from(name.len()).ok().filter(|l| *l < 24)?;
        self.literal(&[0x60 | len])?;
        self.literal(name.as_bytes())
    }

    /// A byte string of 32 bytes: head `0x58 0x20`, the shortest for 32.
    fn hash(&mut self) -> Option<Hash256> {
        self.literal(&[0x58, 0x20])?;
        Hash256::from_slice(self.take(32)?)
    }

    /// A hash or `null`.
    fn opt_hash(&mut self) -> Option<Option<Hash256>> {
        if self.b.get(self.pos) == Some(&0xf6) {
            self.pos += 1;
            return Some(None);
        }
        self.hash().map(Some)
    }
}
