//! Time, injected: the core never reads a clock, and the evaluation needs reproducible times.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of creation times, in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now_ms(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
}

/// A deterministic clock: starts at `start` and advances by `step` on every reading.
#[derive(Debug)]
pub struct StepClock {
    next: AtomicU64,
    step: u64,
}

impl StepClock {
    /// A clock that returns `start`, `start + step`, ...
    pub fn new(start: u64, step: u64) -> StepClock {
        StepClock {
            next: AtomicU64::new(start),
            step,
        }
    }
}

impl Clock for StepClock {
    fn now_ms(&self) -> u64 {
        self.next.fetch_add(self.step, Ordering::Relaxed)
    }
}
