//! One look at the log for the gate decisions of a burst of requests.
//!
//! Before each decision the gate reads the log's size, the latest checkpoint note and the
//! registry, distrust and tombstone records appended since its last look
//! ([`Memory::gate_epoch`]): one read transaction, begun after the log changed, so SQLite
//! resets its page cache and reads its pages again — ≈ 7 % of the service's CPU per decision
//! (`docs/performance.md`, "One look at the log for a burst of gate decisions"). Under load the
//! requests of a burst arrive together, and one look serves all of them, on one condition that
//! keeps every decision as fresh as it would be alone: **a decision uses a look only if the
//! look began after its request arrived.** Everything acknowledged to anyone before the request
//! arrived — a distrust record, a revocation, a tombstone — was committed before the look began,
//! so the look sees it; a decision can never be older than its own request.
//!
//! The order is kept by one counter: a request takes a [`GateTicket`] (the counter's value) when
//! it arrives; a look takes the next value before it begins; the look numbered `n` serves
//! exactly the tickets below `n`.

use super::Memory;
use crate::error::Error;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The log as one look saw it (what [`Memory::gate_epoch`] returns): the size answers are
/// stamped with and the latest checkpoint note, or `None` when nothing may be remembered.
pub(super) type Epoch = Option<(u64, Option<String>)>;

/// When a gate request arrived, in the order of the looks at the log
/// ([`Memory::gate_ticket`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateTicket(u64);

/// The counter of looks and the latest look, shared by the threads deciding on one handle.
#[derive(Default)]
pub(super) struct SharedEpochs {
    /// The number of looks begun.
    begun: AtomicU64,
    /// The latest look finished: its number and what it saw.
    latest: Mutex<Option<(u64, Epoch)>>,
}

impl SharedEpochs {
    /// A request arriving now: the looks it may use are those begun from now on.
    pub(super) fn ticket(&self) -> GateTicket {
        GateTicket(self.begun.load(Ordering::SeqCst))
    }

    /// The latest look, if it began after `ticket` was taken.
    fn usable(&self, ticket: GateTicket) -> Option<Epoch> {
        let latest = self.latest.lock().ok()?;
        match latest.as_ref() {
            Some((n, epoch)) if *n > ticket.0 => Some(epoch.clone()),
            _ => None,
        }
    }

    /// A look is beginning: its number.
    fn begin(&self) -> u64 {
        self.begun.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Look `n` finished with `epoch`: kept unless a later look finished first.
    fn finished(&self, n: u64, epoch: &Epoch) {
        if let Ok(mut latest) = self.latest.lock()
            && latest.as_ref().is_none_or(|(m, _)| *m < n)
        {
            *latest = Some((n, epoch.clone()));
        }
    }
}

impl Memory {
    /// Stamps a gate request as it arrives, for [`Memory::gate_unrecorded_after`] and
    /// [`Memory::gate_record_after`]: take it when the request is received, before anything is
    /// decided.
    pub fn gate_ticket(&self) -> GateTicket {
        self.gate_epochs.ticket()
    }

    /// [`Memory::gate_epoch`] for a request that arrived at `ticket`: the latest look at the
    /// log when it began after the request arrived, else a new look (which later requests may
    /// use in turn).
    pub(super) fn gate_epoch_after(&self, ticket: GateTicket) -> Result<Epoch, Error> {
        if let Some(epoch) = self.gate_epochs.usable(ticket) {
            return Ok(epoch);
        }
        let n = self.gate_epochs.begin();
        let epoch = self.gate_epoch()?;
        self.gate_epochs.finished(n, &epoch);
        Ok(epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(size: u64) -> Epoch {
        Some((size, None))
    }

    #[test]
    fn a_look_serves_only_the_requests_that_arrived_before_it_began() {
        let e = SharedEpochs::default();
        let early = e.ticket();
        assert_eq!(e.usable(early), None, "no look yet");
        let n = e.begin();
        // Arrived while the look was under way: it may have missed what was acknowledged
        // before this request arrived.
        let during = e.ticket();
        e.finished(n, &epoch(10));
        assert_eq!(e.usable(early), Some(epoch(10)));
        assert_eq!(e.usable(during), None);
        let after = e.ticket();
        assert_eq!(e.usable(after), None);
        let m = e.begin();
        e.finished(m, &epoch(12));
        assert_eq!(e.usable(during), Some(epoch(12)));
        assert_eq!(e.usable(after), Some(epoch(12)));
        assert_eq!(e.usable(early), Some(epoch(12)));
    }

    #[test]
    fn a_look_that_finishes_late_never_replaces_a_later_one() {
        let e = SharedEpochs::default();
        let t = e.ticket();
        let first = e.begin();
        let second = e.begin();
        e.finished(second, &epoch(20));
        e.finished(first, &epoch(15));
        assert_eq!(e.usable(t), Some(epoch(20)));
        // A ticket taken between the two begins may use only the second.
        let e = SharedEpochs::default();
        let first = e.begin();
        let between = e.ticket();
        let second = e.begin();
        e.finished(first, &epoch(15));
        assert_eq!(e.usable(between), None);
        e.finished(second, &epoch(20));
        assert_eq!(e.usable(between), Some(epoch(20)));
    }
}
