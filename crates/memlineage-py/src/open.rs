//! Opening a store, and creating one when there is none, as `memlineage init` does with its
//! defaults: a random checkpoint origin, the operator `operator` (trusted; signs registry
//! changes, checkpoints, tombstones and distrust records), and the principals `agent`
//! (trusted, the default writer) and `web` (external, for tool output), each with a fresh key
//! saved (mode 0600, in a 0700 directory) *before* it is registered, so that a registered key
//! is never lost.

use crate::errors::Fail;
use crate::location::Location;
use ed25519_dalek::SigningKey;
use memlineage::keyring::{key_path, save_key};
use memlineage::{Memory, Settings, SqliteStore};
use memlineage_core::keys;
use memlineage_core::label::{Fallback, TrustClass, Weight};
use rand_core::{OsRng, RngCore};
use std::path::PathBuf;

/// The handle the binding wraps.
pub type Mem = Memory<SqliteStore>;

/// The operator a new store gets.
pub const OPERATOR: &str = "operator";
/// The principals a new store gets besides the operator (as `memlineage init` registers them).
pub const DEFAULT_PRINCIPALS: [(&str, TrustClass); 2] = [
    ("agent", TrustClass::Trusted),
    ("web", TrustClass::External),
];

/// Opens the store at `loc`; when there is none and `create` is set, creates it with `rule`
/// (default τ 0.5, strict fallback). Returns the handle and whether it was created.
pub fn open_or_create(
    loc: &Location,
    create: bool,
    rule: (Option<Weight>, Option<Fallback>),
) -> Result<(Mem, bool), Fail> {
    match loc {
        Location::InMemory => {
            let store = SqliteStore::in_memory()?;
            Ok((init(store, loc, rule)?, true))
        }
        Location::File { db, keys } if db.is_file() => {
            let store = SqliteStore::open(db)?;
            let mem = Memory::open(store).map_err(|e| {
                Fail::Store(format!(
                    "cannot open the store at {}: {e} (run `memlineage verify` for a full audit)",
                    db.display()
                ))
            })?;
            mem.keys().load_dir(keys)?;
            Ok((mem, false))
        }
        Location::File { db, .. } if !create => Err(Fail::Store(format!(
            "no store at {}: create it with Memory.open(create=True) or `memlineage init`, or \
             point MEMLINEAGE_STORE at an existing store",
            db.display()
        ))),
        Location::File { db, keys } => {
            let mut created = Created(Vec::new());
            let result = create_file(db, keys, loc, rule, &mut created);
            if result.is_err() {
                created.undo();
            }
            Ok((result?, true))
        }
    }
}

/// Files created so far, removed again if creating the store fails half-way.
struct Created(Vec<PathBuf>);

impl Created {
    fn undo(&self) {
        for p in self.0.iter().rev() {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn create_file(
    db: &std::path::Path,
    keys_dir: &std::path::Path,
    loc: &Location,
    rule: (Option<Weight>, Option<Fallback>),
    created: &mut Created,
) -> Result<Mem, Fail> {
    for name in std::iter::once(OPERATOR).chain(DEFAULT_PRINCIPALS.iter().map(|(n, _)| *n)) {
        let p = key_path(keys_dir, name);
        if p.exists() {
            return Err(Fail::Refused(format!(
                "{} already exists (left over from another store?): move it away or use another \
                 store path",
                p.display()
            )));
        }
    }
    // The key files are written first (the directory is created 0700 by `save_key`), so that
    // the store never registers a key that is not on disk.
    for name in std::iter::once(OPERATOR).chain(DEFAULT_PRINCIPALS.iter().map(|(n, _)| *n)) {
        let key = keys::generate(&mut OsRng);
        created.0.push(save_key(keys_dir, name, &key)?);
    }
    created.0.push(db.to_path_buf());
    for suffix in ["-wal", "-shm"] {
        let mut s = db.as_os_str().to_os_string();
        s.push(suffix);
        created.0.push(PathBuf::from(s));
    }
    init(SqliteStore::open(db)?, loc, rule)
}

/// Writes the genesis record and registers the default principals, with keys from the key
/// directory of a file store (just written there) or fresh ones for a store in RAM.
fn init(
    store: SqliteStore,
    loc: &Location,
    (tau, fallback): (Option<Weight>, Option<Fallback>),
) -> Result<Mem, Fail> {
    let ring = memlineage::Keyring::new();
    if let Some(dir) = loc.keys_dir() {
        ring.load_dir(dir)?;
    }
    let key_of = |name: &str| -> SigningKey {
        ring.get(name)
            .unwrap_or_else(|_| keys::generate(&mut OsRng))
    };
    let mut origin = [0u8; 8];
    OsRng.fill_bytes(&mut origin);
    let mut settings = Settings::with_origin(&format!("memlineage.local/{}", hex::encode(origin)));
    if let Some(t) = tau {
        settings.tau = t;
    }
    if let Some(f) = fallback {
        settings.fallback = f;
    }
    let mem = Memory::init(store, settings, OPERATOR, key_of(OPERATOR))?;
    for (name, class) in DEFAULT_PRINCIPALS {
        let key = key_of(name);
        mem.keys().insert(name, key.clone());
        mem.add_principal(name, class, &key.verifying_key())?;
    }
    Ok(mem)
}
