//! What is specific to the in-memory store. The shared behaviour (labels, laundering,
//! revocation, forgetting, distrust, atomic batches, verify, retrieval, the gate) runs on both
//! backends in `memory_write.rs` and `gate_banking.rs` (`all_stores!`: `sqlite::*` and
//! `memory::*`). Here: an edited in-memory store caught by retrieval, verify and the gate (the SQLite
//! counterpart edits the database file: `retrieval_drops_tampered_entries`), a conformance check
//! against the SQLite store (the same log replayed into both gives the same nodes, roots, proofs,
//! indexes and search ranking; the PostgreSQL store too), and a large batch signed like single
//! writes.

mod common;

use common::backends::{Edit, delegate_backend};
use common::{assert_edited_vault_note_dropped, derived, key, p, setup_with, write_vault_notes};
use memlineage::store::{
    AppendGuard, Backend, BackendRead, MemoryStore, NewRecord, NoteRow, StoredEntry,
};
use memlineage::unchecked::{self, Effect};
use memlineage::{Error, Memory, SqliteStore, WriteRequest};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope, SignedEntry};
use memlineage_core::label::TrustLabel;
use memlineage_core::merkle::{self, NodeId};
use memlineage_core::records::DistrustTarget;

fn setup() -> Memory {
    setup_with(MemoryStore::new())
}

/// A backend that returns altered content for one leaf: an edited store.
struct Tampered {
    inner: MemoryStore,
    index: u64,
    content: Vec<u8>,
}

impl Edit for Tampered {
    fn edit(&self, mut e: StoredEntry) -> StoredEntry {
        if e.index == self.index {
            e.content = Some(self.content.clone());
        }
        e
    }
}

delegate_backend!(Tampered, inner);

impl Backend for Tampered {
    fn name(&self) -> &'static str {
        "tampered"
    }
    fn location(&self) -> String {
        "tampered:".into()
    }
    fn snapshot(&self) -> Result<Box<dyn BackendRead + '_>, Error> {
        Ok(Box::new(self))
    }
    fn append(&self, guard: &mut AppendGuard<'_>) -> Result<u64, Error> {
        self.inner.append(guard)
    }
    fn save_checkpoint(&self, note: &NoteRow) -> Result<(), Error> {
        self.inner.save_checkpoint(note)
    }
    fn save_values(&self, rows: &memlineage::store::ValueRows) -> Result<(), memlineage::Error> {
        self.inner.save_values(rows)
    }
    fn read_only(&self) -> bool {
        false
    }
}

#[test]
fn retrieval_and_verify_catch_an_edited_store() {
    let mem = setup();
    let a = write_vault_notes(&mem);
    mem.checkpoint().unwrap();
    let op = mem.keys().get(&p("operator")).unwrap();
    let store = Tampered {
        inner: move_store(mem),
        index: a.index,
        content: b"the vault code is 9999".to_vec(),
    };
    let mem = Memory::open(store).unwrap();
    mem.keys().insert(&p("operator"), op);
    assert_edited_vault_note_dropped(&mem, &a.id);
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert_eq!(report.problem_count, 1, "{:?}", report.problems);
}

/// Context integrity (issue 11): a context entry that fails verification is never dropped
/// from the gate's context; the gate refuses the call with an error naming the entry.
#[test]
fn the_gate_refuses_a_call_whose_context_entry_was_edited() {
    let mem = setup();
    let a = write_vault_notes(&mem);
    let request = mem
        .write(WriteRequest::new(
            &p("user"),
            EntryKind::UserInput,
            "Open the vault with code 1234.",
        ))
        .unwrap();
    mem.checkpoint().unwrap();
    let keys: Vec<_> = ["operator", "agent"]
        .iter()
        .map(|n| (p(n), mem.keys().get(&p(n)).unwrap()))
        .collect();
    let store = Tampered {
        inner: move_store(mem),
        index: a.index,
        content: b"the vault code is 9999".to_vec(),
    };
    let mem = Memory::open(store).unwrap();
    for (n, k) in keys {
        mem.keys().insert(&n, k);
    }
    let policy = memlineage_core::gate::Policy::parse(
        "[tools.open_vault.params]\ncode = { type = \"regex\", pattern = \"[0-9]{4}\" }\n",
    )
    .unwrap();
    let serde_json::Value::Object(args) = serde_json::json!({"code": "9999"}) else {
        unreachable!("an object literal")
    };
    let call = memlineage_core::gate::ToolCall::new("open_vault", args);
    let req = memlineage::GateRequest::new(call, vec![request.id, a.id], &p("agent"));
    match mem.gate(&policy, &req) {
        Err(Error::Integrity(e)) => {
            assert_eq!(e.id, Some(a.id));
            assert!(e.detail.contains(&a.id.to_string()), "{}", e.detail);
        }
        other => panic!("expected an integrity error, got {other:?}"),
    }
}

