//! The store generator: a file store of exactly `n` entries, written fast, and a cache of
//! generated stores keyed by size, seed and generator version.
//!
//! The generated log is a valid MemLineage log that `Memory::verify` accepts: the genesis
//! record and four principals (`agent`, `user` trusted; `web`, `email` external) written
//! through [`Memory`], then `n − 5` entries of the [`Workload`] mix, labelled by the trust
//! rule from their parents' labels, signed by their writers' keys ([`principal_key`]), and
//! appended in batches of [`BATCH`] (one transaction and one fsync each), then one signed
//! checkpoint of the whole log. To be fast it signs on all cores and appends through
//! the unchecked append of `memlineage::unchecked` (the bodies are built here, from the
//! labels it just computed); the result is checked by `verify` in the tests.

use crate::error::BenchError;
use crate::fixtures::{
    OPERATOR, ORIGIN, PRINCIPALS, START_MS, Shape, Workload, class_of, name, principal_key,
};
use ed25519_dalek::SigningKey;
use memlineage::store::NewRecord;
use memlineage::{Memory, Settings, SqliteStore, StepClock};
use memlineage_core::entry::{EntryBody, EntryKind, Parent, Scope, SignedEntry};
use memlineage_core::keys;
use memlineage_core::label::TrustLabel;
use memlineage_core::trust::{ParentEdge, compute_label};
use memlineage_core::{EntryId, Hash256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Entries appended per transaction by the generator.
pub const BATCH: usize = 1024;
/// Registry records at the head of every generated log (genesis and four principals).
pub const REGISTRY_RECORDS: u64 = 1 + PRINCIPALS.len() as u64;
/// The smallest store the generator makes.
pub const MIN_ENTRIES: u64 = REGISTRY_RECORDS + 2;
/// Bumped whenever the generated content changes, so that cached stores are regenerated.
pub const GENERATOR_VERSION: u32 = 1;
/// The scope of generated content entries.
pub const SCOPE: &str = "acme/assistant/alice";
/// Parents are drawn from this many most recent entries.
pub const PARENT_WINDOW: usize = 1024;

/// What [`generate_store`] made.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Generated {
    /// The store file.
    pub path: PathBuf,
    /// Entries in the log (registry records included).
    pub entries: u64,
    /// Wall time, in seconds (0 when a cached store was reused).
    pub seconds: f64,
    /// Size of the store file, in bytes.
    pub bytes: u64,
    /// Whether a cached store was reused.
    pub reused: bool,
}

