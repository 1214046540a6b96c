//! Group commit across concurrent requests.
//!
//! Every write the service acknowledges — single entries, batches, gate decision records —
//! goes through one committer thread. It takes the first waiting job, then every job that
//! arrived meanwhile (up to [`MAX_GROUP`] entries), and appends them all with one
//! [`Memory::write_batch`](memlineage::Memory::write_batch): one transaction, one fsync, and
//! the signing spread over every core. While that commit runs, the next group gathers, so the
//! group grows with the load and the fsync is amortised over it (`docs/service.md`,
//! "Group commit").
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
use memlineage::{WriteRequest, Written};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

/// The most entries committed in one transaction. Larger groups amortise the fsync further but
/// lengthen the latency of every write in them; 512 keeps a group's commit near 10 ms here.
pub const MAX_GROUP: usize = 512;

/// Jobs queued before submitters wait (back-pressure).
const QUEUE: usize = 8192;

type Reply = oneshot::Sender<Result<Vec<Written>, memlineage::Error>>;

struct Job {
    reqs: Vec<WriteRequest>,
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
        let thread = std::thread::Builder::new()
            .name("memlineage-commit".into())
            .spawn(move || run(&mem, rx))?;
        Ok((Committer { tx }, thread))
    }

    /// Appends `reqs` (all or nothing) in the next group commit; returns once they are durable.
    pub async fn submit(&self, reqs: Vec<WriteRequest>) -> Result<Vec<Written>, SubmitError> {
        let (reply, answer) = oneshot::channel();
        let ticket = crate::deadline::current();
        self.tx
            .send(Job {
                reqs,
                reply,
                ticket,
            })
            .await
            .map_err(|_| SubmitError::Closed)?;
        match answer.await {
            Ok(Ok(w)) => Ok(w),
            Ok(Err(e)) => Err(SubmitError::Write(e)),
            Err(_) => Err(SubmitError::Closed),
        }
    }
}

fn run(mem: &Mem, mut rx: mpsc::Receiver<Job>) {
    while let Some(first) = rx.blocking_recv() {
        // A job whose request timed out while it waited is dropped: its client was told that
        // nothing was written.
        if !first.claim() {
            continue;
        }
        let mut entries = first.reqs.len();
        let mut group = vec![first];
        while entries < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) if !job.claim() => {}
                Ok(job) => {
                    entries += job.reqs.len();
                    group.push(job);
                }
                Err(_) => break,
            }
        }
        let started = Instant::now();
        metrics::histogram!("memlineage_commit_group_entries").record(entries as f64);
        commit(mem, group);
        metrics::histogram!("memlineage_commit_seconds").record(started.elapsed().as_secs_f64());
    }
}

/// Commits a group, splitting it on failure so that only bad jobs fail.
fn commit(mem: &Mem, mut group: Vec<Job>) {
    if group.len() == 1 {
        if let Some(job) = group.pop() {
            let n = job.reqs.len();
            let result = mem.write_batch(job.reqs);
            count(n, result.is_ok());
            let _ = job.reply.send(result);
        }
        return;
    }
    let all: Vec<WriteRequest> = group.iter().flat_map(|j| j.reqs.iter().cloned()).collect();
    let n = all.len();
    match mem.write_batch(all) {
        Ok(written) => {
            count(n, true);
            let complete = written.len() == n;
            let mut rest = written.into_iter();
            for job in group {
                let mine: Vec<Written> = rest.by_ref().take(job.reqs.len()).collect();
                // Never re-submitted: the group is committed, whatever the answer's length.
                let _ = job.reply.send(if complete {
                    Ok(mine)
                } else {
                    Err(memlineage::Error::Internal(
                        "the store acknowledged a group commit with the wrong number of entries"
                            .into(),
                    ))
                });
            }
        }
        Err(_) => {
            let second = group.split_off(group.len() / 2);
            commit(mem, group);
            commit(mem, second);
        }
    }
}

fn count(entries: usize, ok: bool) {
    let result = if ok { "ok" } else { "refused" };
    metrics::counter!("memlineage_writes_total", "result" => result).increment(entries as u64);
}
