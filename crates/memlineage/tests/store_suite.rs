//! The backend conformance suite: one set of tests, run on every backend (`all_stores!`:
//! an SQLite file, SQLite in memory, the in-memory store; PostgreSQL where it is built and a
//! server can be started). What a backend must do — dense indices, Merkle nodes written once,
//! reads by index, id, id range and writer, edges, control records by kind, index copies,
//! forgotten rows with sticky erasure, raised labels, checkpoints, settings, scoped full-text
//! search, stored embeddings — and that a failed append changes nothing. The behaviour of the handle on each
//! backend is tested in `memory_write.rs` and `gate_banking.rs`; the same log on every backend
//! gives the same answers in `memory_store.rs`.

mod common;

use common::{derived, p, setup_with};
use memlineage::error::{IdPrefixError, IntegrityCheck};
use memlineage::store::{Backend, EmbeddingRow, NewRecord, SearchTerms};
use memlineage::unchecked::{self, Effect};
use memlineage::{Error, ErrorKind, IdPrefix, Memory, WriteRequest};
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::label::TrustLabel;
use memlineage_core::merkle::{self, MemoryTree, NodeId};
use memlineage_core::records::DistrustTarget;
use memlineage_core::{EntryId, Hash256};

common::all_stores!(
    nodes_match_a_reference_tree_at_every_size,
    reads_by_index_id_range_writer_and_edges,
    id_prefixes_resolve_by_range,
    id_prefixes_resolve_within_visible_scopes,
    failed_appends_change_nothing,
    forgetting_is_sticky_and_distrust_raises,
    search_is_scoped_ranked_and_live_only,
    control_records_and_index_copies,
    checkpoints_and_settings,
);

/// Stored embeddings (issue 17), kept by every backend (PostgreSQL since its schema version 5;
/// skipped where no PostgreSQL server can be started, unless `CI` is set).
mod embeddings {
    #[test]
    fn postgres() {
        if crate::common::backends::postgres_store().is_none() {
            return;
        }
        super::embeddings_are_kept_by_model_for_live_entries_only(
            crate::common::backends::postgres,
        );
    }
    #[test]
    fn audited_postgres() {
        if crate::common::backends::postgres_store().is_none() {
            return;
        }
        super::verify_reports_embeddings_that_do_not_check(crate::common::backends::postgres);
    }
    #[test]
    fn sqlite_file() {
        super::embeddings_are_kept_by_model_for_live_entries_only(
            crate::common::backends::sqlite_file,
        );
    }
    #[test]
    fn sqlite_mem() {
        super::embeddings_are_kept_by_model_for_live_entries_only(
            crate::common::backends::sqlite_mem,
        );
    }
    #[test]
    fn memory() {
        super::embeddings_are_kept_by_model_for_live_entries_only(crate::common::backends::memory);
    }
    #[test]
    fn audited_sqlite_file() {
        super::verify_reports_embeddings_that_do_not_check(crate::common::backends::sqlite_file);
    }
    #[test]
    fn audited_memory() {
        super::verify_reports_embeddings_that_do_not_check(crate::common::backends::memory);
    }
}

fn raw(mem: &Memory) -> &dyn Backend {
    mem.unchecked().backend()
}

fn note(mem: &Memory, writer: &str, text: &str) -> EntryId {
    mem.write(WriteRequest::new(&p(writer), EntryKind::Observation, text))
        .unwrap()
        .id
}

