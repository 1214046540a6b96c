//! The in-memory inverted index of posting blocks.

use super::block::{Block, Posting};
use super::bm25::Collection;
use super::tokens::each_term;
use std::collections::HashMap;

/// One term's postings, in blocks in document order.
#[derive(Clone, Debug, Default)]
pub struct PostingList {
    /// The blocks; only the last one may be partly filled.
    pub blocks: Vec<Block>,
    /// Live documents holding the term.
    pub df: u64,
    /// The largest term frequency and the shortest document over all blocks (the list's
    /// score bound).
    pub max_tf: u32,
    /// See `max_tf`.
    pub min_len: u32,
}

impl PostingList {
    fn add(&mut self, doc: u64, tf: u32, len: u32) {
        if self.blocks.is_empty() {
            self.max_tf = tf;
            self.min_len = len;
        } else {
            self.max_tf = self.max_tf.max(tf);
            self.min_len = self.min_len.min(len);
        }
        self.df += 1;
        match self.blocks.last_mut() {
            Some(b) if b.last < doc && !b.is_full() => b.push(doc, tf, len),
            Some(b) if b.last < doc => self.blocks.push(Block::new(doc, tf, len)),
            None => self.blocks.push(Block::new(doc, tf, len)),
            Some(_) => self.insert_out_of_order(doc, tf, len),
        }
    }

    /// A document older than the list's last one (a rebuild in another order): the block
    /// that covers it is re-encoded, and split when over full.
    fn insert_out_of_order(&mut self, doc: u64, tf: u32, len: u32) {
        let at = self.blocks.partition_point(|b| b.last < doc);
        let mut postings = Vec::new();
        if let Some(b) = self.blocks.get(at) {
            b.decode_into(&mut postings);
        }
        let new = Posting { doc, tf, len };
        match postings.binary_search_by_key(&doc, |p| p.doc) {
            Ok(i) => postings[i] = new,
            Err(i) => postings.insert(i, new),
        }
        let rebuilt: Vec<Block> = postings
            .chunks(super::block::BLOCK)
            .filter_map(Block::from_postings)
            .collect();
        self.blocks
            .splice(at..(at + 1).min(self.blocks.len()), rebuilt);
    }
}

/// A document's length in terms, and whether it is live.
#[derive(Clone, Copy, Debug, Default)]
struct Doc {
    len: u32,
    live: bool,
}

/// The index. Documents are leaf indices (dense, so they index a vector).
#[derive(Debug, Default)]
pub struct LexicalIndex {
    /// Keyed hashing: terms come from stored texts, which writers choose.
    term_ids: HashMap<String, u32, ahash::RandomState>,
    pub(super) lists: Vec<PostingList>,
    docs: Vec<Doc>,
    live: u64,
    total_len: u64,
    scratch: Vec<u32>,
    lower: String,
}

impl LexicalIndex {
    /// An empty index.
    pub fn new() -> LexicalIndex {
        LexicalIndex::default()
    }

    /// Live documents.
    pub fn len(&self) -> u64 {
        self.live
    }

    /// Whether no document is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The collection statistics of the live documents.
    pub fn collection(&self) -> Collection {
        Collection::new(self.live, self.total_len)
    }

    /// The posting list of `term`, if any document ever held it.
    pub fn list(&self, term: &str) -> Option<&PostingList> {
        self.lists.get(*self.term_ids.get(term)? as usize)
    }

    /// Whether `doc` is live, and its length in terms.
    pub fn doc(&self, doc: u64) -> Option<u32> {
        let d = self.docs.get(usize::try_from(doc).ok()?)?;
        d.live.then_some(d.len)
    }

    /// Indexes `text` as document `doc`. A document already live is left as it is (its
    /// text never changes: it is an entry's content).
    pub fn insert(&mut self, doc: u64, text: &str) {
        let Ok(slot) = usize::try_from(doc) else {
            return;
        };
        if self.docs.get(slot).is_some_and(|d| d.live) {
            return;
        }
        let mut ids = std::mem::take(&mut self.scratch);
        let mut lower = std::mem::take(&mut self.lower);
        ids.clear();
        each_term(text, &mut lower, |t| ids.push(self.intern(t)));
        let len = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        ids.sort_unstable();
        let mut at = 0;
        while at < ids.len() {
            let t = ids[at];
            let run = ids[at..].iter().take_while(|x| **x == t).count();
            at += run;
            if let Some(list) = self.lists.get_mut(t as usize) {
                list.add(doc, u32::try_from(run).unwrap_or(u32::MAX), len);
            }
        }
        if self.docs.len() <= slot {
            self.docs.resize(slot + 1, Doc::default());
        }
        self.docs[slot] = Doc { len, live: true };
        self.live += 1;
        self.total_len += u64::from(len);
        self.scratch = ids;
        self.lower = lower;
    }

    /// Removes document `doc` (a forgotten entry), given the text it was indexed with: its
    /// terms' document counts drop, and its postings are skipped from now on (their blocks'
    /// bounds stay valid, only looser). Nothing happens when `doc` is not live.
    pub fn remove(&mut self, doc: u64, text: &str) {
        if !self.remove_without_text(doc) {
            return;
        }
        let mut ids = std::mem::take(&mut self.scratch);
        let mut lower = std::mem::take(&mut self.lower);
        ids.clear();
        each_term(text, &mut lower, |t| {
            if let Some(id) = self.term_ids.get(t) {
                ids.push(*id);
            }
        });
        ids.sort_unstable();
        ids.dedup();
        for t in &ids {
            if let Some(list) = self.lists.get_mut(*t as usize) {
                list.df = list.df.saturating_sub(1);
            }
        }
        self.scratch = ids;
        self.lower = lower;
    }

    /// Removes document `doc` when the text it was indexed with is gone (an erased entry):
    /// it is never returned again and leaves the collection's size and length, but its terms'
    /// document counts keep it (their idf is as if it were still there) — the only difference
    /// from [`LexicalIndex::remove`]. Returns whether `doc` was live.
    pub fn remove_without_text(&mut self, doc: u64) -> bool {
        let Some(d) = usize::try_from(doc).ok().and_then(|i| self.docs.get_mut(i)) else {
            return false;
        };
        if !d.live {
            return false;
        }
        d.live = false;
        self.live -= 1;
        self.total_len -= u64::from(d.len);
        true
    }

    fn intern(&mut self, term: &str) -> u32 {
        if let Some(id) = self.term_ids.get(term) {
            return *id;
        }
        let id = u32::try_from(self.lists.len()).unwrap_or(u32::MAX);
        self.term_ids.insert(term.to_string(), id);
        self.lists.push(PostingList::default());
        id
    }

    /// Bytes held (posting blocks, block headers, documents, terms), approximately.
    pub fn memory_bytes(&self) -> usize {
        let blocks: usize = self
            .lists
            .iter()
            .map(|l| {
                std::mem::size_of::<PostingList>()
                    + l.blocks
                        .iter()
                        .map(|b| std::mem::size_of::<Block>() + b.bytes.capacity())
                        .sum::<usize>()
            })
            .sum();
        let terms: usize = self.term_ids.keys().map(|t| t.len() + 32).sum();
        blocks + terms + self.docs.capacity() * std::mem::size_of::<Doc>()
    }
}
