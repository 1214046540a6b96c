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
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
        Location::File { db, keys } => {
            if !db.is_file() {
                if !create {
                    return Err(Fail::Store(format!(
                        "no store at {}: create it with Memory.open(create=True) or `memlineage \
                         init`, or point MEMLINEAGE_STORE at an existing store",
                        db.display()
                    )));
                }
                if claim(db)? {
                    let mut created =
                        Created(vec![db.clone(), suffixed(db, "-wal"), suffixed(db, "-shm")]);
                    let result = create_file(keys, loc, rule, &mut created);
                    if result.is_err() {
                        created.undo();
                    }
                    return Ok((result?, true));
                }
                // Another process claimed the file first and is initialising it: open it.
            }
            Ok((open_file(db, keys)?, false))
        }
    }
}

/// How long an open waits for another process to finish initialising the store it claimed.
const INIT_WAIT: Duration = Duration::from_secs(10);

/// Opens an existing store file and loads its keys, waiting (up to [`INIT_WAIT`]) while it is
/// still being initialised by the process that created it.
fn open_file(db: &Path, keys: &Path) -> Result<Mem, Fail> {
    let start = Instant::now();
    loop {
        let opened = SqliteStore::open(db).and_then(Memory::open);
        match opened {
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
            Err(e) => {
                return Err(Fail::Store(format!(
                    "cannot open the store at {}: {e} (run `memlineage verify` for a full audit)",
                    db.display()
                )));
            }
        }
    }
}

/// Whether the store is a fresh one whose creator has not yet registered the default
/// principals (their keys are on disk, the log is shorter than genesis plus them).
fn initialising(mem: &Mem, keys: &Path) -> Result<bool, Fail> {
    Ok(mem.size()? < 1 + DEFAULT_PRINCIPALS.len() as u64
        && DEFAULT_PRINCIPALS
            .iter()
            .all(|(n, _)| key_path(keys, n).is_file()))
}

/// Whether opening failed because the store has no genesis record yet.
fn being_initialised(e: &memlineage::Error) -> bool {
    let m = e.to_string();
    m.contains("not initialised") || m.contains("no genesis record")
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
    keys_dir: &Path,
    loc: &Location,
    rule: (Option<Weight>, Option<Fallback>),
    created: &mut Created,
) -> Result<Mem, Fail> {
    let Location::File { db, .. } = loc else {
        return Err(Fail::Store("a store in RAM has no file".into()));
    };
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
    // The key files are written before the store registers them, so that a registered key is
    // never lost (the key directory is created 0700 by `save_key`).
    for name in std::iter::once(OPERATOR).chain(DEFAULT_PRINCIPALS.iter().map(|(n, _)| *n)) {
        let key = keys::generate(&mut OsRng);
        created.0.push(save_key(keys_dir, name, &key)?);
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