fn nodes_match_a_reference_tree_at_every_size(store: fn() -> Box<dyn Backend>) {
    let mem = setup_with(store());
    let mut tree = MemoryTree::new();
    for v in mem.log(0, u64::MAX).unwrap() {
        tree.append(&v.entry.to_leaf());
    }
    for batch in [1usize, 2, 5, 16, 3, 37] {
        let start = mem.size().unwrap();
        let reqs: Vec<WriteRequest> = (0..batch)
            .map(|i| {
                WriteRequest::new(
                    &p("agent"),
                    EntryKind::Observation,
                    format!("e {start} {i}"),
                )
            })
            .collect();
        let written = mem.write_batch(reqs).unwrap();
        assert_eq!(written[0].index, start, "indices are dense");
        for v in mem.log(start, batch as u64).unwrap() {
            tree.append(&v.entry.to_leaf());
        }
        let size = mem.size().unwrap();
        assert_eq!(size, tree.len());
        for s in 1..=size {
            assert_eq!(
                mem.root_at(s).unwrap(),
                tree.root_at(s).unwrap(),
                "size {s}"
            );
            let leaf = raw(&mem).nodes(&[NodeId::leaf(s - 1)]).unwrap();
            assert_eq!(leaf.len(), 1);
        }
    }
    let err = raw(&mem).nodes(&[NodeId::new(0, 10_000)]).unwrap_err();
    assert!(
        matches!(&err, Error::Integrity(i) if i.check == IntegrityCheck::MerkleNode),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("(level 0, index 10000) is missing"),
        "{err}"
    );
}

fn reads_by_index_id_range_writer_and_edges(store: fn() -> Box<dyn Backend>) {
    let mem = setup_with(store());
    let a = note(&mem, "agent", "alpha");
    let b = note(&mem, "user", "beta");
    let c = mem
        .write(derived("agent", "gamma", &[(a, "0.7"), (b, "0.3")]))
        .unwrap();
    let d = mem.write(derived("agent", "delta", &[(a, "0.9")])).unwrap();
    let r = raw(&mem);
    let ga = r.entry_by_id(&a).unwrap().unwrap();
    assert_eq!(ga.content.as_deref(), Some(&b"alpha"[..]));
    assert_eq!(r.entry_by_index(ga.index).unwrap().unwrap().id, a);
    assert!(r.entry_by_index(1_000).unwrap().is_none());
    assert!(
        r.entry_by_id(&EntryId(Hash256::of(b"no")))
            .unwrap()
            .is_none()
    );
    let size = r.size().unwrap();
    assert_eq!(size, d.index + 1);
    let range: Vec<u64> = r
        .entries(c.index - 1, 2)
        .unwrap()
        .iter()
        .map(|e| e.index)
        .collect();
    assert_eq!(range, [c.index - 1, c.index]);
    assert!(r.entries(size + 3, 5).unwrap().is_empty());
    assert_eq!(r.entries(d.index, u64::MAX).unwrap().len(), 1);
    // Many at once: in the order asked, duplicates and gaps kept.
    let by_index = r
        .entries_by_index(&[d.index, 999, ga.index, d.index])
        .unwrap();
    let got: Vec<Option<EntryId>> = by_index.iter().map(|e| e.as_ref().map(|e| e.id)).collect();
    assert_eq!(got, [Some(d.id), None, Some(a), Some(d.id)]);
    let ghost = EntryId(Hash256::of(b"ghost"));
    let by_id = r.entries_by_id(&[c.id, ghost, c.id]).unwrap();
    let got: Vec<Option<u64>> = by_id.iter().map(|e| e.as_ref().map(|e| e.index)).collect();
    assert_eq!(got, [Some(c.index), None, Some(c.index)]);
    // Writers and edges.
    let agent = r.indices_by_writer("agent").unwrap();
    assert_eq!(agent, [ga.index, c.index, d.index]);
    assert!(r.indices_by_writer("nobody").unwrap().is_empty());
    let mut kids = vec![c.id, d.id];
    kids.sort();
    let children: Vec<EntryId> = r.children(&a).unwrap().iter().map(|(k, _)| *k).collect();
    assert_eq!(children, kids, "children sorted by id");
    assert_eq!(r.children(&b).unwrap(), [(c.id, common::w("0.3"))]);
    assert!(r.children(&c.id).unwrap().is_empty());
    assert_eq!(
        r.edge_weights(&[(a, d.id), (b, d.id), (a, c.id)]).unwrap(),
        [Some(common::w("0.9")), None, Some(common::w("0.7"))]
    );
    if let Some(n) = r.edge_count().unwrap() {
        assert_eq!(n, 3);
    }
    // Labels without the leaf.
    let labels = r.labels_by_id(&c.id).unwrap().unwrap();
    assert_eq!(
        (labels.index, labels.signed, labels.effective),
        (c.index, c.label, None)
    );
    assert!(r.labels_by_id(&ghost).unwrap().is_none());
    // Many at once: in the order asked, unknown ids `None`, duplicates kept, each as one read.
    let many = r.labels_by_ids(&[d.id, ghost, c.id, d.id]).unwrap();
    let one = |id: &EntryId| r.labels_by_id(id).unwrap();
    assert_eq!(many, [one(&d.id), None, one(&c.id), one(&d.id)]);
    assert!(r.labels_by_ids(&[]).unwrap().is_empty());
    // A snapshot reads the same.
    let snap = r.snapshot().unwrap();
    assert_eq!(snap.size().unwrap(), size);
    assert_eq!(snap.entry_by_id(&a).unwrap().unwrap().index, ga.index);
    assert_eq!(snap.children(&a).unwrap().len(), 2);
}

