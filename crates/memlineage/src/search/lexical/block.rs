//! Posting blocks: a term's occurrences in up to [`BLOCK`] documents, in document order, with
//! the two facts its score bound needs (largest term frequency, shortest document).
//!
//! Each posting is three little-endian integers — the gap to the previous document (the first
//! posting's is 0, relative to [`Block::first`]), the term frequency, then the document's
//! length in terms — each in as many bytes as the block's largest value of that field needs
//! ([`Block::widths`]), so a block of a common term takes about four bytes per posting. The
//! length travels with the posting so that the top-k can score a candidate from the postings
//! alone, without a random read of the document table (issue 17: that read was a quarter of a
//! search over 10^6 documents).
//!
//! **Why fixed widths, not varints.** A search decodes every block it touches whole, and
//! decoding was a third of a search over 10^6 documents (issue 17): a varint's position
//! depends on the length of the one before it, so decoding was one long chain of dependent
//! loads and branches. With one width per field and block, every posting is at a known
//! offset and is read with three loads that do not wait on each other. The price is a few
//! bytes per block (the widest gap sets the gap width of the whole block), and re-encoding the
//! open block when a value needs a wider field (at most a few times per block).

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
    /// Bytes of each posting's gap, term frequency and length (each 1 to 8).
    pub widths: [u8; 3],
    /// The postings, `widths` bytes each field, little-endian.
    pub bytes: Vec<u8>,
}

/// The bytes that hold `v` (at least one).
fn width_of(v: u64) -> u8 {
    // At most 8: the value fits a u8.
    (v.max(1).ilog2() / 8 + 1) as u8
}

/// The mask of the low `width` bytes.
fn mask(width: usize) -> u64 {
    if width >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * width)) - 1
    }
}

/// The little-endian integer of the first `W` bytes of `bytes` (`W` at most 8; `bytes` holds
/// at least `W`: a posting's chunk).
#[inline(always)]
fn le<const W: usize>(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word[..W].copy_from_slice(&bytes[..W]);
    u64::from_le_bytes(word)
}

