//! The handle's own lexical index ([`Memory::with_lexical_index`]): BM25 top-k whose cost does
//! not grow with the store.
//!
//! A backend's full-text search (SQLite FTS5, PostgreSQL's GIN) ranks *every* match of a query
//! before it takes the best `limit`: 19 ms for a two-word query at 10^6 entries, 62× its cost
//! at 10^3 (issue 17). A handle that lives long — the HTTP service, the MCP server and gateway,
//! an agent's process — can instead keep the in-memory index of posting blocks of
//! [`crate::search::lexical`] and rank with its block-max top-k over bounded candidate sets
//! ([`LexicalIndex::top_k_within`], window [`CANDIDATE_WINDOW`]): the same BM25 and the same
//! order as the backend for every query whose terms are each in at most the window's number of
//! entries, and each frequent term's most recent entries otherwise.
//!
//! **Built lazily, kept in step with the log.** Nothing is read when the index is attached; the
//! first lexical search reads the log once (the entries with text: live, not control records,
//! UTF-8 content — what the backend's full-text index holds), and every search first catches up
//! within the search's own read snapshot: the entries appended since (by this handle or any
//! other writer) are indexed and the targets of the tombstones appended since are removed. A
//! one-shot process (the CLI) keeps the backend's search, which needs no build.
//!
//! **The trust path is unchanged.** The index only chooses and orders candidates; they are
//! verified exactly as the backend's are (`retrieve.rs`: signature, inclusion, labels, signed
//! scope, forgotten), so whatever the index holds can hide or misrank an entry, never inject one
//! or change its label.

use super::Memory;
use super::searchable::{Scopes, searchable};
use crate::error::Error;
use crate::search::lexical::{CANDIDATE_WINDOW, LexicalIndex};
use crate::store::BackendRead;
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::records::Tombstone;
use std::sync::{Mutex, MutexGuard};

/// Entries read per step of a catch-up.
const CATCH_UP_CHUNK: u64 = 1024;

/// No scope: a leaf index that is not (or no longer) indexed.
const NO_SCOPE: u32 = u32::MAX;

/// The index and what it needs beside it, behind one lock.
#[derive(Default)]
pub(crate) struct Lexical {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    index: LexicalIndex,
    /// Leaf indices below this have been considered.
    next: u64,
    /// Tombstones with index below this have been applied.
    tombstones_next: u64,
    /// The signed scope of each indexed entry, by leaf index (its id in `scopes`), for the
    /// scope pre-filter; [`NO_SCOPE`] for the rest.
    scope_of: Vec<u32>,
    scopes: Scopes,
}

impl Lexical {
    fn lock(&self) -> Result<MutexGuard<'_, State>, Error> {
        self.state
            .lock()
            .map_err(|_| Error::internal("the lexical index lock is poisoned"))
    }

    /// The `limit` best matches of `query` within `scope` and below (leaf indices, best first;
    /// not verified), after catching up with the log as `read` sees it.
    pub(crate) fn ranking(
        &self,
        read: &dyn BackendRead,
        query: &str,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<u64>, Error> {
        let mut state = self.lock()?;
        state.catch_up(read)?;
        let State {
            index,
            scope_of,
            scopes,
            ..
        } = &*state;
        let within = scopes.within(scope);
        let accept = |doc: u64| {
            usize::try_from(doc)
                .ok()
                .and_then(|i| scope_of.get(i))
                .and_then(|s| within.get(*s as usize))
                .copied()
                .unwrap_or(false)
        };
        Ok(index
            .top_k_within(query, limit, CANDIDATE_WINDOW, accept)
            .into_iter()
            .map(|h| h.doc)
            .collect())
    }

    /// Live entries indexed so far, and the bytes the index holds (approximately).
    pub(crate) fn stats(&self) -> Result<(u64, usize), Error> {
        let state = self.lock()?;
        let bytes = state.index.memory_bytes()
            + state.scope_of.capacity() * std::mem::size_of::<u32>()
            + state.scopes.bytes();
        Ok((state.index.len(), bytes))
    }
}