fn id_prefixes_resolve_by_range(store: fn() -> Box<dyn Backend>) {
    let mem = setup_with(store());
    let ids: Vec<EntryId> = (0..40)
        .map(|i| note(&mem, "agent", &format!("n {i}")))
        .collect();
    let r = raw(&mem);
    let mut all: Vec<EntryId> = r
        .entries(0, u64::MAX)
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    all.sort();
    // `ids_from` is an ordered range of the id index.
    assert_eq!(r.ids_from(&all[3], 4).unwrap(), all[3..7]);
    assert_eq!(
        r.ids_from(&EntryId(Hash256::default()), 2).unwrap(),
        all[..2]
    );
    assert!(r.ids_from(&EntryId(Hash256([0xff; 32])), 2).unwrap().len() <= 1);
    for id in &ids {
        let hex = id.to_hex();
        for len in [8, 13, 64] {
            let prefix: IdPrefix = hex[..len].parse().unwrap();
            assert_eq!(mem.resolve_prefix(&prefix).unwrap(), *id, "{len}");
        }
    }
    // A prefix of no entry: the neighbour found by the range read does not match it.
    let missing = (0u32..)
        .map(|n| format!("{n:08x}"))
        .find(|h| !all.iter().any(|id| id.to_hex().starts_with(h)))
        .unwrap();
    let err = mem.resolve_prefix(&missing.parse().unwrap()).unwrap_err();
    assert!(
        matches!(err, Error::IdPrefix(IdPrefixError::NoMatch { .. })),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

fn id_prefixes_resolve_within_visible_scopes(store: fn() -> Box<dyn Backend>) {
    let mem = setup_with(store());
    let (acme, other) = (Scope::new("acme").unwrap(), Scope::new("other").unwrap());
    let mut by_scope = Vec::new();
    for i in 0..30 {
        let scope = if i % 2 == 0 { &acme } else { &other };
        let w = mem
            .write(
                WriteRequest::new(&p("agent"), EntryKind::Observation, format!("s {i}"))
                    .with_scope(scope.clone()),
            )
            .unwrap();
        by_scope.push((w.id, scope.clone()));
    }
    for (id, scope) in &by_scope {
        let prefix: IdPrefix = id.to_hex()[..8].parse().unwrap();
        let mine = |s: &Scope| s == scope;
        assert_eq!(mem.resolve_prefix_visible(&prefix, &mine).unwrap(), *id);
        // Outside the caller's scopes an entry is not there: the same answer as no entry.
        let theirs = |s: &Scope| s != scope;
        let err = mem.resolve_prefix_visible(&prefix, &theirs).unwrap_err();
        assert!(
            matches!(err, Error::IdPrefix(IdPrefixError::NoMatch { .. })),
            "{err}"
        );
        // A full id is returned as given (the caller checks its scope when it reads it).
        let full: IdPrefix = (*id).into();
        assert_eq!(mem.resolve_prefix_visible(&full, &theirs).unwrap(), *id);
    }
}

fn failed_appends_change_nothing(store: fn() -> Box<dyn Backend>) {
    let mem = setup_with(store());
    let a = note(&mem, "agent", "the vault code");
    let size = mem.size().unwrap();
    let root = mem.root_at(size).unwrap();
    let ghost = EntryId(Hash256::of(b"ghost"));
    // Refused by the handle's guard, inside the transaction.
    let err = mem
        .write_batch(vec![
            WriteRequest::new(&p("agent"), EntryKind::Observation, "vault one"),
            derived("agent", "vault two", &[(ghost, "1")]),
        ])
        .unwrap_err();
    assert!(matches!(err, Error::UnknownParent(_)), "{err}");
    // Refused by the backend: an id already in the log, or twice in the batch.
    let record = |text: &str| {
        let view = mem.get(&a).unwrap();
        NewRecord {
            entry: view.entry,
            content: text.as_bytes().to_vec(),
            search_text: Some(text.to_string()),
        }
    };
    assert!(mem.unchecked().append(&[record("vault")]).is_err());
    let fresh = mem
        .write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            "vault three",
        ))
        .unwrap();
    let size = size + 1;
    let root = {
        assert_ne!(mem.root_at(size).unwrap(), root);
        mem.root_at(size).unwrap()
    };
    let twice = {
        let view = mem.get(&fresh.id).unwrap();
        NewRecord {
            entry: view.entry,
            content: b"vault three".to_vec(),
            search_text: Some("vault three".into()),
        }
    };
    assert!(unchecked::append_to(raw(&mem), &[twice.clone(), twice.clone()], &[], &[]).is_err());
    // A forget effect whose target does not exist.
    let err = mem
        .unchecked()
        .append_with_effects(
            &[],
            &[Effect::Forget {
                target: ghost,
                tombstone: ghost,
                erase: true,
            }],
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    // Nothing of any of them is there.
    assert_eq!(mem.size().unwrap(), size);
    assert_eq!(mem.root_at(size).unwrap(), root);
    assert!(raw(&mem).nodes(&[NodeId::leaf(size)]).is_err());
    let hits = mem.search("vault", &Scope::default(), 10).unwrap();
    let mut texts: Vec<String> = hits.entries.iter().filter_map(|v| v.text()).collect();
    texts.sort();
    assert_eq!(texts, ["the vault code", "vault three"]);
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
    // And the next append lands where it should.
    let next = note(&mem, "agent", "after");
    assert_eq!(mem.get(&next).unwrap().index, size);
}

fn forgetting_is_sticky_and_distrust_raises(store: fn() -> Box<dyn Backend>) {
    let mem = setup_with(store());
    let a = note(&mem, "agent", "the vault code");
    let b = note(&mem, "web", "the vault place");
    let child = mem
        .write(derived("agent", "go to the vault", &[(b, "0.9")]))
        .unwrap();
    let scope = Scope::default();
    assert_eq!(mem.search("vault", &scope, 10).unwrap().entries.len(), 3);
    let t1 = mem.forget(&p("operator"), &a, true, "erase").unwrap();
    let stored = raw(&mem).entry_by_id(&a).unwrap().unwrap();
    assert_eq!((stored.forgotten_by, stored.content), (Some(t1.id), None));
    // A later tombstone without erasure is recorded, and the erasure stays.
    let t2 = mem.forget(&p("operator"), &a, false, "again").unwrap();
    let stored = raw(&mem).entry_by_id(&a).unwrap().unwrap();
    assert_eq!((stored.forgotten_by, stored.content), (Some(t2.id), None));
    let row = raw(&mem).index_rows(stored.index, 1).unwrap();
    assert_eq!(row[0].erased, Some(true));
    assert_eq!(mem.search("vault", &scope, 10).unwrap().entries.len(), 2);
    // Distrust raises the entry and its strong descendant.
    mem.distrust(&p("operator"), DistrustTarget::Entry(b), "bad")
        .unwrap();
    let r = raw(&mem);
    assert_eq!(
        r.entry_by_id(&b).unwrap().unwrap().effective_label,
        Some(TrustLabel::External)
    );
    assert_eq!(
        r.labels_by_id(&child.id)
            .unwrap()
            .unwrap()
            .effective_label(),
        TrustLabel::DerivedUntrusted
    );
    // Read together, the raised labels are the same as read one by one.
    let both = r.labels_by_ids(&[child.id, b]).unwrap();
    assert_eq!(
        both,
        [
            r.labels_by_id(&child.id).unwrap(),
            r.labels_by_id(&b).unwrap()
        ]
    );
    assert_eq!(both[1].unwrap().effective, Some(TrustLabel::External));
    assert!(mem.verify(&mut |_, _| {}).unwrap().ok());
}

fn search_is_scoped_ranked_and_live_only(store: fn() -> Box<dyn Backend>) {
    let mem = setup_with(store());
    let mut index = std::collections::HashMap::new();
    for (scope, text) in [
        ("acme/bot", "rent is due"),
        ("acme/bot/alice", "rent reminder rent"),
        ("acme/botany", "rent of the greenhouse"),
        ("other", "rent elsewhere"),
    ] {
        let w = mem
            .write(
                WriteRequest::new(&p("agent"), EntryKind::Observation, text)
                    .with_scope(Scope::new(scope).unwrap()),
            )
            .unwrap();
        index.insert(text, w.index);
    }
    let r = raw(&mem);
    let search = |q: &str, scope: &str, limit| {
        r.text_index()
            .search(&SearchTerms::parse(q), &Scope::new(scope).unwrap(), limit)
            .unwrap()
    };
    let mut hits = search("rent", "acme/bot", 10);
    hits.sort_unstable();
    assert_eq!(hits, [index["rent is due"], index["rent reminder rent"]]);
    // BM25: two occurrences in a short text beat one; the limit applies after the scope.
    assert_eq!(search("RENT", "acme", 1), [index["rent reminder rent"]]);
    assert!(search("", "acme", 10).is_empty());
    assert!(search("nothing here", "acme", 10).is_empty());
    assert!(search("rent", "zzz", 10).is_empty());
    // Control records are not indexed; queries are never parsed as a query language.
    assert!(search("registry operator", "default", 10).is_empty());
    assert!(search("rent\" OR NEAR(x", "acme/bot/alice", 10).len() == 1);
}

fn control_records_and_index_copies(store: fn() -> Box<dyn Backend>) {
    let mem = setup_with(store());
    let a = note(&mem, "agent", "alpha");
    let t = mem
        .forget(&p("operator"), &a, true, "forget alpha")
        .unwrap();
    let r = raw(&mem);
    let registry = r.control_records(EntryKind::Registry, 0).unwrap();
    assert_eq!(registry.len(), 5, "genesis and four principals");
    assert!(registry.windows(2).all(|w| w[0].index < w[1].index));
    assert_eq!(r.control_records(EntryKind::Registry, 3).unwrap().len(), 2);
    let tomb = r.control_records(EntryKind::Tombstone, 0).unwrap();
    assert_eq!(tomb.len(), 1);
    assert_eq!(tomb[0].index, t.index);
    assert!(
        r.control_records(EntryKind::Tombstone, t.index + 1)
            .unwrap()
            .is_empty()
    );
    assert!(
        r.control_records(EntryKind::Distrust, 0)
            .unwrap()
            .is_empty()
    );
    // A content kind whose content is erased: an integrity error naming the record.
    let err = r.control_records(EntryKind::Observation, 0).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Integrity, "{err}");
    let size = r.size().unwrap();
    let rows = r.index_rows(0, size).unwrap();
    assert_eq!(rows.len() as u64, size);
    let alpha = rows.iter().find(|row| row.index == t.index - 1).unwrap();
    assert_eq!(
        (
            alpha.scope.as_str(),
            alpha.writer.as_str(),
            alpha.kind.as_str(),
            alpha.label.as_str(),
            alpha.erased
        ),
        ("default", "agent", "observation", "TRUSTED", Some(true))
    );
    let last = rows.last().unwrap();
    assert_eq!((last.kind.as_str(), last.erased), ("tombstone", None));
    assert!(r.index_rows(size + 5, 10).unwrap().is_empty());
}

