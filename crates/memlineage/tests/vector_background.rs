//! The vector index in the background (`VectorIndexing::Background`, `Memory::index_vectors`,
//! `memory::VectorIndexer`) with the real embedding model (feature `models`; without the model
//! files these tests print why and pass, except under `CI`).
//!
//! What a service relies on: attaching the model embeds nothing, writes embed nothing, the
//! indexer's steps bring the index up to the log; a forgotten entry leaves the index before
//! the next search whether or not a step ran, including one forgotten while a step's model
//! was running; the index is saved when the indexer stops and loaded by the next open.
#![cfg(feature = "models")]

mod common;

use common::{embedder, p, setup_with};
use memlineage::memory::VectorIndexer;
use memlineage::search::{SearchMode, TextEmbedder, VectorIndexOptions, VectorIndexing};
use memlineage::{Error, Memory, SqliteStore, WriteRequest};
use memlineage_core::entry::{EntryKind, Scope};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

const NOTES: &[&str] = &[
    "Alice's dentist is Dr. Okafor, at the clinic on Linden Street.",
    "Alice pays 850 euros rent each month to the landlord, Moreau.",
    "The wifi password at Alice's home is sunflower-42.",
    "Alice's favourite football team is Benfica.",
];

fn background(saved_in: Option<&Path>) -> VectorIndexOptions {
    VectorIndexOptions {
        saved_in: saved_in.map(Path::to_path_buf),
        indexing: VectorIndexing::Background,
    }
}

fn write_notes(mem: &Memory) -> Vec<memlineage_core::EntryId> {
    let ids = NOTES
        .iter()
        .map(|t| {
            mem.write(WriteRequest::new(&p("agent"), EntryKind::Observation, *t))
                .unwrap()
                .id
        })
        .collect();
    mem.checkpoint().unwrap();
    ids
}

fn texts(r: &memlineage::memory::Retrieval) -> Vec<String> {
    r.entries.iter().map(|v| v.text().unwrap()).collect()
}

fn step_to_end(mem: &Memory) {
    for _ in 0..1000 {
        if mem.index_vectors(2).unwrap().caught_up() {
            return;
        }
    }
    panic!("the index never caught up");
}

#[test]
fn writes_and_searches_embed_nothing_and_steps_catch_up() {
    let Some(e) = embedder() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mem = setup_with(SqliteStore::open(&dir.path().join("s.db")).unwrap())
        .with_vector_index(e, background(None))
        .unwrap();
    let ids = write_notes(&mem);
    let status = mem.vector_index_status().unwrap();
    assert_eq!((status.embedded, status.indexed), (0, 0), "{status:?}");
    let q = "Which doctor takes care of Alice's teeth?";
    let scope = Scope::default();
    // Not indexed yet: the semantic ranking has nothing; the lexical one finds it at once.
    assert!(
        mem.search_with(q, &scope, 4, SearchMode::Semantic)
            .unwrap()
            .entries
            .is_empty()
    );
    assert!(
        !mem.search_with("dentist", &scope, 4, SearchMode::Hybrid)
            .unwrap()
            .entries
            .is_empty()
    );
    assert_eq!(mem.vector_index_status().unwrap().embedded, 0);
    // Steps of at most two entries each, up to the log's end.
    let first = mem.index_vectors(2).unwrap();
    assert_eq!(first.considered, 2, "{first:?}");
    assert_eq!(first.log_size, mem.size().unwrap());
    step_to_end(&mem);
    let status = mem.vector_index_status().unwrap();
    assert_eq!(status.indexed, NOTES.len() as u64, "{status:?}");
    assert_eq!(status.considered, mem.size().unwrap());
    let r = mem.search_with(q, &scope, 1, SearchMode::Semantic).unwrap();
    assert_eq!(texts(&r), [NOTES[0]]);
    // A forgotten entry leaves the index before the next search, with no step between.
    mem.forget(&p("operator"), &ids[0], false, "moved away")
        .unwrap();
    let r = mem.search_with(q, &scope, 4, SearchMode::Semantic).unwrap();
    assert!(r.entries.iter().all(|v| v.entry.id() != ids[0]));
    assert_eq!(mem.vector_index_status().unwrap().indexed, 3);
}

/// The real model, and a hook that runs once, while a step of the indexer has read its
/// entries and is embedding them (the index is not held then).
struct HookedModel {
    model: Arc<dyn TextEmbedder>,
    hook: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    inside: AtomicBool,
}

