//! Running independent jobs on several threads while keeping the output order fixed: results
//! are put back in job order, so the thread count never changes an artifact.

use crate::error::EvalError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Runs `f` on every job with `threads` workers; `tick` is called on the calling thread after
/// each finished job. Returns the results in job order, or the first error (by job order).
pub(crate) fn map<J, R, F>(
    jobs: &[J],
    threads: usize,
    f: F,
    tick: &mut dyn FnMut(),
) -> Result<Vec<R>, EvalError>
where
    J: Sync,
    R: Send,
    F: Fn(&J) -> Result<R, EvalError> + Sync,
{
    let threads = threads.clamp(1, jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<Result<R, EvalError>>> = (0..jobs.len()).map(|_| None).collect();
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel::<(usize, Result<R, EvalError>)>();
        for _ in 0..threads {
            let tx = tx.clone();
            let next = &next;
            let f = &f;
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let r = f(job);
                    let failed = r.is_err();
                    if tx.send((i, r)).is_err() || failed {
                        // Stop taking work after an error; the others finish what they hold.
                        next.store(jobs.len(), Ordering::Relaxed);
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, r) in rx {
            slots[i] = Some(r);
            tick();
        }
    });
    if let Some(pos) = slots.iter().position(|s| matches!(s, Some(Err(_)))) {
        if let Some(Some(Err(e))) = slots.into_iter().nth(pos) {
            return Err(e);
        }
        return Err(EvalError::Harness("a job failed".into()));
    }
    let mut out = Vec::with_capacity(jobs.len());
    for (i, slot) in slots.into_iter().enumerate() {
        match slot {
            Some(Ok(r)) => out.push(r),
            _ => return Err(EvalError::Harness(format!("job {i} did not run"))),
        }
    }
    Ok(out)
}
