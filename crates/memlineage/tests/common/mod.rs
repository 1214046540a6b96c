//! Shared test fixtures: a store with an operator, a trusted agent and an external source, on
//! either backend, and `both_stores!`, which runs a behaviour test on each backend.
#![allow(dead_code)]

use ed25519_dalek::SigningKey;
use memlineage::store::Store;
use memlineage::{Memory, Settings, SqliteStore, StepClock, WriteRequest, Written};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Parent};
use memlineage_core::keys;
use memlineage_core::label::{Fallback, TrustClass, Weight};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

pub fn key(seed: u64) -> SigningKey {
    keys::generate(&mut ChaCha20Rng::seed_from_u64(seed))
}

/// The default (strict) label rule on `store`.
pub fn setup_with<S: Store>(store: S) -> Memory<S> {
    setup_with_settings(store, Settings::with_origin("test.local/log"))
}

/// The label rule `fallback` (τ 0.5) on `store`.
pub fn setup_with_fallback<S: Store>(store: S, fallback: Fallback) -> Memory<S> {
    let mut settings = Settings::with_origin("test.local/log");
    settings.fallback = fallback;
    setup_with_settings(store, settings)
}

/// A store whose label rule is the paper's permissive fallback (τ 0.5).
pub fn setup_permissive() -> Memory<SqliteStore> {
    setup_with_fallback(SqliteStore::in_memory().unwrap(), Fallback::Permissive)
}

pub fn setup_with_settings<S: Store>(store: S, settings: Settings) -> Memory<S> {
    let mem = Memory::init(store, settings, "operator", key(1))
        .unwrap()
        .with_clock(StepClock::new(1_700_000_000_000, 1000));
    for (name, class, seed) in [
        ("agent", TrustClass::Trusted, 2),
        ("user", TrustClass::Trusted, 3),
        ("web", TrustClass::External, 4),
        ("email", TrustClass::External, 5),
    ] {
        let k = key(seed);
        mem.add_principal(name, class, &k.verifying_key()).unwrap();
        mem.keys().insert(name, k);
    }
    mem
}

pub fn setup() -> Memory<SqliteStore> {
    setup_with(SqliteStore::in_memory().unwrap())
}

pub fn w(s: &str) -> Weight {
    s.parse().unwrap()
}

/// A derived entry by `writer` with explicit weighted parents.
pub fn derived(writer: &str, text: &str, parents: &[(EntryId, &str)]) -> WriteRequest {
    WriteRequest::new(writer, EntryKind::Derived, text).with_parents(
        parents
            .iter()
            .map(|(id, wt)| Parent {
                id: *id,
                weight: w(wt),
            })
            .collect(),
        "explicit",
    )
}

/// Two agent notes that match "vault"; returns the first, which the tampering tests edit to
/// "the vault code is 9999" behind the handle.
pub fn write_vault_notes<S: Store>(mem: &Memory<S>) -> Written {
    let a = mem
        .write(WriteRequest::new(
            "agent",
            EntryKind::Observation,
            "the vault code is 1234",
        ))
        .unwrap();
    mem.write(WriteRequest::new(
        "agent",
        EntryKind::Observation,
        "the vault is in Zurich",
    ))
    .unwrap();
    a
}

/// After `edited` (from `write_vault_notes`) was edited: retrieval drops it for its content,
/// returns the other note, and never renders the edited text.
pub fn assert_edited_vault_note_dropped<S: Store>(mem: &Memory<S>, edited: &EntryId) {
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

/// For each named `fn name<S: Store>(store: fn() -> S)` of the calling file, a test
/// `sqlite::name` on `SqliteStore::in_memory()` and a test `memory::name` on `MemoryStore`.
/// `store` makes a fresh, empty store of the backend each time it is called.
#[allow(unused_macros)]
macro_rules! both_stores {
    ($($name:ident),+ $(,)?) => {
        /// The behaviour tests on the SQLite store (in memory).
        mod sqlite {
            fn store() -> memlineage::SqliteStore {
                memlineage::SqliteStore::in_memory().unwrap()
            }
            $(
                #[test]
                fn $name() {
                    super::$name(store);
                }
            )+
        }
        /// The same tests on the in-memory store.
        mod memory {
            $(
                #[test]
                fn $name() {
                    super::$name(memlineage::store::MemoryStore::new);
                }
            )+
        }
    };
}
#[allow(unused_imports)]
pub(crate) use both_stores;
