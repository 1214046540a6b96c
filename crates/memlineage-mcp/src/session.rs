//! What the agent has been shown in a session, kept in the log so it survives a restart.
//!
//! Lineage is captured, not declared (DESIGN.md): the parents of an agent's next call or note
//! are everything it has been shown in the session — tool results, the user's request, recalled
//! memories. A session that forgot them on restart would let an attacker launder by crashing
//! the process, so every time the agent is shown entries the server appends a *session record*
//! before the agent sees them: an `observation` entry signed by the server's recorder (a trusted
//! principal), metadata `mcp.session = KEY`, content
//!
//! ```json
//! {"mcp_session": "KEY", "since": 41, "seen": ["<entry id>", …],
//!  "sources": {"<entry id>": "bill-december-2023.txt"}}
//! ```
//!
//! where `since` is the log index of the session's first record, and `sources` (absent when
//! empty) names the document each entry was read from, when the gateway's configuration says
//! which argument of the tool call names it (`source`; `docs/mcp.md`, "Confirm"): what lets the
//! gate answer *confirm* for a call whose values come from a document the user's request
//! names. An entry keeps the first document it was recorded from. Restoring a session reads the
//! log backwards from its end down to `since`, keeping the records of that key written by the
//! recorder (anyone else's are ignored: a writer who could add ids to a session could add
//! trusted carriers to the gate's context). The ids themselves are verified when they are used,
//! like any context entry.

use crate::handle::{self, Mem, MemError, NewEntry};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The metadata key that marks a session record.
pub const SESSION_META: &str = "mcp.session";

/// Entries read per step of the backward scan.
const SCAN_CHUNK: u64 = 1024;

/// The longest session key.
const MAX_KEY: usize = 128;

/// A session key: 1 to 128 letters, digits, `.`, `_`, `-`, `@`, `:`.
pub fn validate_key(key: &str) -> Result<(), String> {
    if key.is_empty()
        || key.len() > MAX_KEY
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'@' | b':'))
    {
        return Err(format!(
            "invalid session key `{}`: 1 to {MAX_KEY} letters, digits, `.`, `_`, `-`, `@` or `:`",
            key.chars().take(80).collect::<String>()
        ));
    }
    Ok(())
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    mcp_session: String,
    since: u64,
    seen: Vec<EntryId>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    sources: BTreeMap<EntryId, String>,
}

/// The longest document name kept as a source, in bytes: a longer one is not kept (the gate
/// then has no source for the entry, so it denies rather than asks).
pub const MAX_SOURCE: usize = 1024;

/// One session's state.
#[derive(Debug)]
pub struct Session {
    key: String,
    /// Entries shown, in the order shown, each once.
    seen: Vec<EntryId>,
    seen_set: BTreeSet<EntryId>,
    /// The document each shown entry was read from, where the tool call named one.
    sources: BTreeMap<EntryId, String>,
    /// The log index of the session's first record, once it has one.
    since: Option<u64>,
    /// Texts already recorded in this session, by (principal, part, text) hash: the same
    /// listing or request shown twice is recorded once.
    recorded: HashMap<[u8; 32], EntryId>,
}

impl Session {
    /// A session that has been shown nothing (a placeholder while the real one is away).
    pub fn empty(key: &str) -> Session {
        Session {
            key: key.to_string(),
            seen: Vec::new(),
            seen_set: BTreeSet::new(),
            sources: BTreeMap::new(),
            since: None,
            recorded: HashMap::new(),
        }
    }

    /// The session `key`, with what its records in the log say it has been shown.
    pub fn restore(mem: &Mem, key: &str, recorder: &str) -> Result<Session, MemError> {
        let mut s = Session::empty(key);
        let mut end = handle::log_size(mem)?;
        let mut batches: Vec<(Vec<EntryId>, BTreeMap<EntryId, String>)> = Vec::new();
        // Unknown until the newest record is found; then the lowest `since` of any record.
        let mut stop: Option<u64> = None;
        while end > stop.unwrap_or(0) {
            let start = end.saturating_sub(SCAN_CHUNK).max(stop.unwrap_or(0));
            let rows = handle::log_chunk(mem, start, end - start)?;
            for row in rows.iter().rev() {
                if row.kind != EntryKind::Observation
                    || row.writer != recorder
                    || row.meta(SESSION_META) != Some(key)
                {
                    continue;
                }
                let Some(content) = &row.content else {
                    return Err(MemError(format!(
                        "session `{key}`: its record at log index {} was erased, so what the agent saw is unknown (start a new session)",
                        row.index
                    )));
                };
                let rec: Record = serde_json::from_slice(content).map_err(|e| {
                    MemError(format!(
                        "session `{key}`: its record at log index {} is malformed: {e}",
                        row.index
                    ))
                })?;
                if rec.mcp_session != key || rec.since > row.index {
                    return Err(MemError(format!(
                        "session `{key}`: its record at log index {} is inconsistent (run `memlineage verify`)",
                        row.index
                    )));
                }
                stop = Some(stop.map_or(rec.since, |x| x.min(rec.since)));
                batches.push((rec.seen, rec.sources));
            }
            end = start;
        }
        s.since = stop;
        for (seen, sources) in batches.into_iter().rev() {
            s.add(seen, sources);
        }
        Ok(s)
    }