/// Moves the log of `mem` into a fresh in-memory store.
fn move_store(mem: Memory) -> MemoryStore {
    let out = MemoryStore::new();
    copy_log(&mem, &out);
    out
}

/// Copies the settings, every record with its derived state (forgotten, erased, raised
/// labels) and the latest checkpoint of `from` into the empty `to`, as a backup tool would.
fn copy_log(from: &Memory, to: &dyn Backend) {
    let src = from.unchecked().backend();
    let settings: Vec<(String, String)> = ["origin", "tau", "fallback", "operator"]
        .iter()
        .filter_map(|k| Some((k.to_string(), src.setting(k).unwrap()?)))
        .collect();
    let rows = src.entries(0, u64::MAX).unwrap();
    let mut effects = Vec::new();
    let records: Vec<NewRecord> = rows
        .iter()
        .map(|r| {
            let entry = SignedEntry::from_leaf(&r.leaf).unwrap();
            if let Some(tombstone) = r.forgotten_by {
                effects.push(Effect::Forget {
                    target: r.id,
                    tombstone,
                    erase: r.content.is_none(),
                });
            }
            if let Some(label) = r.effective_label {
                effects.push(Effect::RaiseLabel { id: r.id, label });
            }
            let content = r.content.clone().unwrap_or_default();
            let search_text = (!entry.body().kind.is_control())
                .then(|| String::from_utf8(content.clone()).unwrap());
            NewRecord {
                entry,
                content,
                search_text,
            }
        })
        .collect();
    unchecked::append_to(to, &records, &effects, &settings).unwrap();
    let cp = from.latest_checkpoint().unwrap().unwrap();
    assert_eq!(cp.size, rows.len() as u64, "the checkpoint covers the log");
    unchecked::save_checkpoint(to, cp.size, &src.latest_checkpoint().unwrap().unwrap()).unwrap();
}

/// A mixed log on the SQLite store: content in three scopes with shared vocabulary, derived
/// entries, a rotation, a tombstone with erasure, a distrust record, checkpoints.
fn mixed_log() -> Memory {
    let mem = setup_with(SqliteStore::in_memory().unwrap());
    let words = [
        "rent", "vault", "invoice", "landlord", "account", "meeting", "zurich", "payment",
        "reminder", "bill",
    ];
    let scopes = ["acme/bot", "acme/bot/alice", "acme/botany"];
    let mut ids: Vec<EntryId> = Vec::new();
    for i in 0..150usize {
        let text: Vec<&str> = (0..1 + i % 7)
            .map(|k| words[(i * 3 + k * k) % 10])
            .collect();
        let text = format!("{} {i}", text.join(" "));
        let scope = Scope::new(scopes[i % 3]).unwrap();
        let req = match i % 4 {
            0 => WriteRequest::new(&p("web"), EntryKind::ToolOutput, text),
            1 => WriteRequest::new(&p("user"), EntryKind::UserInput, text),
            _ if ids.len() >= 2 => derived(
                "agent",
                &text,
                &[
                    (ids[i * 7 % ids.len()], "0.7"),
                    (ids[i * 11 % ids.len()], "0.3"),
                ],
            ),
            _ => WriteRequest::new(&p("agent"), EntryKind::Observation, text),
        };
        ids.push(mem.write(req.with_scope(scope)).unwrap().id);
        if i == 60 {
            mem.checkpoint().unwrap();
            mem.rotate_principal(&p("agent"), &key(77)).unwrap();
        }
        if i == 90 {
            mem.forget(&p("operator"), &ids[10], true, "erase").unwrap();
            mem.distrust(&p("operator"), DistrustTarget::Entry(ids[11]), "bad")
                .unwrap();
        }
    }
    mem.checkpoint().unwrap();
    mem
}

#[test]
fn same_log_same_answers_as_the_sqlite_store() {
    same_answers_as_the_sqlite_store(Box::new(MemoryStore::new()));
}

/// The PostgreSQL store against SQLite: the same nodes, indexes, BM25 ranking (computed in SQL
/// there), proofs and audit.
#[test]
fn postgres_gives_the_same_answers_as_the_sqlite_store() {
    if let Some(store) = common::backends::postgres_store() {
        same_answers_as_the_sqlite_store(store);
    }
}