fn checkpoints_and_settings(store: fn() -> Box<dyn Backend>) {
    let backend = store();
    assert_eq!(backend.setting("origin").unwrap(), None);
    assert_eq!(backend.latest_checkpoint().unwrap(), None);
    // An empty store cannot be opened; settings alone make it "initialised".
    let settings = [("origin".to_string(), "test.local/x".to_string())];
    unchecked::append_to(&*backend, &[], &[], &settings).unwrap();
    assert_eq!(
        backend.setting("origin").unwrap().as_deref(),
        Some("test.local/x")
    );
    assert!(
        unchecked::append_to(&*backend, &[], &[], &settings).is_err(),
        "set once"
    );
    let err = Memory::init(
        backend,
        memlineage::Settings::with_origin("o.example/x"),
        &p("op"),
        common::key(1),
    )
    .err()
    .unwrap();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    // Checkpoints: the latest is the one of the largest size; a size saved again is replaced.
    let mem = setup_with(store());
    mem.checkpoint().unwrap();
    note(&mem, "agent", "x");
    let second = mem.checkpoint().unwrap();
    let r = raw(&mem);
    assert_eq!(
        r.latest_checkpoint().unwrap().as_deref(),
        Some(second.as_str())
    );
    unchecked::save_checkpoint(r, 2, "an old note").unwrap();
    assert_eq!(
        r.latest_checkpoint().unwrap().as_deref(),
        Some(second.as_str())
    );
    let size = mem.size().unwrap();
    unchecked::save_checkpoint(r, size, "replaced").unwrap();
    assert_eq!(r.latest_checkpoint().unwrap().as_deref(), Some("replaced"));
    // Notes by size, largest first, bounded above and in number (witnesses, readers).
    let notes = r.checkpoint_notes(u64::MAX, 10).unwrap();
    let sizes: Vec<u64> = notes.iter().map(|n| n.size).collect();
    assert!(sizes.windows(2).all(|w| w[0] > w[1]), "{sizes:?}");
    assert_eq!((sizes[0], notes[0].note.as_str()), (size, "replaced"));
    assert!(sizes.contains(&2));
    let below: Vec<u64> = r
        .checkpoint_notes(size - 1, 10)
        .unwrap()
        .iter()
        .map(|n| n.size)
        .collect();
    assert_eq!(below, sizes[1..].to_vec());
    assert_eq!(r.checkpoint_notes(u64::MAX, 1).unwrap().len(), 1);
    assert!(r.checkpoint_notes(1, 10).unwrap().is_empty());
    for k in ["origin", "tau", "fallback", "operator"] {
        assert!(r.setting(k).unwrap().is_some(), "{k}");
    }
    assert_eq!(r.setting("operator").unwrap().as_deref(), Some("operator"));
    // Merkle leaf of the last entry equals the hash of its stored leaf.
    let last = r.entry_by_index(size - 1).unwrap().unwrap();
    assert_eq!(
        r.nodes(&[NodeId::leaf(size - 1)]).unwrap()[0],
        merkle::leaf_hash(&last.leaf)
    );
}