    /// The session key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Everything shown so far, in order: the context of the next call.
    pub fn seen(&self) -> &[EntryId] {
        &self.seen
    }

    /// The documents the entries of `context` were read from, where known: the gate's
    /// `sources`.
    pub fn sources_of(&self, context: &[EntryId]) -> BTreeMap<EntryId, String> {
        context
            .iter()
            .filter_map(|id| self.sources.get(id).map(|d| (*id, d.clone())))
            .collect()
    }

    fn add(&mut self, ids: Vec<EntryId>, sources: BTreeMap<EntryId, String>) {
        for id in ids {
            if self.seen_set.insert(id) {
                self.seen.push(id);
            }
        }
        for (id, doc) in sources {
            self.sources.entry(id).or_insert(doc);
        }
    }

    /// Of `ids`, those with no document yet, each mapped to `source`: what a record must add
    /// when they were read from it. Empty without a source, or with one over [`MAX_SOURCE`]
    /// bytes.
    pub fn new_sources(&self, ids: &[EntryId], source: Option<&str>) -> BTreeMap<EntryId, String> {
        match source {
            Some(doc) if !doc.is_empty() && doc.len() <= MAX_SOURCE => ids
                .iter()
                .filter(|id| !self.sources.contains_key(id))
                .map(|id| (*id, doc.to_string()))
                .collect(),
            _ => BTreeMap::new(),
        }
    }

    /// The ids of `ids` not yet shown in this session, each once, in order.
    pub fn unseen(&self, ids: &[EntryId]) -> Vec<EntryId> {
        let mut out: Vec<EntryId> = Vec::new();
        for id in ids {
            if !self.seen_set.contains(id) && !out.contains(id) {
                out.push(*id);
            }
        }
        out
    }

    /// The log index the session's records start at, once it has one.
    pub fn since(&self) -> Option<u64> {
        self.since
    }

    /// Notes that a session record for `new` (and the documents `sources` of entries),
    /// starting the session at `since`, is in the log.
    pub fn shown(&mut self, new: Vec<EntryId>, sources: BTreeMap<EntryId, String>, since: u64) {
        self.since = Some(self.since.map_or(since, |s| s.min(since)));
        self.add(new, sources);
    }

    /// The entry already recorded in this session for this text, if any.
    pub fn recorded(&self, principal: &str, part: &str, text: &str) -> Option<EntryId> {
        self.recorded.get(&text_key(principal, part, text)).copied()
    }

    /// Remembers that `id` holds this text.
    pub fn remember_text(&mut self, principal: &str, part: &str, text: &str, id: EntryId) {
        self.recorded.insert(text_key(principal, part, text), id);
    }
}

/// Appends the record that session `key` is shown `new`, and that the entries of `sources`
/// were read from those documents (blocking). `since` is the session's
/// first record's index, or `None` for its first record; returns the `since` to keep: the log
/// size before the first record, at or below its index (another writer may append in between),
/// so a restore scanning down to it finds every record.
pub fn write_record(
    mem: &Mem,
    recorder: &str,
    scope: &Scope,
    key: &str,
    since: Option<u64>,
    new: &[EntryId],
    sources: &BTreeMap<EntryId, String>,
) -> Result<u64, MemError> {
    let since = match since {
        Some(s) => s,
        None => handle::log_size(mem)?,
    };
    let rec = Record {
        mcp_session: key.to_string(),
        since,
        seen: new.to_vec(),
        sources: sources.clone(),
    };
    let text = serde_json::to_string(&rec).map_err(|e| MemError(format!("session record: {e}")))?;
    handle::write_all(
        mem,
        scope,
        vec![NewEntry::new(recorder, EntryKind::Observation, text).meta(SESSION_META, key)],
    )?;
    Ok(since)
}