/// The little-endian integer of `mask`'s bytes at `at` (bytes past the end read as zero).
#[inline(always)]
fn load(bytes: &[u8], at: usize, mask: u64) -> u64 {
    let rest = bytes.get(at..).unwrap_or(&[]);
    match rest.first_chunk::<8>() {
        Some(word) => u64::from_le_bytes(*word) & mask,
        // The last postings of a block: fewer than eight bytes follow.
        None => {
            let mut word = [0u8; 8];
            let n = rest.len().min(8);
            word[..n].copy_from_slice(&rest[..n]);
            u64::from_le_bytes(word) & mask
        }
    }
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
            widths: [1, width_of(u64::from(tf)), width_of(u64::from(len))],
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
        let need = [
            width_of(gap),
            width_of(u64::from(tf)),
            width_of(u64::from(len)),
        ];
        if need.iter().zip(&self.widths).any(|(n, w)| n > w) {
            self.widen(need);
        }
        self.last = doc;
        self.max_tf = self.max_tf.max(tf);
        self.min_len = self.min_len.min(len);
        self.push_encoded(gap, tf, len);
    }

    /// Re-encodes the postings with fields at least `need` wide.
    fn widen(&mut self, need: [u8; 3]) {
        let mut postings = Vec::with_capacity(self.count as usize);
        self.decode_into(&mut postings);
        for (w, n) in self.widths.iter_mut().zip(need) {
            *w = (*w).max(n);
        }
        self.bytes.clear();
        self.count = 0;
        let mut prev = self.first;
        for p in postings {
            self.push_encoded(p.doc.saturating_sub(prev), p.tf, p.len);
            prev = p.doc;
        }
    }

    fn push_encoded(&mut self, gap: u64, tf: u32, len: u32) {
        let [wg, wt, wl] = self.widths.map(usize::from);
        self.bytes
            .extend_from_slice(&gap.to_le_bytes()[..wg.min(8)]);
        self.bytes
            .extend_from_slice(&u64::from(tf).to_le_bytes()[..wt.min(8)]);
        self.bytes
            .extend_from_slice(&u64::from(len).to_le_bytes()[..wl.min(8)]);
        self.count += 1;
    }

    /// Decodes the postings into `out` (cleared first). A block whose bytes end inside a
    /// posting (never written by this module) ends before it, without a panic.
    pub fn decode_into(&self, out: &mut Vec<Posting>) {
        out.clear();
        self.decode_extend(out);
    }

    /// Decodes the postings after those already in `out` (as [`Block::decode_into`], without
    /// clearing it): the windowed top-k decodes a term's blocks into one vector.
    pub fn decode_extend(&self, out: &mut Vec<Posting>) {
        // The common layouts (gaps of one to four bytes, frequencies of one, lengths of one or
        // two) with their widths known at compile time: each field is then one small load,
        // and decoding a block is a short loop without branches (issue 17).
        match self.widths {
            [1, 1, 1] => self.decode_fixed::<1, 1, 1>(out),
            [2, 1, 1] => self.decode_fixed::<2, 1, 1>(out),
            [3, 1, 1] => self.decode_fixed::<3, 1, 1>(out),
            [4, 1, 1] => self.decode_fixed::<4, 1, 1>(out),
            [1, 1, 2] => self.decode_fixed::<1, 1, 2>(out),
            [2, 1, 2] => self.decode_fixed::<2, 1, 2>(out),
            [3, 1, 2] => self.decode_fixed::<3, 1, 2>(out),
            [4, 1, 2] => self.decode_fixed::<4, 1, 2>(out),
            _ => self.decode_any(out),
        }
    }

    /// [`Block::decode_extend`] for any widths.
    fn decode_any(&self, out: &mut Vec<Posting>) {
        let [wg, wt, wl] = self.widths.map(usize::from);
        let stride = wg + wt + wl;
        let Some(n) = self.bytes.len().checked_div(stride) else {
            return;
        };
        let (mg, mt, ml) = (mask(wg), mask(wt), mask(wl));
        let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let bytes = &self.bytes[..];
        let mut doc = self.first;
        out.extend((0..n).map(|i| {
            let at = i * stride;
            doc = doc.saturating_add(load(bytes, at, mg));
            Posting {
                doc,
                tf: small(load(bytes, at + wg, mt)),
                len: small(load(bytes, at + wg + wt, ml)),
            }
        }));
    }

    /// [`Block::decode_extend`] for fields of `G`, `T` and `L` bytes (the block's widths).
    fn decode_fixed<const G: usize, const T: usize, const L: usize>(&self, out: &mut Vec<Posting>) {
        let mut doc = self.first;
        out.extend(self.bytes.chunks_exact(G + T + L).map(|c| {
            doc = doc.saturating_add(le::<G>(c));
            Posting {
                doc,
                // At most four bytes: fits.
                tf: le::<T>(&c[G..]) as u32,
                len: le::<L>(&c[G + T..]) as u32,
            }
        }));
    }

    /// Calls `f(doc, i)` with each posting's document and its place in the block, in order,
    /// without decoding frequencies and lengths ([`Block::tf_len_at`] reads those of the few
    /// postings a caller wants): the two-pass top-k reads most postings for their documents
    /// alone (issue 17).
    #[inline]
    pub fn for_each_doc(&self, mut f: impl FnMut(u64, usize)) {
        match self.widths {
            [1, 1, 1] => self.docs_fixed::<1, 2>(&mut f),
            [2, 1, 1] => self.docs_fixed::<2, 2>(&mut f),
            [3, 1, 1] => self.docs_fixed::<3, 2>(&mut f),
            [4, 1, 1] => self.docs_fixed::<4, 2>(&mut f),
            [1, 1, 2] => self.docs_fixed::<1, 3>(&mut f),
            [2, 1, 2] => self.docs_fixed::<2, 3>(&mut f),
            [3, 1, 2] => self.docs_fixed::<3, 3>(&mut f),
            [4, 1, 2] => self.docs_fixed::<4, 3>(&mut f),
            _ => {
                let mut all = Vec::with_capacity(self.count as usize);
                self.decode_any(&mut all);
                for (i, p) in all.iter().enumerate() {
                    f(p.doc, i);
                }
            }
        }
    }

    /// [`Block::for_each_doc`] for gaps of `G` bytes and `R` bytes of the rest of a posting.
    #[inline(always)]
    fn docs_fixed<const G: usize, const R: usize>(&self, f: &mut impl FnMut(u64, usize)) {
        let mut doc = self.first;
        for (i, c) in self.bytes.chunks_exact(G + R).enumerate() {
            doc = doc.saturating_add(le::<G>(c));
            f(doc, i);
        }
    }

    /// The term frequency and document length of the posting at place `i` (`(0, 0)` past the
    /// block's end), as [`Block::decode_extend`] reads them.
    pub fn tf_len_at(&self, i: usize) -> (u32, u32) {
        if i >= self.count as usize {
            return (0, 0);
        }
        let [wg, wt, wl] = self.widths.map(usize::from);
        let at = i * (wg + wt + wl);
        let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        (
            small(load(&self.bytes, at + wg, mask(wt))),
            small(load(&self.bytes, at + wg + wt, mask(wl))),
        )
    }

    /// A reader of the postings in place, at the first one ([`Reader`]).
    pub fn reader(&self) -> Reader<'_> {
        let [wg, wt, wl] = self.widths.map(usize::from);
        let stride = wg + wt + wl;
        let left = self.bytes.len().checked_div(stride).unwrap_or(0);
        let masks = [mask(wg), mask(wt), mask(wl)];
        // As `decode_into`: the first gap (0 when written here) counts too.
        let doc = if left > 0 {
            self.first.saturating_add(load(&self.bytes, 0, masks[0]))
        } else {
            self.first
        };
        Reader {
            bytes: &self.bytes,
            masks,
            tf_at: wg,
            len_at: wg + wt,
            stride,
            at: 0,
            left,
            doc,
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

/// A forward reader over a block's postings where they lie, without decoding them into a
/// vector: the windowed top-k ([`super::window`]) probes an older block below a term's decoded
/// postings with it, stepping over postings (their gaps added) and reading a frequency and
/// length only at the candidate. Like [`Block::decode_into`], a block whose bytes end inside a
/// posting ends before it.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    masks: [u64; 3],
    tf_at: usize,
    len_at: usize,
    stride: usize,
    /// The byte offset of the current posting.
    at: usize,
    /// Postings from the current one to the end.
    left: usize,
    /// The current posting's document (its gap already added).
    doc: u64,
}