/// Writes a new file store of exactly `n` entries at `path` (which must not exist), with keys
/// and content derived from `seed`. `progress` receives a line now and then.
pub fn generate_store(
    path: &Path,
    n: u64,
    seed: u64,
    progress: &mut dyn FnMut(&str),
) -> Result<Generated, BenchError> {
    if n < MIN_ENTRIES {
        return Err(BenchError::Invalid(format!(
            "a generated store has at least {MIN_ENTRIES} entries (asked for {n})"
        )));
    }
    if path.exists() {
        return Err(BenchError::Invalid(format!(
            "{} already exists (the generator never overwrites a store)",
            path.display()
        )));
    }
    let started = Instant::now();
    let store = SqliteStore::open(path)?;
    let settings = Settings::with_origin(ORIGIN);
    let (tau, fallback) = (settings.tau, settings.fallback);
    let mem = Memory::init(
        store,
        settings,
        &name(OPERATOR)?,
        principal_key(seed, OPERATOR),
    )?
    .with_clock(StepClock::new(START_MS, 1000));
    let mut signers: HashMap<&'static str, SigningKey> = HashMap::new();
    for (n, class) in PRINCIPALS {
        let key = principal_key(seed, n);
        mem.add_principal(&name(n)?, class, &key.verifying_key())?;
        signers.insert(n, key);
    }
    let scope = Scope::new(SCOPE).map_err(BenchError::core)?;
    let mut workload = Workload::new(seed);
    let mut pool: Vec<(EntryId, TrustLabel)> = Vec::with_capacity(PARENT_WINDOW);
    let mut next_pool = 0usize;
    let mut index = mem.size()?;
    let mut last_report = Instant::now();
    while index < n {
        let count = (n - index).min(BATCH as u64) as usize;
        let mut bodies = Vec::with_capacity(count);
        let mut texts = Vec::with_capacity(count);
        let mut ids = Vec::with_capacity(count);
        for _ in 0..count {
            let (shape, text) = workload.next_entry(pool.len());
            let (writer, kind, parents) = match shape {
                Shape::Root { writer, kind } => (writer, kind, Vec::new()),
                Shape::Derived { parents } => (
                    "agent",
                    EntryKind::Derived,
                    parents
                        .iter()
                        .map(|(i, w)| (pool[*i], *w))
                        .collect::<Vec<_>>(),
                ),
            };
            let mut ps: Vec<Parent> = parents
                .iter()
                .map(|((id, _), w)| Parent {
                    id: *id,
                    weight: *w,
                })
                .collect();
            EntryBody::normalise_parents(&mut ps);
            let label_of = |id: &EntryId| {
                parents
                    .iter()
                    .find(|((p, _), _)| p == id)
                    .map_or(TrustLabel::External, |((_, l), _)| *l)
            };
            let edges: Vec<ParentEdge> = ps
                .iter()
                .map(|p| ParentEdge {
                    label: label_of(&p.id),
                    weight: p.weight,
                })
                .collect();
            let label = compute_label(class_of(writer), &edges, tau, fallback).label;
            let key = signers
                .get(writer)
                .ok_or_else(|| BenchError::Invalid(format!("no key for {writer}")))?;
            let body = EntryBody {
                scope: scope.clone(),
                writer: writer.to_string(),
                key_id: keys::key_id(&key.verifying_key()),
                kind,
                content_hash: Hash256::of(text.as_bytes()),
                content_len: text.len() as u64,
                source_hash: None,
                context_hash: None,
                parents: ps,
                attribution: if edges.is_empty() { "none" } else { "explicit" }.to_string(),
                tau,
                fallback,
                label,
                created_at_ms: START_MS + 1000 * index,
                metadata: Default::default(),
            };
            // The id now (the hash of the canonical body), so that later entries of the same
            // batch can name this one as a parent.
            let id = EntryId(Hash256::of(&body.canonical_bytes()));
            let item = (id, body.label);
            if pool.len() < PARENT_WINDOW {
                pool.push(item);
            } else {
                pool[next_pool] = item;
                next_pool = (next_pool + 1) % PARENT_WINDOW;
            }
            ids.push(id);
            bodies.push(body);
            texts.push(text);
            index += 1;
        }
        let entries = sign_all(bodies, &signers)?;
        let records: Vec<NewRecord> = entries
            .into_iter()
            .zip(texts)
            .map(|(entry, text)| {
                let content = text.clone().into_bytes();
                NewRecord {
                    entry,
                    content,
                    search_text: Some(text),
                }
            })
            .collect();
        if records.iter().zip(&ids).any(|(r, id)| r.entry.id() != *id) {
            return Err(BenchError::Core(
                "an entry id changed when it was signed".into(),
            ));
        }
        // Bulk generation past the per-entry checks (the bodies are built here, from the
        // labels just computed; `verify` checks the result in the tests).
        let first = mem.unchecked().append(&records)?;
        if first + records.len() as u64 != index {
            return Err(BenchError::Invalid(format!(
                "the store appended at {first}, expected {}",
                index - records.len() as u64
            )));
        }
        if last_report.elapsed().as_secs_f64() > 2.0 || index == n {
            progress(&format!(
                "generating {}: {index}/{n} entries",
                path.display()
            ));
            last_report = Instant::now();
        }
    }
    mem.checkpoint()?;
    drop(mem);
    Ok(Generated {
        path: path.to_path_buf(),
        entries: n,
        seconds: started.elapsed().as_secs_f64(),
        bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        reused: false,
    })
}

/// Signs `bodies` on all cores, keeping their order.
fn sign_all(
    bodies: Vec<EntryBody>,
    signers: &HashMap<&'static str, SigningKey>,
) -> Result<Vec<SignedEntry>, BenchError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let per = bodies.len().div_ceil(threads).max(1);
    let mut chunks: Vec<Vec<EntryBody>> = Vec::new();
    let mut rest = bodies;
    while !rest.is_empty() {
        let tail = rest.split_off(per.min(rest.len()));
        chunks.push(rest);
        rest = tail;
    }
    let results: Vec<Result<Vec<SignedEntry>, BenchError>> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|b| {
                            let key = signers.get(b.writer.as_str()).ok_or_else(|| {
                                BenchError::Invalid(format!("no key for {}", b.writer))
                            })?;
                            SignedEntry::sign(b, key).map_err(BenchError::core)
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(BenchError::Invalid("a signing thread panicked".into()))
                })
            })
            .collect()
    });
    let mut out = Vec::new();
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}

/// The directory generated stores are cached in: `$MEMLINEAGE_BENCH_STORES` if set, else
/// `bench-stores` under `$CARGO_TARGET_DIR`, else `target/bench-stores` of the nearest
/// directory above the current one that has a `Cargo.lock`, else a folder in the temporary
/// directory.
pub fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MEMLINEAGE_BENCH_STORES") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir).join("bench-stores");
    }
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            if dir.join("Cargo.lock").is_file() {
                return dir.join("target").join("bench-stores");
            }
        }
    }
    std::env::temp_dir().join("memlineage-bench-stores")
}