fn text_key(principal: &str, part: &str, text: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for s in [principal, part, text] {
        h.update((s.len() as u64).to_be_bytes());
        h.update(s.as_bytes());
    }
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::{NewEntry, write_all};
    use memlineage::{Memory, MemoryStore, Settings};
    use memlineage_core::label::TrustClass;
    use rand_core::OsRng;

    fn store() -> Mem {
        let op = ed25519_dalek::SigningKey::generate(&mut OsRng);
        let mem = Memory::init(
            MemoryStore::new(),
            Settings::with_origin("test.example/log"),
            &"operator".parse().unwrap(),
            op,
        )
        .unwrap();
        let web = ed25519_dalek::SigningKey::generate(&mut OsRng);
        let name = "web".parse().unwrap();
        mem.add_principal(&name, TrustClass::External, &web.verifying_key())
            .unwrap();
        mem.keys().insert(&name, web);
        mem
    }

    fn note(mem: &Mem, writer: &str, text: &str) -> EntryId {
        write_all(
            mem,
            &Scope::default(),
            vec![NewEntry::new(writer, EntryKind::Observation, text)],
        )
        .unwrap()[0]
            .id
    }

    fn show(mem: &Mem, s: &mut Session, ids: &[EntryId]) {
        show_from(mem, s, ids, None);
    }

    fn show_from(mem: &Mem, s: &mut Session, ids: &[EntryId], source: Option<&str>) {
        let new = s.unseen(ids);
        let sources = s.new_sources(ids, source);
        let since = write_record(
            mem,
            "operator",
            &Scope::default(),
            s.key(),
            s.since(),
            &new,
            &sources,
        )
        .unwrap();
        s.shown(new, sources, since);
    }

    #[test]
    fn a_session_comes_back_from_the_log_in_order() {
        let mem = store();
        let a = note(&mem, "web", "a");
        let b = note(&mem, "operator", "b");
        let c = note(&mem, "web", "c");
        let mut s = Session::restore(&mem, "s1", "operator").unwrap();
        assert!(s.seen().is_empty());
        show(&mem, &mut s, &[a, b]);
        note(&mem, "web", "unrelated");
        show(&mem, &mut s, &[b, c]);
        let mut other = Session::restore(&mem, "s2", "operator").unwrap();
        show(&mem, &mut other, &[c]);
        assert_eq!(s.seen(), &[a, b, c]);
        let back = Session::restore(&mem, "s1", "operator").unwrap();
        assert_eq!(back.seen(), &[a, b, c]);
        assert_eq!(back.since(), s.since());
        assert_eq!(
            Session::restore(&mem, "s2", "operator").unwrap().seen(),
            &[c]
        );
    }

    #[test]
    fn records_by_anyone_but_the_recorder_are_ignored() {
        let mem = store();
        let trusted = note(&mem, "operator", "the user's IBAN");
        let mut s = Session::restore(&mem, "s1", "operator").unwrap();
        let a = note(&mem, "web", "a");
        show(&mem, &mut s, &[a]);
        // An external writer forges a record that puts a trusted entry in the session.
        let forged = Record {
            mcp_session: "s1".into(),
            since: 0,
            seen: vec![trusted],
            sources: BTreeMap::from([(a, "forged.txt".to_string())]),
        };
        write_all(
            &mem,
            &Scope::default(),
            vec![
                NewEntry::new(
                    "web",
                    EntryKind::Observation,
                    serde_json::to_string(&forged).unwrap(),
                )
                .meta(SESSION_META, "s1"),
            ],
        )
        .unwrap();
        let back = Session::restore(&mem, "s1", "operator").unwrap();
        assert_eq!(back.seen(), &[a]);
        assert!(
            back.sources_of(&[a, trusted]).is_empty(),
            "no forged source"
        );
    }

    #[test]
    fn sources_come_back_from_the_log_and_keep_the_first_document() {
        let mem = store();
        let bill = note(&mem, "web", "IBAN US13 3000");
        let other = note(&mem, "web", "letter");
        let plain = note(&mem, "web", "no document");
        let mut s = Session::restore(&mem, "s1", "operator").unwrap();
        show_from(&mem, &mut s, &[bill], Some("bill.txt"));
        show(&mem, &mut s, &[plain]);
        // Seen again from another document, and a new entry from it.
        show_from(&mem, &mut s, &[bill, other], Some("other.txt"));
        // A name over the limit is not kept.
        let long = "x".repeat(MAX_SOURCE + 1);
        let far = note(&mem, "web", "far");
        show_from(&mem, &mut s, &[far], Some(&long));
        let want = BTreeMap::from([
            (bill, "bill.txt".to_string()),
            (other, "other.txt".to_string()),
        ]);
        assert_eq!(s.sources_of(&[bill, other, plain, far]), want);
        let back = Session::restore(&mem, "s1", "operator").unwrap();
        assert_eq!(back.seen(), &[bill, plain, other, far]);
        assert_eq!(back.sources_of(back.seen()), want);
        // A record of an older gateway (no `sources`) still reads.
        let old = serde_json::json!({"mcp_session": "s2", "since": 0, "seen": [plain]});
        write_all(
            &mem,
            &Scope::default(),
            vec![
                NewEntry::new("operator", EntryKind::Observation, old.to_string())
                    .meta(SESSION_META, "s2"),
            ],
        )
        .unwrap();
        let s2 = Session::restore(&mem, "s2", "operator").unwrap();
        assert_eq!(
            (s2.seen(), s2.sources_of(&[plain]).len()),
            (&[plain][..], 0)
        );
    }

    #[test]
    fn keys_are_checked() {
        assert!(validate_key("conv-42@alice:1").is_ok());
        for bad in ["", "a b", "a/b", &"k".repeat(129)] {
            assert!(validate_key(bad).is_err(), "{bad}");
        }
    }
}