impl Reader<'_> {
    /// The current posting's document, `None` past the last.
    #[inline(always)]
    pub fn doc(&self) -> Option<u64> {
        (self.left > 0).then_some(self.doc)
    }

    /// The current posting's term frequency and document length (zeros past the last).
    #[inline(always)]
    pub fn tf_len(&self) -> (u32, u32) {
        if self.left == 0 {
            return (0, 0);
        }
        let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        (
            small(load(self.bytes, self.at + self.tf_at, self.masks[1])),
            small(load(self.bytes, self.at + self.len_at, self.masks[2])),
        )
    }

    /// Moves to the next posting.
    #[inline(always)]
    pub fn advance(&mut self) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        self.at += self.stride;
        if self.left > 0 {
            self.doc = self
                .doc
                .saturating_add(load(self.bytes, self.at, self.masks[0]));
        }
    }

    /// Moves to the first posting at or after `target` (or past the last); returns its
    /// document.
    #[inline]
    pub fn seek(&mut self, target: u64) -> Option<u64> {
        while self.left > 0 && self.doc < target {
            self.advance();
        }
        self.doc()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn postings_round_trip(
            first in 0u64..u64::MAX / 4,
            gaps in proptest::collection::vec((1u64..1_000_000, 0usize..3, 1u32..100_000), 0..200),
        ) {
            let len_of = |d: u64| if d.is_multiple_of(5) { (d % 100_003) as u32 + 1 } else { (d % 97) as u32 + 1 };
            let mut postings = vec![Posting { doc: first, tf: 3, len: len_of(first) }];
            for (gap, wide, tf) in gaps {
                // Gaps of one to three bytes, and some of four to six (wider fields, and
                // blocks that widen as postings arrive).
                let gap = gap << [0, 21, 35][wide];
                let doc = postings[postings.len() - 1].doc + gap;
                postings.push(Posting { doc, tf, len: len_of(doc) });
            }
            let b = Block::from_postings(&postings).unwrap();
            let mut out = Vec::new();
            b.decode_into(&mut out);
            proptest::prop_assert_eq!(&out, &postings);
            // The reader in place gives the same postings, and seeks to each.
            let mut r = b.reader();
            let mut read = Vec::new();
            while let Some(doc) = r.doc() {
                let (tf, len) = r.tf_len();
                read.push(Posting { doc, tf, len });
                r.advance();
            }
            proptest::prop_assert_eq!(&read, &postings);
            let mut r = b.reader();
            for p in &postings {
                proptest::prop_assert_eq!(r.seek(p.doc), Some(p.doc));
                proptest::prop_assert_eq!(r.tf_len(), (p.tf, p.len));
            }
            proptest::prop_assert_eq!(r.seek(u64::MAX), None);
            proptest::prop_assert_eq!(b.count as usize, postings.len());
            proptest::prop_assert_eq!(b.max_tf, postings.iter().map(|p| p.tf).max().unwrap());
            proptest::prop_assert_eq!(b.min_len, postings.iter().map(|p| p.len).min().unwrap());
            proptest::prop_assert_eq!((b.first, b.last), (first, postings[postings.len() - 1].doc));
        }
    }

    proptest::proptest! {
        /// The layouts decoded with widths known at compile time give what the general
        /// decoder gives (blocks with a truncated last posting included).
        #[test]
        fn fixed_layouts_decode_as_any(
            first in 0u64..u64::MAX / 4,
            postings in proptest::collection::vec((1u64..1 << 32, 1u32..256, 1u32..65_536), 1..200),
            gap_bits in 1u32..33,
            cut in 0usize..4,
        ) {
            let mut doc = first;
            let ps: Vec<Posting> = postings
                .iter()
                .map(|&(gap, tf, len)| {
                    doc += gap >> (32 - gap_bits);
                    Posting { doc, tf, len }
                })
                .collect();
            let mut ps = ps;
            ps.dedup_by_key(|p| p.doc);
            let mut b = Block::from_postings(&ps).unwrap();
            let keep = b.bytes.len().saturating_sub(cut);
            b.bytes.truncate(keep);
            let (mut fast, mut any) = (vec![Posting::default()], vec![Posting::default()]);
            b.decode_extend(&mut fast);
            b.decode_any(&mut any);
            proptest::prop_assert_eq!(&fast, &any);
            // Documents alone, and each posting's frequency and length by its place.
            let mut docs = vec![Posting::default()];
            b.for_each_doc(|doc, i| {
                let (tf, len) = b.tf_len_at(i);
                docs.push(Posting { doc, tf, len });
            });
            proptest::prop_assert_eq!(docs, any);
        }
    }

    #[test]
    fn widths_grow_with_the_values() {
        let mut b = Block::new(10, 1, 5);
        assert_eq!(b.widths, [1, 1, 1]);
        b.push(11, 300, 5);
        b.push(70_000, 1, 5);
        assert_eq!(b.widths, [3, 2, 1]);
        assert_eq!(b.bytes.len(), 3 * 6);
        let mut out = Vec::new();
        b.decode_into(&mut out);
        let docs: Vec<(u64, u32)> = out.iter().map(|p| (p.doc, p.tf)).collect();
        assert_eq!(docs, [(10, 1), (11, 300), (70_000, 1)]);
    }

    #[test]
    fn truncated_blocks_do_not_panic() {
        // Cut inside the first posting, after it, inside the second; and no width at all.
        for (widths, bytes, postings) in [
            ([1, 1, 1], vec![0x01, 0x02], 0),
            ([1, 1, 1], vec![0x00, 0x02, 0x03], 1),
            ([2, 1, 1], vec![0x00, 0x00, 0x02, 0x03, 0x05], 1),
            ([0, 0, 0], vec![0x01], 0),
        ] {
            let b = Block {
                first: 1,
                last: 1,
                count: 1,
                max_tf: 1,
                min_len: 1,
                widths,
                bytes,
            };
            let mut out = Vec::new();
            b.decode_into(&mut out);
            assert_eq!(out.len(), postings);
            let mut r = b.reader();
            let mut read = 0;
            while r.doc().is_some() {
                read += 1;
                r.advance();
            }
            assert_eq!(read, postings);
        }
    }
}
