//! Opening a store, and creating one when there is none, as `memlineage init` does with its
//! defaults: a random checkpoint origin, the operator `operator` (trusted; signs registry
//! changes, checkpoints, tombstones and distrust records), and the principals `agent`
//! (trusted, the default writer) and `web` (external, for tool output), each with a fresh key
//! saved (mode 0600, in a 0700 directory) *before* it is registered, so that a registered key
//! is never lost.
//!
//! Processes may open a new file store at the same moment: the one that creates the store file
//! (exclusively) initialises it; the others wait until it has, and none of them ever removes a
//! file another one made.

use crate::errors::Fail;
use ed25519_dalek::SigningKey;
use memlineage::keyring::{key_path, save_key};
use memlineage::store::{MemoryStore, SqliteStore};
use memlineage::{Error, Memory, PrincipalName, Settings, StoreLocation};
use memlineage_core::keys;
use memlineage_core::label::{Fallback, TrustClass, Weight};
use rand_core::{OsRng, RngCore};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The operator a new store gets.
pub const OPERATOR: &str = "operator";
/// The principals a new store gets besides the operator (as `memlineage init` registers them).
pub const DEFAULT_PRINCIPALS: [(&str, TrustClass); 2] = [
    ("agent", TrustClass::Trusted),
    ("web", TrustClass::External),
];

/// How long an open waits for another process to finish initialising the store it created.
const INIT_WAIT: Duration = Duration::from_secs(10);

fn name(s: &str) -> Result<PrincipalName, Fail> {
    crate::parse::name(s)
}

/// Opens the store at `loc`; when there is none and `create` is set, creates it with `rule`
/// (default τ 0.5, strict fallback). Returns the handle and whether it was created.
pub fn open_or_create(
    loc: &StoreLocation,
    create: bool,
    rule: (Option<Weight>, Option<Fallback>),
) -> Result<(Memory, bool), Fail> {
    let Some(db) = loc.sqlite_file() else {
        return match loc {
            StoreLocation::Memory => Ok((init(MemoryStore::new(), None, rule)?, true)),
            other => Ok((Memory::open_at(other)?, false)),
        };
    };
    let keys = loc.key_dir().unwrap_or_else(|| PathBuf::from("keys"));
    if !db.is_file() {
        if !create {
            return Err(Fail::NotFound(format!(
                "no store at {}: open it with create=True (the default) or run `memlineage \
                 init`, or point MEMLINEAGE_STORE at an existing store",
                db.display()
            )));
        }
        if claim(&db)? {
            let mut created = Created(vec![
                db.clone(),
                suffixed(&db, "-wal"),
                suffixed(&db, "-shm"),
            ]);
            let result = create_file(&db, &keys, rule, &mut created);
            if result.is_err() {
                created.undo();
            }
            return Ok((result?, true));
        }
        // Another process created the file first and is initialising it: open it.
    }
    Ok((open_file(loc, &keys)?, false))
}

/// Opens an existing store file and loads its keys, waiting (up to [`INIT_WAIT`]) while it is
/// still being initialised by the process that created it.
fn open_file(loc: &StoreLocation, keys: &Path) -> Result<Memory, Fail> {
    let start = Instant::now();
    loop {
        match Memory::open_at(loc) {
            Ok(mem) => {
                // The creator registers the default principals right after the genesis
                // record: wait for them, so that this handle can sign as `agent` at once.
                while start.elapsed() < INIT_WAIT && initialising(&mem, keys)? {
                    std::thread::sleep(Duration::from_millis(20));
                }
                mem.keys().load_dir(keys)?;
                return Ok(mem);
            }
            Err(e) if start.elapsed() < INIT_WAIT && being_initialised(&e) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Whether opening failed because the store has no genesis record yet.
fn being_initialised(e: &Error) -> bool {
    use memlineage::error::StoreState;
    matches!(e, Error::State(StoreState::NotInitialised { .. }))
}

/// Whether the store is a fresh one whose creator has not yet registered the default
/// principals (their keys are on disk, the log is shorter than genesis plus them).
fn initialising(mem: &Memory, keys: &Path) -> Result<bool, Fail> {
    // Genesis, then one registry record per default principal.
    if mem.size()? > DEFAULT_PRINCIPALS.len() as u64 {
        return Ok(false);
    }
    for (n, _) in DEFAULT_PRINCIPALS {
        if !key_path(keys, &name(n)?).is_file() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Creates the store file, empty, if nobody else has (its directory 0700 first): `true` when
/// this call created it and so initialises the store, `false` when it already existed.
fn claim(db: &Path) -> Result<bool, Fail> {
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            b.mode(0o700);
        }
        b.create(dir)
            .map_err(|e| Fail::Store(format!("cannot create {}: {e}", dir.display())))?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(db)
    {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Fail::Store(format!("cannot create {}: {e}", db.display()))),
    }
}

fn suffixed(db: &Path, suffix: &str) -> PathBuf {
    let mut s = db.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
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
    db: &Path,
    keys_dir: &Path,
    rule: (Option<Weight>, Option<Fallback>),
    created: &mut Created,
) -> Result<Memory, Fail> {
    let names = std::iter::once(OPERATOR)
        .chain(DEFAULT_PRINCIPALS.iter().map(|(n, _)| *n))
        .map(name)
        .collect::<Result<Vec<_>, Fail>>()?;
    for n in &names {
        let p = key_path(keys_dir, n);
        if p.exists() {
            return Err(Fail::Refused(format!(
                "{} already exists (left over from another store?): move it away or use another \
                 store path",
                p.display()
            )));
        }
    }
    // The key files are written before the store registers them, so that a registered key is
    // never lost (the key directory is created 0700 by `save_key`).
    for n in &names {
        let key = keys::generate(&mut OsRng);
        created.0.push(save_key(keys_dir, n, &key)?);
    }
    init(SqliteStore::open(db)?, Some(keys_dir), rule)
}

/// Writes the genesis record and registers the default principals, with keys from the key
/// directory of a file store (just written there) or fresh ones for a store in RAM.
fn init(
    backend: impl memlineage::IntoBackend,
    keys_dir: Option<&Path>,
    (tau, fallback): (Option<Weight>, Option<Fallback>),
) -> Result<Memory, Fail> {
    let ring = memlineage::Keyring::new();
    if let Some(dir) = keys_dir {
        ring.load_dir(dir)?;
    }
    let key_of = |n: &PrincipalName| -> SigningKey {
        ring.get(n).unwrap_or_else(|_| keys::generate(&mut OsRng))
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
    let operator = name(OPERATOR)?;
    let mem = Memory::init(backend, settings, &operator, key_of(&operator))?;
    for (n, class) in DEFAULT_PRINCIPALS {
        let n = name(n)?;
        let key = key_of(&n);
        mem.keys().insert(&n, key.clone());
        mem.add_principal(&n, class, &key.verifying_key())?;
    }
    Ok(mem)
}
