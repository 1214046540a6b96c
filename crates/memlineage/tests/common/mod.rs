//! Shared test fixtures: a store with an operator, a trusted agent and an external source.
#![allow(dead_code)]

use ed25519_dalek::SigningKey;
use memlineage::{Memory, Settings, SqliteStore, StepClock};
use memlineage_core::keys;
use memlineage_core::label::TrustClass;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

pub fn key(seed: u64) -> SigningKey {
    keys::generate(&mut ChaCha20Rng::seed_from_u64(seed))
}

pub fn setup_with(store: SqliteStore) -> Memory<SqliteStore> {
    setup_with_settings(store, Settings::with_origin("test.local/log"))
}

/// A store whose label rule is the paper's permissive fallback (τ 0.5).
pub fn setup_permissive() -> Memory<SqliteStore> {
    let mut settings = Settings::with_origin("test.local/log");
    settings.fallback = memlineage_core::label::Fallback::Permissive;
    setup_with_settings(SqliteStore::in_memory().unwrap(), settings)
}

pub fn setup_with_settings(store: SqliteStore, settings: Settings) -> Memory<SqliteStore> {
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
