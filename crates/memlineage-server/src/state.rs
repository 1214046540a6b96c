//! The service's state, and the only module that opens and holds `Memory` handles.
//!
//! One handle writes (the [`Committer`] thread and the rare registry changes); `readers`
//! others serve reads, gate decisions and retrievals, each on its own SQLite connection, so
//! reads go on in WAL snapshots while a group commit fsyncs. All are `Memory` handles on the
//! same store: nothing reaches the store any other way. Blocking library calls run on tokio's
//! blocking pool ([`AppState::read`]), never on the request threads.

use crate::committer::{Committer, SubmitError};
use crate::config::{Config, Limits};
use crate::error::{ApiError, ApiResult};
use crate::jobs::Jobs;
use crate::keys::KeyStore;
use crate::policies::Policies;
use crate::token_cache::TokenCache;
use memlineage::{Memory, SqliteStore, WriteRequest, Written};
use memlineage_core::label::TrustClass;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The memory handle type the service holds.
pub type Mem = Memory<SqliteStore>;

/// Opens a handle on the store at `db` and loads the keys of `keys`.
pub fn open_handle(db: &Path, keys: &dyn KeyStore) -> Result<Mem, memlineage::Error> {
    if !db.is_file() {
        return Err(memlineage::Error::Store(format!(
            "no store at {}: run `memlineage init` first, or point --store at an existing store",
            db.display()
        )));
    }
    let mem = Memory::open(SqliteStore::open(db)?)?;
    keys.load_into(mem.keys())?;
    Ok(mem)
}

/// Opens a handle for an audit (it does not trust the registry to open the store).
pub fn open_audit_handle(db: &Path) -> Result<Mem, memlineage::Error> {
    Memory::open_for_audit(SqliteStore::open(db)?)
}

/// The latest stored checkpoint note, as signed (callers verify it first with
/// `Memory::latest_checkpoint`).
pub fn latest_checkpoint_note(mem: &Mem) -> Result<Option<String>, memlineage::Error> {
    use memlineage::store::StoreRead;
    mem.store().latest_checkpoint()
}

/// Shared by every request (cheap to clone).
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

/// What [`AppState`] holds.
pub struct Inner {
    writer: Arc<Mem>,
    readers: Vec<Arc<Mem>>,
    next_reader: AtomicUsize,
    committer: Committer,
    /// The store file (audits open their own handle on it).
    pub store: PathBuf,
    /// Where the principals' keys are kept.
    pub keys: Arc<dyn KeyStore>,
    /// The bearer tokens.
    pub tokens: TokenCache,
    /// Request limits.
    pub limits: Limits,
    /// Background verify jobs.
    pub jobs: Jobs,
    /// Named and recently used gate policies.
    pub policies: Policies,
    /// Principals' trust classes (fixed at registration), looked up once.
    classes: Mutex<HashMap<String, TrustClass>>,
    /// False once shutdown began.
    ready: AtomicBool,
    /// This process's random tag and its request counter ([`AppState::next_request_tag`]).
    boot: String,
    requests: AtomicU64,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// Opens the handles, starts the committer, loads the tokens and policies.
    pub fn open(
        config: &Config,
        keys: Arc<dyn KeyStore>,
    ) -> Result<(AppState, std::thread::JoinHandle<()>), String> {
        let open = || {
            open_handle(&config.store, keys.as_ref())
                .map(Arc::new)
                .map_err(|e| format!("cannot open the store at {}: {e}", config.store.display()))
        };
        let writer = open()?;
        let n = match config.readers {
            0 => std::thread::available_parallelism().map_or(2, usize::from),
            n => n,
        };
        let readers = (0..n).map(|_| open()).collect::<Result<Vec<_>, _>>()?;
        let (committer, thread) = Committer::start(Arc::clone(&writer))
            .map_err(|e| format!("cannot start the committer thread: {e}"))?;
        let tokens = TokenCache::open(&config.tokens_file)?;
        let policies = Policies::new(&config.policies)?;
        let state = AppState(Arc::new(Inner {
            writer,
            readers,
            next_reader: AtomicUsize::new(0),
            committer,
            store: config.store.clone(),
            keys,
            tokens,
            limits: config.limits.clone(),
            jobs: Jobs::default(),
            policies,
            classes: Mutex::new(HashMap::new()),
            ready: AtomicBool::new(true),
            boot: {
                let mut b = [0u8; 8];
                rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut b);
                hex::encode(b)
            },
            requests: AtomicU64::new(0),
        }));
        Ok((state, thread))
    }

    /// Runs a blocking library call on a reader handle (round robin).
    pub async fn read<T, F>(&self, f: F) -> ApiResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Mem) -> ApiResult<T> + Send + 'static,
    {
        let i = self.next_reader.fetch_add(1, Ordering::Relaxed) % self.readers.len().max(1);
        let mem = match self.readers.get(i) {
            Some(m) => Arc::clone(m),
            None => Arc::clone(&self.writer),
        };
        blocking(move || f(&mem)).await
    }

    /// Runs a blocking call on the writing handle (registry changes: they are rare, and keys
    /// are loaded into every handle afterwards).
    pub async fn on_writer<T, F>(&self, f: F) -> ApiResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Mem) -> ApiResult<T> + Send + 'static,
    {
        let mem = Arc::clone(&self.writer);
        blocking(move || f(&mem)).await
    }

    /// Every handle (to load a new key into all of them).
    pub fn handles(&self) -> impl Iterator<Item = &Arc<Mem>> {
        std::iter::once(&self.writer).chain(self.readers.iter())
    }

    /// Appends `reqs` in the next group commit; answers once they are durable.
    pub async fn write(&self, reqs: Vec<WriteRequest>) -> ApiResult<Vec<Written>> {
        // Requests already in flight when shutdown begins are still committed: the committer
        // drains its queue before the process exits.
        self.committer.submit(reqs).await.map_err(|e| match e {
            SubmitError::Write(e) => ApiError::from(e),
            SubmitError::Closed => ApiError::unavailable(
                "the service is shutting down: nothing was written; retry after the restart",
            ),
        })
    }

    /// The trust class of a registered principal.
    pub async fn class_of(&self, name: &str) -> ApiResult<TrustClass> {
        if let Some(c) = self.classes.lock().ok().and_then(|m| m.get(name).copied()) {
            return Ok(c);
        }
        let owned = name.to_string();
        let class = self
            .read(move |mem| {
                let registry = mem.registry()?;
                registry.get(&owned).map(|p| p.class).ok_or_else(|| {
                    ApiError::new(
                        axum::http::StatusCode::FORBIDDEN,
                        "refused",
                        format!("principal `{owned}` is not registered in this store"),
                    )
                })
            })
            .await?;
        if let Ok(mut m) = self.classes.lock() {
            m.insert(name.to_string(), class);
        }
        Ok(class)
    }

    /// A tag unique to one request of this service (a random per-process prefix and a
    /// counter), signed into records that would otherwise repeat.
    pub fn next_request_tag(&self) -> String {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.boot)
    }

    /// Whether the service takes new requests.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }

    /// Marks the service as shutting down (readiness fails, writes are refused).
    pub fn begin_shutdown(&self) {
        self.ready.store(false, Ordering::SeqCst);
    }
}

/// Runs a blocking closure on tokio's blocking pool; a panic inside becomes a 500.
pub async fn blocking<T, F>(f: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> ApiResult<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the operation failed inside the service: {e}")))?
}
