//! The request deadline and its one promise: **a request answered with a timeout wrote
//! nothing**.
//!
//! Every request runs with a [`Ticket`] (a task-local set by the timeout layer,
//! `api/mod.rs`). A request that writes claims its ticket first — the committer claims it when
//! it takes the request's job into a group, a registry change or checkpoint claims it before it
//! calls the library — and the timeout layer, when the time runs out, tries to abandon the
//! ticket. Both are one compare-and-swap on the same cell, so exactly one of them wins:
//!
//! - the layer wins: the request had not begun to write, and never will (the committer drops a
//!   job whose ticket is abandoned); the client gets 503 `timeout` saying nothing was written;
//! - the write wins: it is being committed; the layer waits for it (up to a grace period of
//!   30 s) and answers what it answers, so a `201` still means durable and nothing is
//!   half-written — a batch is one transaction either way.

use crate::error::ApiError;
use axum::http::StatusCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

const PENDING: u8 = 0;
const WRITING: u8 = 1;
const ABANDONED: u8 = 2;

tokio::task_local! {
    static TICKET: Ticket;
}

/// One request's claim on writing, shared by the timeout layer and the request's writes.
#[derive(Clone, Debug, Default)]
pub struct Ticket(Arc<AtomicU8>);

impl Ticket {
    /// Claims the right to write: true when the request may write (now or already), false
    /// once the timeout layer abandoned it.
    pub fn begin_write(&self) -> bool {
        match self
            .0
            .compare_exchange(PENDING, WRITING, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => true,
            Err(state) => state == WRITING,
        }
    }

    /// Abandons the request: true when it had not begun to write (and now never will).
    pub fn abandon(&self) -> bool {
        self.0
            .compare_exchange(PENDING, ABANDONED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Runs `f` with this ticket as the current request's.
    pub async fn scope<F: std::future::Future>(self, f: F) -> F::Output {
        TICKET.scope(self, f).await
    }
}

/// The current request's ticket (none outside a request: a test, the committer itself).
pub fn current() -> Option<Ticket> {
    TICKET.try_with(Clone::clone).ok()
}

/// Claims the current request's ticket before a write outside the group commit; an error
/// when the request already timed out (it then writes nothing).
pub fn claim() -> Result<(), ApiError> {
    match current() {
        Some(t) if !t.begin_write() => Err(timed_out_before_writing()),
        _ => Ok(()),
    }
}

/// The answer to a request that timed out before it wrote anything.
pub fn timed_out_before_writing() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "timeout",
        "the request took longer than the service's request timeout and was stopped before it wrote anything: nothing was written; retry it, or raise `--timeout`",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_of_write_and_abandon_wins() {
        let t = Ticket::default();
        assert!(t.begin_write());
        assert!(t.begin_write(), "a request may write more than once");
        assert!(!t.abandon(), "a write in progress is never abandoned");
        let u = Ticket::default();
        assert!(u.abandon());
        assert!(!u.begin_write(), "an abandoned request never writes");
        assert!(!u.abandon());
    }

    #[test]
    fn racing_threads_never_both_win() {
        for _ in 0..200 {
            let t = Ticket::default();
            let (a, b) = (t.clone(), t.clone());
            let w = std::thread::spawn(move || a.begin_write());
            let x = std::thread::spawn(move || b.abandon());
            let (wrote, abandoned) = (w.join().unwrap(), x.join().unwrap());
            assert!(wrote != abandoned, "wrote {wrote}, abandoned {abandoned}");
        }
    }
}
