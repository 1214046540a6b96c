//! The service's state, and the only module that opens and holds the `Memory` handle.
//!
//! One handle serves every request: the [`Committer`] thread appends through it, and reads,
//! gate decisions and retrievals run beside (a file SQLite store reads through a pool of
//! reader connections while an append commits). Nothing reaches the store any other way.
//! Blocking library calls run on the service's library threads ([`AppState::read`],
//! `library_threads.rs`), never on the request threads — with one exception, the labelling and
//! signing of a request's few root entries ([`AppState::write`]): tens of microseconds of CPU
//! that read nothing from the store while the handle's registry is current, where the trip to
//! a library thread and back (two thread wake-ups) cost as much again.

use crate::committer::{Committed, Committer, OnItsWay, SubmitError};
use crate::config::{Config, Limits};
use crate::entry_scopes::EntryScopes;
use crate::error::{ApiError, ApiResult};
use crate::jobs::Jobs;
use crate::keys::KeyStore;
use crate::library_threads::{self, LibraryThreads};
use crate::policies::Policies;
use crate::token_cache::TokenCache;
use memlineage::memory::{FullTextIndexer, VectorIndexer, Wake, WalCheckpointer};
use memlineage::search::{VectorIndexOptions, VectorIndexing};
use memlineage::{Memory, PrincipalName, SignedWrites, StoreLocation, WriteRequest, Written};
use memlineage_core::label::TrustClass;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Requests of at most this many root entries (no parents, whose labels might be read from
/// the store) are labelled and signed on the request's thread: about 20 µs each.
pub const INLINE_SIGNING_MAX: usize = 4;

/// The memory handle type the service holds.
pub type Mem = Memory;

/// Opens the handle on the store at `location` and loads the keys of `keys`. The service's
/// handle lives as long as the process, so it keeps its own lexical index (built by the first
/// search, caught up at each one after): search costs the same at 10^3 and 10^6 entries
/// instead of ranking every match (`Memory::with_lexical_index`).
pub fn open_handle(
    location: &StoreLocation,
    keys: &dyn KeyStore,
) -> Result<Mem, memlineage::Error> {
    let mem = Memory::open_at(location)?.with_lexical_index();
    keys.load_into(mem.keys())?;
    Ok(mem)
}

/// Opens a handle for an audit (it does not trust the registry to open the store).
pub fn open_audit_handle(location: &StoreLocation) -> Result<Mem, memlineage::Error> {
    Memory::open_for_audit_at(location)
}

/// Shared by every request (cheap to clone).
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

/// What [`AppState`] holds.
pub struct Inner {
    mem: Arc<Mem>,
    committer: Committer,
    /// The store (audits open their own handle on it).
    pub store: StoreLocation,
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
    classes: Mutex<HashMap<PrincipalName, TrustClass>>,
    /// The signed scopes of entries read so far, for the scope checks of every request that
    /// names entries (`entry_scopes.rs`).
    pub entry_scopes: EntryScopes,
    /// False once shutdown began.
    ready: AtomicBool,
    /// This process's random tag and its request counter ([`AppState::next_request_tag`]).
    boot: String,
    requests: AtomicU64,
    /// The threads of blocking library calls ([`AppState::read`]).
    library: LibraryThreads,
    /// Wakes the vector indexer after a commit, when semantic search is on.
    vectors: Option<Arc<Wake>>,
}

/// The threads beside the request handlers, finished by [`Workers::finish`] at shutdown.
pub struct Workers {
    committer: std::thread::JoinHandle<()>,
    library: Vec<std::thread::JoinHandle<()>>,
    indexer: Option<VectorIndexer>,
    /// WAL checkpoints off the committer (`None`: the store has no WAL).
    checkpointer: Option<WalCheckpointer>,
    /// Full-text indexing off the committer (`None`: the store indexes in the append).
    full_text: Option<FullTextIndexer>,
}

impl Workers {
    /// Waits for the library threads to finish their calls and the committer to commit what
    /// is queued (every state handle must be dropped first: that closes their queues), then
    /// indexes the text still pending and stops the full-text indexer, the WAL checkpointer
    /// and the vector indexer (saving its index).
    pub fn finish(self) -> Result<(), String> {
        for thread in self.library {
            thread
                .join()
                .map_err(|_| "a library thread failed during shutdown".to_string())?;
        }
        self.committer
            .join()
            .map_err(|_| "the committer thread failed during shutdown".to_string())?;
        // Each is stopped whatever the others say: the vector index is saved even if the
        // checkpoint thread failed (SQLite checkpoints what is left at the last close), and
        // text left pending is indexed by the next search or the next service.
        let full_text = self.full_text.map_or(Ok(()), FullTextIndexer::stop);
        let checkpoints = self.checkpointer.map_or(Ok(()), WalCheckpointer::stop);
        let vectors = self.indexer.map_or(Ok(()), VectorIndexer::stop);
        full_text.and(checkpoints).and(vectors)
    }
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// Opens the handle (with the embedding model, when semantic search is configured),
    /// starts the committer and the vector indexer, loads the tokens and policies.
    pub fn open(config: &Config, keys: Arc<dyn KeyStore>) -> Result<(AppState, Workers), String> {
        let mut mem = open_handle(&config.store, keys.as_ref())
            .map_err(|e| format!("cannot open the store at {}: {e}", config.store))?;
        if let Some(semantic) = &config.semantic {
            let options = VectorIndexOptions {
                saved_in: semantic.saved_in.clone(),
                indexing: VectorIndexing::Background,
            };
            mem = mem
                .with_vector_index(Arc::clone(&semantic.embedder), options)
                .map_err(|e| format!("cannot attach the embedding model: {e}"))?;
            if let Some(status) = mem.vector_index_status() {
                tracing::info!(model = %status.model, indexed = status.indexed,
                    snapshot = status.snapshot.as_deref().unwrap_or("none"), "vector index");
            }
        }
        if let Some(spec) = &config.signer {
            let signer = memlineage::signer::open_with_timeout(spec, config.signer_timeout)
                .map_err(|e| format!("cannot use the external signer: {e}"))?;
            tracing::info!(signer = %signer.describe(), "external signer");
            mem.set_signer(signer);
        }
        // Before the first request: each append then proves its ids new without reading the
        // store's id index (`docs/store.md`, "Id index").
        let started = std::time::Instant::now();
        match mem.keep_logged_ids() {
            Ok(Some(kept)) => tracing::info!(
                ids = kept.prefixes,
                covered = kept.covered,
                bytes = kept.bytes,
                ms = started.elapsed().as_millis() as u64,
                "logged ids kept in memory"
            ),
            Ok(None) => {}
            Err(e) => return Err(format!("cannot read the store's id index: {e}")),
        }
        let mem = Arc::new(mem);
        let (committer, thread) = Committer::start(Arc::clone(&mem))
            .map_err(|e| format!("cannot start the committer thread: {e}"))?;
        let (library, library_handles) =
            LibraryThreads::start(&mem, library_threads::thread_count())
                .map_err(|e| format!("cannot start the library threads: {e}"))?;
        // Checkpoints of SQLite's WAL on a thread of their own: a commit that checkpoints
        // holds up the whole group behind it (`docs/performance.md`).
        let checkpointer = WalCheckpointer::start(Arc::clone(&mem), |c| {
            metrics::counter!("memlineage_wal_checkpoints_total").increment(1);
            metrics::gauge!("memlineage_wal_pages").set(c.wal_pages as f64);
        })
        .map_err(|e| format!("cannot start the WAL checkpointer: {e}"))?;
        // The store's full-text index written after the commits, when the writes leave room
        // (`docs/service.md`, "Group commit and throughput"): in the commit, FTS5's flush and
        // merges took ≈ 15–21 % of the committer's time. The service's searches rank with the
        // handle's own lexical index, which does not read it.
        let full_text = FullTextIndexer::start(Arc::clone(&mem), |p| {
            metrics::counter!("memlineage_full_text_indexed_total").increment(p.indexed);
            metrics::gauge!("memlineage_full_text_pending").set(p.pending as f64);
        })
        .map_err(|e| format!("cannot start the full-text indexer: {e}"))?;
        let indexer = match &config.semantic {
            Some(semantic) => Some(
                VectorIndexer::start(Arc::clone(&mem), semantic.saved_in.clone(), |p| {
                    metrics::gauge!("memlineage_vector_index_pending").set(p.pending() as f64);
                })
                .map_err(|e| format!("cannot start the vector indexer thread: {e}"))?,
            ),
            None => None,
        };
        let tokens = TokenCache::open(&config.tokens_file)?;
        let policies = Policies::new(&config.policies)?;
        let state = AppState(Arc::new(Inner {
            mem,
            committer,
            store: config.store.clone(),
            keys,
            tokens,
            limits: config.limits.clone(),
            jobs: Jobs::default(),
            policies,
            classes: Mutex::new(HashMap::new()),
            entry_scopes: EntryScopes::default(),
            ready: AtomicBool::new(true),
            boot: {
                let mut b = [0u8; 8];
                rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut b);
                hex::encode(b)
            },
            requests: AtomicU64::new(0),
            library,
            vectors: indexer.as_ref().map(VectorIndexer::waker),
        }));
        let workers = Workers {
            committer: thread,
            library: library_handles,
            indexer,
            checkpointer,
            full_text,
        };
        Ok((state, workers))
    }

    /// Runs a blocking library call on the handle, on a library thread.
    pub async fn read<T, F>(&self, f: F) -> ApiResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Mem) -> ApiResult<T> + Send + 'static,
    {
        match self.library.run(f).await {
            Some(Ok(answer)) => answer,
            Some(Err(_)) => Err(ApiError::internal(
                "the operation failed inside the service (a library call panicked)",
            )),
            None => Err(ApiError::unavailable("the service is shutting down")),
        }
    }

    /// Runs a blocking library call that writes outside the group commit (a registry change,
    /// a checkpoint): it first claims the request's deadline ticket, so a request that already
    /// timed out writes nothing (`deadline.rs`).
    pub async fn write_direct<T, F>(&self, f: F) -> ApiResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Mem) -> ApiResult<T> + Send + 'static,
    {
        crate::deadline::claim()?;
        self.read(f).await
    }

    /// Appends `reqs` in the next group commit; answers once they are durable. They are
    /// labelled and signed first ([`Memory::sign_writes`]), so that the committer thread only
    /// appends: a few root entries on this thread, the others on a library thread.
    pub async fn write(&self, reqs: Vec<WriteRequest>) -> ApiResult<Vec<Written>> {
        let way = self.on_its_way();
        let inline = reqs.len() <= INLINE_SIGNING_MAX && reqs.iter().all(|r| r.parents.is_empty());
        if inline {
            let writes = self.mem.sign_writes(reqs)?;
            return self.write_signed(writes, way).await;
        }
        let ((), written) = self
            .sign_and_write(way, move |_, mem| Ok(((), mem.sign_writes(reqs)?)))
            .await?;
        Ok(written)
    }

    /// Runs `sign` on a library thread — a decision, labels, signatures: whatever yields the
    /// signed entries to append, and what goes with them in the answer — and appends its
    /// entries in the next group commit; answers once they are durable. The library thread
    /// hands the entries to the committer itself, so this task is woken once, when the answer
    /// is ready (`library_threads.rs`). `sign` is given the state this call holds anyway, so
    /// that it needs no clone of its own.
    pub async fn sign_and_write<X, F>(&self, way: OnItsWay, sign: F) -> ApiResult<(X, Vec<Written>)>
    where
        X: Send + 'static,
        F: FnOnce(&AppState, &Mem) -> ApiResult<(X, SignedWrites)> + Send + 'static,
    {
        // Taken on the request's task: the committer claims it when the entries join a group.
        let ticket = crate::deadline::current();
        let (tx, answer) = tokio::sync::oneshot::channel();
        let state = self.clone();
        let queued = self.library.queue(move |mem| {
            // The request was dropped while this waited (its client went away, or it timed
            // out before writing): nothing is signed or written, as nobody would be answered.
            if tx.is_closed() {
                return;
            }
            match sign(&state, mem) {
                Ok((with, writes)) => {
                    let committer = state.committer.clone();
                    committer.submit_from_thread(
                        writes,
                        way,
                        ticket,
                        Box::new(move |committed| {
                            let _ = tx.send(state.after_commit(committed).map(|w| (with, w)));
                        }),
                    );
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        });
        if !queued {
            return Err(ApiError::unavailable("the service is shutting down"));
        }
        // A sender dropped unanswered: `sign` panicked on its thread.
        answer.await.unwrap_or_else(|_| {
            Err(ApiError::internal(
                "the operation failed inside the service (a library call panicked); nothing was written",
            ))
        })
    }

    /// Stamps a gate request as it arrives ([`memlineage::Memory::gate_ticket`]): its decision
    /// may share a look at the log with the decisions of its burst, never one older than it.
    pub fn gate_ticket(&self) -> memlineage::GateTicket {
        self.mem.gate_ticket()
    }

    /// Tells the committer that a write will be submitted shortly (`committer.rs`): the
    /// group it gathers meanwhile waits for it. Taken before the write is decided or signed;
    /// dropping it unsubmitted (a refused request) is fine.
    pub fn on_its_way(&self) -> OnItsWay {
        self.committer.on_its_way()
    }

    /// Appends entries signed by [`Memory::sign_writes`] on this handle in the next group
    /// commit; answers once they are durable.
    pub async fn write_signed(
        &self,
        writes: SignedWrites,
        way: OnItsWay,
    ) -> ApiResult<Vec<Written>> {
        // Requests already in flight when shutdown begins are still committed: the committer
        // drains its queue before the process exits.
        let written = self.committer.submit(writes, way).await;
        self.after_commit(written)
    }

    /// Wakes the vector indexer after a successful commit; the commit's error as the
    /// service's.
    fn after_commit(&self, written: Committed) -> ApiResult<Vec<Written>> {
        if written.is_ok()
            && let Some(w) = &self.vectors
        {
            w.wake();
        }
        written.map_err(|e| match e {
            SubmitError::Write(e) => ApiError::from(e),
            SubmitError::Closed => ApiError::unavailable(
                "the service is shutting down: nothing was written; retry after the restart",
            ),
        })
    }

    /// The trust class of a registered principal.
    pub async fn class_of(&self, name: &PrincipalName) -> ApiResult<TrustClass> {
        if let Some(c) = self.classes.lock().ok().and_then(|m| m.get(name).copied()) {
            return Ok(c);
        }
        let owned = name.clone();
        let class = self
            .read(move |mem| {
                let registry = mem.registry()?;
                registry
                    .get(owned.as_str())
                    .map(|p| p.class)
                    .ok_or_else(|| {
                        ApiError::new(
                            axum::http::StatusCode::FORBIDDEN,
                            "refused",
                            format!("principal `{owned}` is not registered in this store"),
                        )
                    })
            })
            .await?;
        if let Ok(mut m) = self.classes.lock() {
            m.insert(name.clone(), class);
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