/// `verify` audits the stored embeddings (issue 17): rows bound to live entries pass; an edited
/// vector, a row for a control record or a forgotten entry, and a row past the log's end are
/// each reported, for that row only.
fn verify_reports_embeddings_that_do_not_check(store: fn() -> Box<dyn Backend>) {
    let mem = setup_with(store());
    let a = note(&mem, "agent", "first");
    let b = note(&mem, "agent", "second");
    let gone = note(&mem, "agent", "third");
    mem.checkpoint().unwrap();
    let bound = |id: &EntryId, model: &str, vector: Vec<u8>| {
        let v = mem.get(id).unwrap();
        EmbeddingRow {
            index: v.index,
            model: model.to_string(),
            binding: memlineage::search::stored::binding(
                model,
                id,
                &v.entry.body().content_hash,
                &vector,
            ),
            vector,
        }
    };
    let (ia, ib, igone) = (
        mem.get(&a).unwrap().index,
        mem.get(&b).unwrap().index,
        mem.get(&gone).unwrap().index,
    );
    raw(&mem)
        .save_embeddings(&[
            bound(&a, "m@1", vec![1; 8]),
            bound(&b, "m@1", vec![2; 8]),
            bound(&a, "m@2", vec![3; 8]),
        ])
        .unwrap();
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
    // An edited vector (its binding kept), a row for the genesis record, and — after the
    // entry is forgotten — nothing for it (the tombstone removed its row).
    let mut edited = bound(&b, "m@1", vec![2; 8]);
    edited.vector[0] ^= 1;
    let mut genesis = bound(&a, "m@2", vec![4; 8]);
    genesis.index = 0;
    raw(&mem).save_embeddings(&[edited, genesis]).unwrap();
    mem.forget(&p("operator"), &gone, false, "stale").unwrap();
    mem.checkpoint().unwrap();
    let report = mem.verify(&mut |_, _| {}).unwrap();
    let mut problems: Vec<(Option<u64>, String)> = report
        .problems
        .iter()
        .map(|p| (p.index, p.reason.clone()))
        .collect();
    problems.sort();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(problems[0].0, Some(0));
    assert!(
        problems[0].1.starts_with(
            "the stored embedding of model `m@2` is for an entry that has no searchable content"
        ),
        "{problems:?}"
    );
    assert_eq!(problems[1].0, Some(ib));
    assert!(
        problems[1]
            .1
            .starts_with("the stored embedding of model `m@1` does not match its binding"),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .all(|(i, _)| *i != Some(ia) && *i != Some(igone))
    );
}