impl TextEmbedder for HookedModel {
    fn model_id(&self) -> &str {
        self.model.model_id()
    }
    fn dim(&self) -> usize {
        self.model.dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Error> {
        // Only a step embeds several texts; a query is one.
        if texts.len() > 1 && !self.inside.swap(true, Ordering::SeqCst) {
            let hook = self.hook.lock().unwrap().take();
            if let Some(h) = hook {
                h();
            }
        }
        self.model.embed(texts)
    }
}

#[test]
fn an_entry_forgotten_while_a_step_embeds_it_never_enters_the_index() {
    let Some(e) = embedder() else { return };
    let dir = tempfile::tempdir().unwrap();
    let hooked = Arc::new(HookedModel {
        model: e,
        hook: Mutex::new(None),
        inside: AtomicBool::new(false),
    });
    let mem = setup_with(SqliteStore::open(&dir.path().join("s.db")).unwrap())
        .with_vector_index(hooked.clone(), background(None))
        .unwrap();
    let ids = write_notes(&mem);
    let mem = Arc::new(mem);
    // While the step embeds the notes: forget the wifi note and search (the search applies
    // the tombstone to an index that does not hold the note yet).
    let slot: Arc<OnceLock<Arc<Memory>>> = Arc::new(OnceLock::new());
    slot.set(Arc::clone(&mem)).ok().unwrap();
    let wifi = ids[2];
    let searched = Arc::new(AtomicBool::new(false));
    *hooked.hook.lock().unwrap() = Some(Box::new({
        let (slot, searched) = (Arc::clone(&slot), Arc::clone(&searched));
        move || {
            let mem = slot.get().unwrap();
            mem.forget(&p("operator"), &wifi, false, "rotated").unwrap();
            mem.search_with("wifi", &Scope::default(), 4, SearchMode::Semantic)
                .unwrap();
            searched.store(true, Ordering::SeqCst);
        }
    }));
    let step = mem.index_vectors(64).unwrap();
    assert!(
        searched.load(Ordering::SeqCst),
        "the hook did not run inside the step"
    );
    assert!(step.caught_up(), "{step:?}");
    let status = mem.vector_index_status().unwrap();
    assert_eq!(
        status.indexed, 3,
        "the forgotten note was indexed: {status:?}"
    );
    let r = mem
        .search_with(
            "How do I get online at Alice's house?",
            &Scope::default(),
            8,
            SearchMode::Semantic,
        )
        .unwrap();
    assert!(r.entries.iter().all(|v| v.entry.id() != wifi));
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
}

#[test]
fn the_indexer_thread_indexes_new_writes_and_saves_when_stopped() {
    let Some(e) = embedder() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let vectors = dir.path().join("s.db.vectors");
    let mem = Arc::new(
        setup_with(SqliteStore::open(&db).unwrap())
            .with_vector_index(Arc::clone(&e), background(Some(&vectors)))
            .unwrap(),
    );
    assert!(
        mem.vector_index_status()
            .unwrap()
            .snapshot
            .unwrap()
            .starts_with("rebuilt: no snapshot"),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let indexer = VectorIndexer::start(Arc::clone(&mem), Some(vectors.clone()), {
        let seen = Arc::clone(&seen);
        move |p| seen.lock().unwrap().push(p)
    })
    .unwrap();
    write_notes(&mem);
    indexer.waker().wake();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while mem.vector_index_status().unwrap().indexed < NOTES.len() as u64 {
        assert!(
            std::time::Instant::now() < deadline,
            "the indexer did not catch up"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    indexer.stop().unwrap();
    assert!(seen.lock().unwrap().iter().any(|p| p.caught_up()));
    drop(mem);
    // The next open loads what was saved at the stop.
    let mem = Memory::open_at(&memlineage::StoreLocation::Sqlite(db))
        .unwrap()
        .with_vector_index(e, background(Some(&vectors)))
        .unwrap();
    let status = mem.vector_index_status().unwrap();
    assert!(
        status.snapshot.as_deref().unwrap().starts_with("loaded"),
        "{status:?}"
    );
    assert_eq!((status.indexed, status.embedded), (NOTES.len() as u64, 0));
    let r = mem
        .search_with(
            "Which doctor takes care of Alice's teeth?",
            &Scope::default(),
            1,
            SearchMode::Semantic,
        )
        .unwrap();
    assert_eq!(texts(&r), [NOTES[0]]);
}

#[test]
fn index_vectors_without_a_model_says_what_to_do() {
    let mem = common::setup();
    let e = mem.index_vectors(8).unwrap_err();
    assert!(e.to_string().contains("embedding model"), "{e}");
}
