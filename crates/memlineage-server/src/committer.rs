//! Group commit across concurrent requests.
//!
//! Every write the service acknowledges — single entries, batches, gate decision records —
//! goes through one committer thread. Each request's entries arrive already labelled and
//! signed, on the request's own thread ([`Memory::sign_writes`](memlineage::Memory::sign_writes)),
//! so the committer does only what needs the log head. It takes the first waiting job, then
//! every job that arrived meanwhile (up to [`MAX_GROUP`] entries), and appends them all with
//! one [`Memory::append_signed`](memlineage::Memory::append_signed): one transaction, one
//! fsync, every signer and label re-checked against the log as of the transaction. While that
//! commit runs, the next group gathers, so the group grows with the load and the fsync is
//! amortised over it (`docs/service.md`, "Group commit").
//!
//! A commit costs about as much for one entry as for dozens (the Merkle nodes' pages, the
//! indexes' last pages, the WAL frames' headers, the fsync), so a committer that commits the
//! moment anything is queued keeps its groups small under load and spends its time on that
//! fixed cost. So, as PostgreSQL's `commit_delay` with `commit_siblings`, it waits — only when
//! other writes are on their way, being decided, labelled and signed on other threads
//! ([`Committer::on_its_way`]), and at most [`COMMIT_DELAY`] — for that many more jobs before
//! it commits. A lone writer never waits.
//!
//! A job is answered only after its commit returned, so a response with an id means the entry
//! is durable. Each job stays all-or-nothing: when a group fails because one job is bad (an
//! unknown parent, a revoked writer), the group is split in halves and each half committed
//! again, down to the bad job, which alone gets the error — a bad request never fails another
//! client's write, and k bad jobs in a group of n cost O(k log n) commits, not n.
//!
//! On shutdown the channel closes when the last request handler is gone; the thread commits
//! every job still queued, then exits, and the server waits for it.

use crate::deadline::Ticket;
use crate::state::Mem;
use memlineage::{SignedWrites, Written};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// The most entries committed in one transaction. Larger groups amortise the fsync further but
/// lengthen the latency of every write in them; 512 keeps a group's commit near 10 ms here.
pub const MAX_GROUP: usize = 512;

/// Jobs queued before submitters wait (back-pressure).
const QUEUE: usize = 8192;

/// The longest a group waits for writes on their way (the wait normally ends sooner, when
/// they arrive; tokio's timer rounds it up to the next millisecond).
pub const COMMIT_DELAY: Duration = Duration::from_millis(1);

/// What a job's commit answered.
pub type Committed = Result<Vec<Written>, SubmitError>;

/// Where a job's answer goes: a request's task waiting on a channel, or a call that answers its
/// request with more than the entries written (a gate decision, `api/gate.rs`).
pub type Reply = Box<dyn FnOnce(Committed) + Send>;

struct Job {
    writes: SignedWrites,
    reply: Reply,
    /// The request's deadline ticket: claimed when the job joins a group; a job whose request
    /// already timed out is dropped unwritten (`deadline.rs`).
    ticket: Option<Ticket>,
}

impl Job {
    /// Whether the job may still be committed (its request has not timed out).
    fn claim(&self) -> bool {
        self.ticket.as_ref().is_none_or(Ticket::begin_write)
    }
}

/// The submitting side, cloned into every handler.
#[derive(Clone)]
pub struct Committer {
    tx: mpsc::Sender<Job>,
    /// Writes on their way to the queue ([`OnItsWay`]).
    preparing: Arc<AtomicUsize>,
}

/// One write on its way to the committer: counted from [`Committer::on_its_way`] until its
/// job is about to be queued, or dropped unsent (a refused request).
pub struct OnItsWay(Arc<AtomicUsize>);

impl Drop for OnItsWay {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why a job was not committed by the committer.
#[derive(Debug)]
pub enum SubmitError {
    /// The library refused or failed the write.
    Write(memlineage::Error),
    /// The committer is gone (shutting down).
    Closed,
}

impl Committer {
    /// Starts the committer thread on `mem`; the handle joins it once every [`Committer`] is
    /// dropped and the queue is drained.
    pub fn start(mem: Arc<Mem>) -> std::io::Result<(Committer, std::thread::JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel(QUEUE);
        let preparing = Arc::new(AtomicUsize::new(0));
        // The committer's own runtime, for waiting on the queue with a deadline.
        let waits = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()?;
        let on_way = Arc::clone(&preparing);
        let thread = std::thread::Builder::new()
            .name("memlineage-commit".into())
            .spawn(move || run(&mem, &waits, rx, &on_way))?;
        Ok((Committer { tx, preparing }, thread))
    }

    /// Counts a write that will be submitted shortly (its decision, labels and signatures are
    /// being made), so that the group being gathered waits for it.
    pub fn on_its_way(&self) -> OnItsWay {
        self.preparing.fetch_add(1, Ordering::AcqRel);
        OnItsWay(Arc::clone(&self.preparing))
    }

