//! The threads that run the service's blocking library calls: a fixed set, fed by one queue.
//!
//! Library calls read the store and verify signatures: they block, so they never run on the
//! request threads. tokio's blocking pool would run them, but every call there is a hand-off
//! through the pool's one mutex and condition variable, to a thread that was put to sleep after
//! its previous call and must be woken; under 64 concurrent gate requests those hand-offs and
//! wake-ups took more of the service's CPU than the decisions (`docs/performance.md`, "Library
//! threads"). Here a few threads take calls from a lock-free queue one after another: under
//! load a thread finds the next call waiting and never sleeps, and a call that ends in a
//! write hands it to the committer itself ([`crate::committer::Committer::submit_from_thread`]),
//! so the request's task is woken once, when its answer is ready.
//!
//! The threads are few (two per core, at least two, at most six): the calls are CPU-bound, and
//! the store keeps 8 idle reader connections — a ninth call at once would open a fresh one.
//! A call beyond them waits in the queue without a thread; one whose request is gone by its
//! turn (timed out, its client disconnected) is skipped, so a backlog of abandoned requests
//! costs no work. A call that panics is answered as a failed call (its thread goes on).

use crate::state::Mem;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// The most library calls that run at once, per core (at least 2, at most 6 in all).
const THREADS_PER_CORE: usize = 2;

/// A call queued for a library thread.
type Call = Box<dyn FnOnce(&Mem) + Send>;

/// The submitting side (cheap to clone); the threads end when every clone is dropped and the
/// queue is drained.
#[derive(Clone)]
pub struct LibraryThreads {
    tx: crossbeam_channel::Sender<Call>,
}

/// The number of threads: [`THREADS_PER_CORE`] per core, between 2 and 6.
pub fn thread_count() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    (cores * THREADS_PER_CORE).clamp(2, 6)
}

impl LibraryThreads {
    /// Starts `threads` threads on `mem`.
    pub fn start(
        mem: &Arc<Mem>,
        threads: usize,
    ) -> std::io::Result<(LibraryThreads, Vec<std::thread::JoinHandle<()>>)> {
        let (tx, rx) = crossbeam_channel::unbounded::<Call>();
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            let mem = Arc::clone(mem);
            handles.push(
                std::thread::Builder::new()
                    .name(format!("memlineage-lib-{i}"))
                    .spawn(move || {
                        for call in rx {
                            // A panic inside a call is caught where the call is made
                            // ([`LibraryThreads::run`]); this one only keeps the thread.
                            let _ = catch_unwind(AssertUnwindSafe(|| call(&mem)));
                        }
                    })?,
            );
        }
        Ok((LibraryThreads { tx }, handles))
    }

    /// Queues `call`; false when the threads are gone (shutting down).
    pub fn queue(&self, call: impl FnOnce(&Mem) + Send + 'static) -> bool {
        self.tx.send(Box::new(call)).is_ok()
    }

    /// Runs `f` on a library thread and waits for its answer; `None` when the threads are gone
    /// or `f` panicked.
    pub async fn run<T, F>(&self, f: F) -> Option<std::thread::Result<T>>
    where
        T: Send + 'static,
        F: FnOnce(&Mem) -> T + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let queued = self.queue(move |mem| {
            // The request was dropped while its call waited (it timed out, or its client went
            // away): nobody is waiting for the answer, so the call is not run.
            if tx.is_closed() {
                return;
            }
            let _ = tx.send(catch_unwind(AssertUnwindSafe(|| f(mem))));
        });
        if !queued {
            return None;
        }
        rx.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage::{PrincipalName, Settings, SqliteStore};

    fn mem() -> Arc<Mem> {
        let operator: PrincipalName = "operator".parse().unwrap();
        let key = ed25519_dalek::SigningKey::from_bytes(&[1; 32]);
        Arc::new(
            memlineage::Memory::init(
                SqliteStore::in_memory().unwrap(),
                Settings::with_origin("test.local/library-threads"),
                &operator,
                key,
            )
            .unwrap(),
        )
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn calls_run_on_the_threads_and_answer() {
        let (threads, handles) = LibraryThreads::start(&mem(), 2).unwrap();
        let rt = runtime();
        let answers: Vec<(u64, String)> = rt.block_on(async {
            let mut out = Vec::new();
            for _ in 0..8 {
                let a = threads
                    .run(|mem| {
                        let name = std::thread::current().name().unwrap_or("").to_string();
                        (mem.size().unwrap(), name)
                    })
                    .await;
                out.push(a.unwrap().unwrap());
            }
            out
        });
        for (size, thread) in answers {
            assert_eq!(size, 1, "the operator's registration");
            assert!(thread.starts_with("memlineage-lib-"), "ran on {thread}");
        }
        drop(threads);
        for h in handles {
            h.join().unwrap();
        }
    }

    #[test]
    fn a_call_that_panics_is_answered_as_failed_and_its_thread_goes_on() {
        let (threads, handles) = LibraryThreads::start(&mem(), 1).unwrap();
        let rt = runtime();
        rt.block_on(async {
            let failed = threads.run(|_| -> u8 { panic!("a bug in a call") }).await;
            assert!(matches!(failed, Some(Err(_))), "the panic was not reported");
            // The only thread took the next call.
            let next = threads.run(|_| 7u8).await;
            assert_eq!(next.unwrap().unwrap(), 7);
            // A queued call that panics without answering drops its reply unanswered.
            let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
            assert!(threads.queue(move |_| {
                let _keep = tx;
                panic!("no answer")
            }));
            assert!(rx.await.is_err());
        });
        drop(threads);
        for h in handles {
            h.join().unwrap();
        }
    }

    #[test]
    fn queued_calls_finish_before_the_threads_end() {
        let (threads, handles) = LibraryThreads::start(&mem(), 2).unwrap();
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for _ in 0..50 {
            let done = Arc::clone(&done);
            assert!(threads.queue(move |_| {
                std::thread::sleep(std::time::Duration::from_millis(1));
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }));
        }
        drop(threads);
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), 50);
    }

    #[test]
    fn a_call_whose_request_is_gone_is_not_run() {
        let (threads, handles) = LibraryThreads::start(&mem(), 1).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        // The only thread is busy until released.
        assert!(threads.queue(move |_| {
            let _ = blocked.recv();
        }));
        rt.block_on(async {
            let r = Arc::clone(&ran);
            let call = threads.run(move |_| r.store(true, std::sync::atomic::Ordering::SeqCst));
            // The request gives up while its call waits in the queue.
            let gave_up = tokio::time::timeout(std::time::Duration::from_millis(20), call).await;
            assert!(gave_up.is_err());
            release.send(()).unwrap();
            // Calls run in order: once the next one answered, the abandoned one had its turn.
            assert_eq!(threads.run(|_| 1u8).await.unwrap().unwrap(), 1);
        });
        assert!(
            !ran.load(std::sync::atomic::Ordering::SeqCst),
            "an abandoned call was run"
        );
        drop(threads);
        for h in handles {
            h.join().unwrap();
        }
    }
}