/// The mixed log replayed from SQLite into the empty `other`, and every answer compared.
fn same_answers_as_the_sqlite_store(other: Box<dyn Backend>) {
    let sql = mixed_log();
    let mem_store = other;
    copy_log(&sql, &*mem_store);
    let a = sql.unchecked().backend();
    let b: &dyn Backend = &*mem_store;
    let size = a.size().unwrap();
    assert_eq!(b.size().unwrap(), size);
    // Leaves, ids and every complete node.
    let (ra, rb) = (a.entries(0, size).unwrap(), b.entries(0, size).unwrap());
    for (x, y) in ra.iter().zip(&rb) {
        assert_eq!((x.index, x.id, &x.leaf), (y.index, y.id, &y.leaf));
    }
    for s in 1..=size {
        let nodes = merkle::root_nodes(s);
        assert_eq!(
            a.nodes(&nodes).unwrap(),
            b.nodes(&nodes).unwrap(),
            "size {s}"
        );
        let leaf = NodeId::leaf(s - 1);
        assert_eq!(a.nodes(&[leaf]).unwrap(), b.nodes(&[leaf]).unwrap());
    }
    // Edges, writer and registry indexes.
    for r in &ra {
        assert_eq!(a.children(&r.id).unwrap(), b.children(&r.id).unwrap());
    }
    for who in ["operator", "agent", "user", "web", "email", "nobody"] {
        assert_eq!(
            a.indices_by_writer(who).unwrap(),
            b.indices_by_writer(who).unwrap()
        );
    }
    let regs = |s: &dyn BackendRead| -> Vec<(u64, Vec<u8>)> {
        s.control_records(EntryKind::Registry, 3)
            .unwrap()
            .into_iter()
            .map(|r| (r.index, r.content))
            .collect()
    };
    assert_eq!(regs(a), regs(b as &dyn BackendRead));
    for kind in [
        EntryKind::Registry,
        EntryKind::Tombstone,
        EntryKind::Distrust,
        EntryKind::GateDecision,
    ] {
        let recs = |s: &dyn BackendRead| -> Vec<(u64, Vec<u8>, Vec<u8>)> {
            s.control_records(kind, 2)
                .unwrap()
                .into_iter()
                .map(|r| (r.index, r.leaf, r.content))
                .collect()
        };
        assert_eq!(recs(a), recs(b as &dyn BackendRead), "{kind}");
    }
    assert_eq!(
        a.index_rows(0, size).unwrap(),
        b.index_rows(0, size).unwrap()
    );
    // Search: the same BM25 ranking, in every scope.
    let queries = [
        "rent",
        "vault zurich",
        "invoice OR landlord",
        "meeting payment bill",
        "account 42",
        "nothing",
    ];
    for q in queries {
        for scope in ["acme", "acme/bot", "acme/bot/alice", "acme/botany", "other"] {
            let (terms, scope) = (
                memlineage::store::SearchTerms::parse(q),
                Scope::new(scope).unwrap(),
            );
            assert_eq!(
                a.text_index().search(&terms, &scope, 12).unwrap(),
                b.text_index().search(&terms, &scope, 12).unwrap(),
                "query {q:?} in {scope}"
            );
        }
    }
    // Through the handle: proofs, verify and retrieval agree.
    let mb = Memory::open(mem_store).unwrap();
    mb.keys().insert(&p("operator"), key(1));
    let report = mb.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
    assert_eq!(report.root, sql.verify(&mut |_, _| {}).unwrap().root);
    for r in ra.iter().step_by(13) {
        assert_eq!(
            sql.prove_inclusion(&r.id, None).unwrap(),
            mb.prove_inclusion(&r.id, None).unwrap()
        );
    }
    assert_eq!(
        sql.prove_consistency(40, size).unwrap(),
        mb.prove_consistency(40, size).unwrap()
    );
    let scope = Scope::new("acme/bot").unwrap();
    let (x, y) = (
        sql.search("rent vault", &scope, 8).unwrap(),
        mb.search("rent vault", &scope, 8).unwrap(),
    );
    assert_eq!(x.rendered, y.rendered);
    assert_eq!(x.entries.len(), 8);
}

#[test]
fn a_large_batch_signs_the_same_entries_as_single_writes() {
    // One by one: each request derives from the two before it.
    let single = setup();
    let mut reqs = Vec::new();
    let mut ids: Vec<EntryId> = Vec::new();
    for i in 0..48usize {
        let text = format!("note {i}");
        let req = match i {
            0 => WriteRequest::new(&p("web"), EntryKind::ToolOutput, text),
            1 => WriteRequest::new(&p("user"), EntryKind::UserInput, text),
            2 => derived("agent", &text, &[(ids[0], "0.9"), (ids[1], "0.3")]),
            _ => derived("agent", &text, &[(ids[i - 1], "0.6"), (ids[i - 2], "0.3")]),
        };
        ids.push(single.write(req.clone()).unwrap().id);
        reqs.push(req);
    }
    // One batch (signed on several threads where there are several cores): the parents are
    // earlier entries of the same batch.
    let batched = setup();
    let out = batched.write_batch(reqs).unwrap();
    let got: Vec<EntryId> = out.iter().map(|w| w.id).collect();
    assert_eq!(got, ids);
    for w in &out {
        let (a, b) = (single.get(&w.id).unwrap(), batched.get(&w.id).unwrap());
        assert_eq!(a.entry, b.entry);
        assert_eq!(a.label, w.label);
    }
    assert!(out.iter().any(|w| w.label == TrustLabel::DerivedUntrusted));
    assert!(batched.verify(&mut |_, _| {}).unwrap().ok());
}