impl State {
    /// Removes the targets of the tombstones appended since the last catch-up, then indexes
    /// the entries appended since.
    fn catch_up(&mut self, read: &dyn BackendRead) -> Result<(), Error> {
        let size = read.size()?;
        if size < self.next {
            // The log is shorter than what was indexed (restored from an older copy, or
            // rolled back by its operator): what the index holds past it may be other
            // entries' text. Start again from the log as it is; the reader's history checks
            // (`--trusted-checkpoint`) are what report the rollback itself.
            *self = State::default();
        }
        for t in read.control_records(EntryKind::Tombstone, self.tombstones_next)? {
            let target = Tombstone::from_content(&t.content)?.target;
            if let Some(stored) = read.entry_by_id(&target)?
                && stored.index < self.next
            {
                match stored.content.as_deref().map(std::str::from_utf8) {
                    Some(Ok(text)) => self.index.remove(stored.index, text),
                    _ => {
                        self.index.remove_without_text(stored.index);
                    }
                }
                if let Some(s) = usize::try_from(stored.index)
                    .ok()
                    .and_then(|i| self.scope_of.get_mut(i))
                {
                    *s = NO_SCOPE;
                }
            }
            self.tombstones_next = self.tombstones_next.max(t.index + 1);
        }
        while self.next < size {
            let chunk = read.entries(self.next, CATCH_UP_CHUNK.min(size - self.next))?;
            let Some(last) = chunk.last().map(|e| e.index) else {
                break;
            };
            for stored in &chunk {
                if let Some((entry, text)) = searchable(stored) {
                    self.insert(stored.index, &entry.body().scope, text);
                }
            }
            self.next = last + 1;
        }
        Ok(())
    }

    fn insert(&mut self, index: u64, scope: &Scope, text: &str) {
        let Ok(slot) = usize::try_from(index) else {
            return;
        };
        let id = self.scopes.intern(scope);
        if self.scope_of.len() <= slot {
            self.scope_of.resize(slot + 1, NO_SCOPE);
        }
        self.scope_of[slot] = id;
        self.index.insert(index, text);
    }
}

impl Memory {
    /// Keeps a lexical index in this handle: from the next search on, lexical search (and the
    /// lexical half of hybrid search) ranks with the bounded block-max top-k of
    /// [`crate::search::lexical`] instead of the backend's full-text search, so its cost stays
    /// flat as the store grows. The index is built by the first search (one read of the log)
    /// and caught up with the log at every search after; it lives in memory (measured on the
    /// benchmark's entries of ~180 bytes: 145 MiB and a 4.4 s first search at 10^6 entries). For handles that live long (a service, a gateway, an agent); a one-shot process
    /// does better with the backend's search, which needs no build.
    pub fn with_lexical_index(mut self) -> Memory {
        self.lexical = Some(Lexical::default());
        self
    }

    /// When this handle keeps a lexical index: the live entries it holds and its size in
    /// bytes (approximately). `None` without one.
    pub fn lexical_index_stats(&self) -> Result<Option<(u64, usize)>, Error> {
        self.lexical.as_ref().map(Lexical::stats).transpose()
    }

    /// The lexical ranking alone: the leaf indices of the `limit` best matches of `query`
    /// within `scope`, best first — **not verified** (pass them to
    /// [`Memory::retrieve_indices`] before anything reaches a prompt). The handle's index when
    /// it keeps one, else the backend's full-text search.
    pub fn lexical_top(&self, query: &str, scope: &Scope, limit: usize) -> Result<Vec<u64>, Error> {
        self.lexical_ranking(&*self.lexical_snapshot()?, query, scope, limit)
    }

    /// A snapshot to rank lexically in. A handle without its own lexical index ranks with the
    /// backend's full-text search, so it first indexes the text the backend left pending
    /// ([`Memory::defer_full_text`]): the search then finds every entry committed before it
    /// began. (The handle's own index catches up inside the snapshot, `Lexical::ranking`.)
    pub(crate) fn lexical_snapshot(&self) -> Result<Box<dyn BackendRead + '_>, Error> {
        if self.lexical.is_none() {
            self.catch_up_full_text()?;
        }
        self.backend.snapshot()
    }

    /// The `limit` best lexical matches of `query` within `scope` (leaf indices, best first;
    /// not verified): the handle's index when it keeps one, else the backend's full-text
    /// search, both as `read` sees the log.
    pub(crate) fn lexical_ranking(
        &self,
        read: &dyn BackendRead,
        query: &str,
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<u64>, Error> {
        match &self.lexical {
            Some(lexical) => lexical.ranking(read, query, scope, limit),
            None => {
                read.text_index()
                    .search(&crate::store::SearchTerms::parse(query), scope, limit)
            }
        }
    }
}
