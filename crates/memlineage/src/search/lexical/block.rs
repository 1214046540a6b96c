//! Posting blocks: a term's occurrences in up to [`BLOCK`] documents, in document order, with
//! the two facts its score bound needs (largest term frequency, shortest document).
//!
//! Postings are stored as LEB128 varints — the gap to the previous document (the first one
//! relative to [`Block::first`]), the term frequency, then the document's length in terms — so
//! a block of a common term takes about three bytes per posting, and one encoding serves
//! memory and a store's blob alike. The length travels with the posting so that the top-k can
//! score a candidate from the postings alone, without a random read of the document table
//! (issue 17: that read was a quarter of a search over 10^6 documents).

/// Postings per block (as in Lucene and tantivy: large enough that headers are few, small
/// enough that a skipped block saves real work).
pub const BLOCK: usize = 128;

/// One decoded posting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Posting {
    /// The document.
    pub doc: u64,
    /// The term's frequency in it.
    pub tf: u32,
    /// The document's length in terms.
    pub len: u32,
}

/// One block of a posting list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// The first document.
    pub first: u64,
    /// The last document.
    pub last: u64,
    /// Postings in the block.
    pub count: u32,
    /// The largest term frequency in the block.
    pub max_tf: u32,
    /// The shortest document (in terms) in the block.
    pub min_len: u32,
    /// `(gap, tf, len)` varint triples.
    pub bytes: Vec<u8>,
}

impl Block {
    /// A block of one posting.
    pub fn new(doc: u64, tf: u32, len: u32) -> Block {
        let mut b = Block {
            first: doc,
            last: doc,
            count: 0,
            max_tf: tf,
            min_len: len,
            bytes: Vec::with_capacity(16),
        };
        b.push_encoded(0, tf, len);
        b
    }

    /// Whether the block has room for another posting.
    pub fn is_full(&self) -> bool {
        self.count as usize >= BLOCK
    }

    /// Appends a posting of a document after [`Block::last`].
    pub fn push(&mut self, doc: u64, tf: u32, len: u32) {
        debug_assert!(doc > self.last);
        let gap = doc - self.last;
        self.last = doc;
        self.max_tf = self.max_tf.max(tf);
        self.min_len = self.min_len.min(len);
        self.push_encoded(gap, tf, len);
    }

    fn push_encoded(&mut self, gap: u64, tf: u32, len: u32) {
        put_varint(&mut self.bytes, gap);
        put_varint(&mut self.bytes, u64::from(tf));
        put_varint(&mut self.bytes, u64::from(len));
        self.count += 1;
    }

    /// Decodes the postings into `out` (cleared first).
    pub fn decode_into(&self, out: &mut Vec<Posting>) {
        let bytes = &self.bytes;
        out.clear();
        out.reserve(self.count as usize);
        let mut at = 0usize;
        let mut doc = self.first;
        let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        // A truncated block (never written by this module) ends early, without a panic.
        let rest = |at: usize| bytes.get(at..).unwrap_or(&[]);
        while at < bytes.len() {
            let (gap, n) = get_varint(rest(at));
            at += n;
            let (tf, n) = get_varint(rest(at));
            at += n;
            let (len, n) = get_varint(rest(at));
            at += n;
            doc = doc.saturating_add(gap);
            out.push(Posting {
                doc,
                tf: small(tf),
                len: small(len),
            });
        }
    }

    /// A block of `postings` (ascending documents; at least one).
    pub fn from_postings(postings: &[Posting]) -> Option<Block> {
        let (p, rest) = postings.split_first()?;
        let mut b = Block::new(p.doc, p.tf, p.len);
        for p in rest {
            b.push(p.doc, p.tf, p.len);
        }
        Some(b)
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint and its length; a truncated one ends at the end of the input.
#[inline]
fn get_varint(bytes: &[u8]) -> (u64, usize) {
    // One byte (a small gap, a term frequency, a length under 128): most of them.
    if let Some(&b) = bytes.first()
        && b & 0x80 == 0
    {
        return (u64::from(b), 1);
    }
    let mut v = 0u64;
    for (i, b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return (v, i + 1);
        }
    }
    (v, bytes.len().clamp(1, 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn postings_round_trip(
            first in 0u64..u64::MAX / 4,
            gaps in proptest::collection::vec((1u64..1_000_000, 1u32..100_000), 0..200),
        ) {
            let len_of = |d: u64| if d.is_multiple_of(5) { (d % 100_003) as u32 + 1 } else { (d % 97) as u32 + 1 };
            let mut postings = vec![Posting { doc: first, tf: 3, len: len_of(first) }];
            for (gap, tf) in gaps {
                let doc = postings[postings.len() - 1].doc + gap;
                postings.push(Posting { doc, tf, len: len_of(doc) });
            }
            let b = Block::from_postings(&postings).unwrap();
            let mut out = Vec::new();
            b.decode_into(&mut out);
            proptest::prop_assert_eq!(&out, &postings);
            proptest::prop_assert_eq!(b.count as usize, postings.len());
            proptest::prop_assert_eq!(b.max_tf, postings.iter().map(|p| p.tf).max().unwrap());
            proptest::prop_assert_eq!(b.min_len, postings.iter().map(|p| p.len).min().unwrap());
            proptest::prop_assert_eq!((b.first, b.last), (first, postings[postings.len() - 1].doc));
        }
    }

    #[test]
    fn truncated_varints_do_not_panic() {
        // Truncated in the gap, after the gap, after the frequency, in the length.
        for bytes in [
            vec![0x80, 0x80],
            vec![0x01],
            vec![0x01, 0x02],
            vec![0x01, 0x02, 0x83],
        ] {
            let b = Block {
                first: 1,
                last: 1,
                count: 1,
                max_tf: 1,
                min_len: 1,
                bytes,
            };
            let mut out = Vec::new();
            b.decode_into(&mut out);
            assert_eq!(out.len(), 1);
        }
    }
}
