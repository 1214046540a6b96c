//! Shared test fixtures: a store with an operator, two trusted and two external principals, on
//! any backend; the backends every behaviour test runs on (`all_stores!`); and a delegating
//! backend wrapper (`delegate_backend!`) for wrappers that edit or fail what they forward.
#![allow(dead_code, unused_macros, unused_imports)]

pub mod backends;
pub mod notes;
pub mod tamper;

use ed25519_dalek::SigningKey;
use memlineage::store::Backend;
use memlineage::{
    AttributionName, IntoBackend, Memory, PrincipalName, Settings, SqliteStore, StepClock,
    WriteRequest, Written,
};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Parent};
use memlineage_core::keys;
use memlineage_core::label::{Fallback, TrustClass, Weight};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// A principal name (test literals are valid names).
pub fn p(name: &str) -> PrincipalName {
    PrincipalName::new(name).unwrap()
}

pub fn key(seed: u64) -> SigningKey {
    keys::generate(&mut ChaCha20Rng::seed_from_u64(seed))
}

/// The default (strict) label rule on `store`.
pub fn setup_with(store: impl IntoBackend) -> Memory {
    setup_with_settings(store, Settings::with_origin("test.local/log"))
}

/// The label rule `fallback` (τ 0.5) on `store`.
pub fn setup_with_fallback(store: impl IntoBackend, fallback: Fallback) -> Memory {
    let mut settings = Settings::with_origin("test.local/log");
    settings.fallback = fallback;
    setup_with_settings(store, settings)
}

/// A store whose label rule is the paper's permissive fallback (τ 0.5).
pub fn setup_permissive() -> Memory {
    setup_with_fallback(SqliteStore::in_memory().unwrap(), Fallback::Permissive)
}

pub fn setup_with_settings(store: impl IntoBackend, settings: Settings) -> Memory {
    let mem = Memory::init(store, settings, &p("operator"), key(1))
        .unwrap()
        .with_clock(StepClock::new(1_700_000_000_000, 1000));
    for (name, class, seed) in [
        ("agent", TrustClass::Trusted, 2),
        ("user", TrustClass::Trusted, 3),
        ("web", TrustClass::External, 4),
        ("email", TrustClass::External, 5),
    ] {
        let k = key(seed);
        mem.add_principal(&p(name), class, &k.verifying_key())
            .unwrap();
        mem.keys().insert(&p(name), k);
    }
    mem
}

/// Loads the fixture's secret keys (operator, agent, user, web, email) into `mem`: a second
/// handle on a store that [`setup_with`] made.
pub fn load_fixture_keys(mem: &Memory) {
    for (name, seed) in [
        ("operator", 1),
        ("agent", 2),
        ("user", 3),
        ("web", 4),
        ("email", 5),
    ] {
        mem.keys().insert(&p(name), key(seed));
    }
}

pub fn setup() -> Memory {
    setup_with(SqliteStore::in_memory().unwrap())
}

pub fn w(s: &str) -> Weight {
    s.parse().unwrap()
}

/// A derived entry by `writer` with explicit weighted parents.
pub fn derived(writer: &str, text: &str, parents: &[(EntryId, &str)]) -> WriteRequest {
    WriteRequest::new(&p(writer), EntryKind::Derived, text).with_parents(
        parents
            .iter()
            .map(|(id, wt)| Parent {
                id: *id,
                weight: w(wt),
            })
            .collect(),
        AttributionName::EXPLICIT,
    )
}

/// Two agent notes that match "vault"; returns the first, which the tampering tests edit to
/// "the vault code is 9999" behind the handle.
pub fn write_vault_notes(mem: &Memory) -> Written {
    let a = mem
        .write(WriteRequest::new(
            &p("agent"),
            EntryKind::Observation,
            "the vault code is 1234",
        ))
        .unwrap();
    mem.write(WriteRequest::new(
        &p("agent"),
        EntryKind::Observation,
        "the vault is in Zurich",
    ))
    .unwrap();
    a
}

/// After `edited` (from `write_vault_notes`) was edited: retrieval drops it for its content,
/// returns the other note, and never renders the edited text.
pub fn assert_edited_vault_note_dropped(mem: &Memory, edited: &EntryId) {
    let r = mem.search("vault", &Default::default(), 10).unwrap();
    assert_eq!(r.entries.len(), 1);
    assert_eq!(r.dropped.len(), 1);
    assert_eq!(r.dropped[0].id, *edited);
    assert!(
        r.dropped[0].reason.contains("content"),
        "{}",
        r.dropped[0].reason
    );
    assert!(!r.rendered.contains("9999"));
}

/// For each named `fn name(store: fn() -> Box<dyn Backend>)` of the calling file, one test per
/// backend: `sqlite_file::name` (a database file in a temporary directory), `sqlite_mem::name`
/// (SQLite in memory), `memory::name` (the in-memory store) and `postgres::name` (a database of
/// the binary's PostgreSQL cluster). `store` makes a fresh, empty
/// store of the backend each time it is called.
macro_rules! all_stores {
    ($($name:ident),+ $(,)?) => {
        /// The tests on an SQLite file.
        mod sqlite_file {
            $(
                #[test]
                fn $name() {
                    super::$name(crate::common::backends::sqlite_file);
                }
            )+
        }
        /// The tests on SQLite in memory.
        mod sqlite_mem {
            $(
                #[test]
                fn $name() {
                    super::$name(crate::common::backends::sqlite_mem);
                }
            )+
        }
        /// The tests on the in-memory store.
        mod memory {
            $(
                #[test]
                fn $name() {
                    super::$name(crate::common::backends::memory);
                }
            )+
        }
        /// The tests on PostgreSQL: a database each in the binary's throwaway cluster
        /// (skipped with a message when PostgreSQL is not installed, failed under `CI`).
        mod postgres {
            $(
                #[test]
                fn $name() {
                    if memlineage_pgtest::shared().is_some() {
                        super::$name(crate::common::backends::postgres);
                    }
                }
            )+
        }
    };
}
pub(crate) use all_stores;

/// The default embedding model (feature `models`; `scripts/fetch-embedding-model.sh`), or
/// `None` with a message when its files are missing — except under `CI`, where that fails.
#[cfg(feature = "models")]
pub fn embedder() -> Option<std::sync::Arc<dyn memlineage::search::TextEmbedder>> {
    match memlineage::search::embedder::load_default_embedder() {
        Ok(e) => Some(e),
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but the embedding model is missing: {e}"
            );
            eprintln!("skipping a test of the embedding model: {e}");
            None
        }
    }
}

/// The entries a crashing child process acknowledged: its stdout lines `ACK <id> <index>`.
pub fn acknowledged(stdout: &str) -> Vec<(EntryId, u64)> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ACK "))
        .map(|l| {
            let (id, index) = l.split_once(' ').unwrap();
            (id.parse::<EntryId>().unwrap(), index.parse().unwrap())
        })
        .collect()
}