/// The cache file of the store of `n` entries made with `seed`.
pub fn cached_store_path(cache_dir: &Path, n: u64, seed: u64) -> PathBuf {
    cache_dir.join(format!("store-n{n}-s{seed}-g{GENERATOR_VERSION}.sqlite"))
}

fn sidecars(path: &Path) -> [PathBuf; 2] {
    let s = path.as_os_str().to_string_lossy();
    [
        PathBuf::from(format!("{s}-wal")),
        PathBuf::from(format!("{s}-shm")),
    ]
}

fn remove_store(path: &Path) -> Result<(), BenchError> {
    for p in std::iter::once(path.to_path_buf()).chain(sidecars(path)) {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(BenchError::io(&p, e)),
        }
    }
    Ok(())
}

fn cache_is_valid(path: &Path, n: u64) -> bool {
    let Ok(store) = SqliteStore::open(path) else {
        return false;
    };
    let Ok(mem) = Memory::open(store) else {
        return false;
    };
    mem.size().ok() == Some(n) && matches!(mem.latest_checkpoint(), Ok(Some(cp)) if cp.size == n)
}

/// The cached store of `n` entries made with `seed`, generating it (into a `.partial` file,
/// renamed when complete) if it is missing or incomplete.
pub fn cached_store(
    cache_dir: &Path,
    n: u64,
    seed: u64,
    progress: &mut dyn FnMut(&str),
) -> Result<Generated, BenchError> {
    std::fs::create_dir_all(cache_dir).map_err(|e| BenchError::io(cache_dir, e))?;
    let path = cached_store_path(cache_dir, n, seed);
    if path.exists() {
        if cache_is_valid(&path, n) {
            return Ok(Generated {
                bytes: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                path,
                entries: n,
                seconds: 0.0,
                reused: true,
            });
        }
        progress(&format!(
            "{} is incomplete: regenerating it",
            path.display()
        ));
        remove_store(&path)?;
    }
    let partial = PathBuf::from(format!("{}.partial", path.display()));
    remove_store(&partial)?;
    let mut made = generate_store(&partial, n, seed, progress)?;
    for (from, to) in std::iter::once((partial.clone(), path.clone()))
        .chain(sidecars(&partial).into_iter().zip(sidecars(&path)))
    {
        if from.exists() {
            std::fs::rename(&from, &to).map_err(|e| BenchError::io(&from, e))?;
        }
    }
    made.path = path;
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_store_verifies_and_is_cached() {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = Vec::new();
        let g = cached_store(dir.path(), 300, 5, &mut |l| lines.push(l.to_string())).unwrap();
        assert!(!g.reused);
        assert_eq!(g.entries, 300);
        assert!(!lines.is_empty());
        let mem = Memory::open(SqliteStore::open(&g.path).unwrap()).unwrap();
        assert_eq!(mem.size().unwrap(), 300);
        let report = mem.verify(&mut |_, _| {}).unwrap();
        assert!(report.ok(), "{:?}", report.problems);
        assert_eq!(report.checkpoint_size, Some(300));
        let labels: std::collections::HashSet<_> =
            mem.log(0, 300).unwrap().iter().map(|v| v.label).collect();
        assert!(labels.len() >= 3, "{labels:?}");
        drop(mem);
        let again = cached_store(dir.path(), 300, 5, &mut |_| {}).unwrap();
        assert!(again.reused);
        assert!(generate_store(&g.path, 300, 5, &mut |_| {}).is_err());
        assert!(generate_store(&dir.path().join("x"), 3, 5, &mut |_| {}).is_err());
    }

    #[test]
    fn generation_is_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let a = generate_store(&dir.path().join("a"), 40, 9, &mut |_| {}).unwrap();
        let b = generate_store(&dir.path().join("b"), 40, 9, &mut |_| {}).unwrap();
        let leaves = |p: &Path| {
            let mem = Memory::open(SqliteStore::open(p).unwrap()).unwrap();
            let log: Vec<_> = mem
                .log(0, 40)
                .unwrap()
                .into_iter()
                .map(|v| v.entry)
                .collect();
            (mem.root_at(40).unwrap(), log)
        };
        // The genesis record carries the wall-clock time (`Memory::init` takes no clock);
        // every later entry is the same.
        let (ra, la) = leaves(&a.path);
        let (rb, lb) = leaves(&b.path);
        assert_eq!(la.len(), 40);
        assert_eq!(la[1..], lb[1..]);
        assert_ne!(ra, Hash256::default());
        assert_ne!(rb, Hash256::default());
    }
}