fn embedding(index: u64, model: &str, byte: u8) -> EmbeddingRow {
    EmbeddingRow {
        index,
        model: model.to_string(),
        vector: vec![byte; 8],
        binding: Hash256::of(&[byte]),
    }
}

/// Stored embeddings (derived rows the handle checks): kept by model and index, replaced by a
/// later save, never kept for an index past the log or a forgotten entry, and deleted when
/// their entry is forgotten.
fn embeddings_are_kept_by_model_for_live_entries_only(store: fn() -> Box<dyn Backend>) {
    let mem = setup_with(store());
    let a = mem.size().unwrap();
    note(&mem, "agent", "first");
    note(&mem, "agent", "second");
    let gone = note(&mem, "agent", "third");
    let backend = raw(&mem);
    backend
        .save_embeddings(&[
            embedding(a, "m@1", 1),
            embedding(a + 1, "m@1", 2),
            embedding(a + 2, "m@1", 3),
            embedding(a, "m@2", 4),
            // Past the end of the log: not kept.
            embedding(a + 99, "m@1", 5),
        ])
        .unwrap();
    let got = backend.embeddings("m@1", 0, u64::MAX).unwrap();
    assert_eq!(
        got,
        [
            embedding(a, "m@1", 1),
            embedding(a + 1, "m@1", 2),
            embedding(a + 2, "m@1", 3)
        ]
    );
    assert_eq!(
        backend.embeddings("m@1", a + 1, 1).unwrap(),
        [embedding(a + 1, "m@1", 2)]
    );
    assert_eq!(
        backend.embeddings("m@2", 0, u64::MAX).unwrap(),
        [embedding(a, "m@2", 4)]
    );
    assert!(backend.embeddings("m@3", 0, u64::MAX).unwrap().is_empty());
    assert_eq!(backend.embedding_models().unwrap(), ["m@1", "m@2"]);
    // A later save replaces.
    backend.save_embeddings(&[embedding(a, "m@1", 9)]).unwrap();
    assert_eq!(
        backend.embeddings("m@1", a, 1).unwrap(),
        [embedding(a, "m@1", 9)]
    );
    // Forgetting deletes the entry's rows of every model, and none is kept for it after.
    mem.forget(&p("operator"), &gone, false, "stale").unwrap();
    let backend = raw(&mem);
    assert!(backend.embeddings("m@1", a + 2, 1).unwrap().is_empty());
    backend
        .save_embeddings(&[embedding(a + 2, "m@1", 3)])
        .unwrap();
    assert!(backend.embeddings("m@1", a + 2, 1).unwrap().is_empty());
    assert_eq!(backend.embeddings("m@1", 0, u64::MAX).unwrap().len(), 2);
    // The snapshot reads them too.
    assert_eq!(
        backend.snapshot().unwrap().embedding_models().unwrap(),
        ["m@1", "m@2"]
    );
    assert_eq!(
        backend
            .snapshot()
            .unwrap()
            .embeddings("m@1", 0, u64::MAX)
            .unwrap()
            .len(),
        2
    );
}