    /// Appends `writes` (all or nothing) in the next group commit; returns once they are
    /// durable. `way` stops counting the write as on its way as it is queued.
    pub async fn submit(&self, writes: SignedWrites, way: OnItsWay) -> Committed {
        let (tx, answer) = oneshot::channel();
        let reply: Reply = Box::new(move |committed| {
            let _ = tx.send(committed);
        });
        let job = Job {
            writes,
            reply,
            ticket: crate::deadline::current(),
        };
        // Uncounted just before it is queued: a group that misses it by a moment commits
        // without it (it joins the next), while one counting a write already queued would
        // wait for nothing.
        drop(way);
        if let Err(refused) = self.tx.send(job).await {
            (refused.0.reply)(Err(SubmitError::Closed));
        }
        answer.await.unwrap_or(Err(SubmitError::Closed))
    }

    /// [`Committer::submit`] from a thread outside the runtime (a library thread): queues the
    /// job and returns; `reply` gets the answer once the entries are durable (or the error).
    /// `ticket` is the request's deadline ticket, taken on the request's task.
    pub fn submit_from_thread(
        &self,
        writes: SignedWrites,
        way: OnItsWay,
        ticket: Option<Ticket>,
        reply: Reply,
    ) {
        let job = Job {
            writes,
            reply,
            ticket,
        };
        drop(way);
        if let Err(refused) = self.tx.blocking_send(job) {
            (refused.0.reply)(Err(SubmitError::Closed));
        }
    }
}

fn run(
    mem: &Mem,
    waits: &tokio::runtime::Runtime,
    mut rx: mpsc::Receiver<Job>,
    preparing: &AtomicUsize,
) {
    while let Some(first) = waits.block_on(rx.recv()) {
        // A job whose request timed out while it waited is dropped: its client was told that
        // nothing was written.
        if !first.claim() {
            continue;
        }
        let mut group = Group {
            entries: first.writes.len(),
            jobs: vec![first],
        };
        group.take_queued(&mut rx);
        // Writes on their way now will be queued within their preparation's time: wait for
        // as many more jobs (or the full group, or the delay).
        let expected = preparing.load(Ordering::Acquire);
        if expected > 0 && group.entries < MAX_GROUP {
            let deadline = tokio::time::Instant::now() + COMMIT_DELAY;
            let mut arrived = 0;
            while arrived < expected && group.entries < MAX_GROUP {
                match waits.block_on(async { tokio::time::timeout_at(deadline, rx.recv()).await }) {
                    Ok(Some(job)) => {
                        arrived += 1;
                        group.add(job);
                    }
                    // Closed (shutting down: commit what is here) or the delay is over.
                    Ok(None) | Err(_) => break,
                }
            }
            group.take_queued(&mut rx);
        }
        let started = Instant::now();
        metrics::histogram!("memlineage_commit_group_entries").record(group.entries as f64);
        commit(mem, group.jobs);
        metrics::histogram!("memlineage_commit_seconds").record(started.elapsed().as_secs_f64());
    }
}

/// The jobs of the group being gathered.
struct Group {
    jobs: Vec<Job>,
    /// Their entries.
    entries: usize,
}

impl Group {
    /// Adds `job` unless its request timed out while it waited.
    fn add(&mut self, job: Job) {
        if job.claim() {
            self.entries += job.writes.len();
            self.jobs.push(job);
        }
    }

    /// Adds every job already queued, up to [`MAX_GROUP`] entries.
    fn take_queued(&mut self, rx: &mut mpsc::Receiver<Job>) {
        while self.entries < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => self.add(job),
                Err(_) => break,
            }
        }
    }
}

/// Commits a group as one set of entries: each job's entries are moved after the previous
/// job's, and each job keeps its count and reply.
fn commit(mem: &Mem, group: Vec<Job>) {
    let mut waiting = Vec::with_capacity(group.len());
    let mut all: Option<SignedWrites> = None;
    for job in group {
        waiting.push((job.writes.len(), job.reply));
        match &mut all {
            Some(all) => all.extend(job.writes),
            None => all = Some(job.writes),
        }
    }
    if let Some(all) = all {
        commit_set(mem, all, waiting);
    }
}

/// Appends `writes`, the entries of the jobs `waiting` answers, in order; on failure splits
/// them in halves by job, so that only bad jobs fail.
fn commit_set(mem: &Mem, mut writes: SignedWrites, mut waiting: Vec<(usize, Reply)>) {
    let n = writes.len();
    match mem.append_signed(&writes) {
        Ok(written) => {
            count(n, true);
            let complete = written.len() == n;
            let mut rest = written.into_iter();
            for (k, reply) in waiting {
                let mine: Vec<Written> = rest.by_ref().take(k).collect();
                // Never re-submitted: the group is committed, whatever the answer's length.
                reply(if complete {
                    Ok(mine)
                } else {
                    Err(SubmitError::Write(memlineage::Error::Internal(
                        "the store acknowledged a group commit with the wrong number of entries"
                            .into(),
                    )))
                });
            }
        }
        Err(e) if waiting.len() <= 1 => {
            count(n, false);
            if let Some((_, reply)) = waiting.pop() {
                reply(Err(SubmitError::Write(e)));
            }
        }
        Err(_) => {
            let later = waiting.split_off(waiting.len() / 2);
            let at = waiting.iter().map(|(k, _)| k).sum();
            let second = writes.split_off(at);
            commit_set(mem, writes, waiting);
            commit_set(mem, second, later);
        }
    }
}

fn count(entries: usize, ok: bool) {
    let result = if ok { "ok" } else { "refused" };
    metrics::counter!("memlineage_writes_total", "result" => result).increment(entries as u64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage::{PrincipalName, Settings, SqliteStore, WriteRequest};
    use memlineage_core::entry::EntryKind;
    use memlineage_core::label::TrustClass;

    fn store() -> (Mem, PrincipalName) {
        let operator: PrincipalName = "operator".parse().unwrap();
        let agent: PrincipalName = "agent".parse().unwrap();
        let key = |b: u8| ed25519_dalek::SigningKey::from_bytes(&[b; 32]);
        let mem = memlineage::Memory::init(
            SqliteStore::in_memory().unwrap(),
            Settings::with_origin("test.local/committer"),
            &operator,
            key(1),
        )
        .unwrap();
        mem.add_principal(&agent, TrustClass::Trusted, &key(2).verifying_key())
            .unwrap();
        mem.keys().insert(&agent, key(2));
        (mem, agent)
    }

    fn job(writes: SignedWrites) -> (Job, oneshot::Receiver<Committed>) {
        let (tx, answer) = oneshot::channel();
        let job = Job {
            writes,
            reply: Box::new(move |c| {
                let _ = tx.send(c);
            }),
            ticket: None,
        };
        (job, answer)
    }

    #[test]
    fn a_bad_job_fails_alone_and_the_others_are_committed_in_order() {
        let (mem, agent) = store();
        let sign = |texts: &[&str]| {
            let reqs = texts
                .iter()
                .map(|t| WriteRequest::new(&agent, EntryKind::Observation, *t))
                .collect();
            mem.sign_writes(reqs).unwrap()
        };
        let texts: [&[&str]; 5] = [&["a1", "a2"], &["b"], &["c1", "c2", "c3"], &["d"], &["e"]];
        let mut jobs = Vec::new();
        let mut answers = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let writes = sign(t);
            if i == 3 {
                // Already in the log when the group commits: "already in the log".
                mem.append_signed(&writes).unwrap();
            }
            let (j, a) = job(writes);
            jobs.push(j);
            answers.push(a);
        }
        let size = mem.size().unwrap();
        commit(&mem, jobs);
        let results: Vec<_> = answers
            .into_iter()
            .map(|mut a| a.try_recv().unwrap())
            .collect();
        for (i, r) in results.iter().enumerate() {
            match (i, r) {
                (3, Err(SubmitError::Write(e))) => {
                    assert!(e.to_string().contains("already in the log"), "{e}")
                }
                (3, Err(SubmitError::Closed)) => panic!("the committer was closed"),
                (3, Ok(w)) => panic!("the duplicate job was committed: {w:?}"),
                (_, Ok(w)) => assert_eq!(w.len(), texts[i].len()),
                (_, Err(e)) => panic!("job {i} failed with the bad one: {e:?}"),
            }
        }
        // Every good entry once, each job's entries together and in order.
        assert_eq!(mem.size().unwrap(), size + 7);
        for (i, r) in results.iter().enumerate() {
            if let Ok(w) = r {
                for (k, written) in w.iter().enumerate() {
                    let view = mem.get(&written.id).unwrap();
                    assert_eq!(view.content.as_deref(), Some(texts[i][k].as_bytes()));
                    assert_eq!(view.index, w[0].index + k as u64);
                }
            }
        }
    }

    #[test]
    fn a_job_submitted_from_a_plain_thread_is_answered_once_durable() {
        let (mem, agent) = store();
        let mem = Arc::new(mem);
        let (committer, thread) = Committer::start(Arc::clone(&mem)).unwrap();
        let writes = mem
            .sign_writes(vec![WriteRequest::new(
                &agent,
                EntryKind::Observation,
                "from a library thread",
            )])
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let way = committer.on_its_way();
        let submitter = committer.clone();
        std::thread::spawn(move || {
            submitter.submit_from_thread(writes, way, None, Box::new(move |c| tx.send(c).unwrap()));
        })
        .join()
        .unwrap();
        let written = rx.recv_timeout(Duration::from_secs(30)).unwrap().unwrap();
        assert_eq!(written.len(), 1);
        // Answered only once the entry is in the log.
        let view = mem.get(&written[0].id).unwrap();
        assert_eq!(view.content.as_deref(), Some(&b"from a library thread"[..]));
        assert_eq!(committer.preparing.load(Ordering::SeqCst), 0);
        drop(committer);
        thread.join().unwrap();
    }
}
