//! The batch signature check of a retrieval on a second core, while the first does the rest.
//!
//! The batch signature check of a retrieval's results is about 40 % of a retrieval
//! (`docs/performance.md`), and nothing else a retrieval checks (proofs, parents' labels, the
//! distrust walk) depends on it. So a handle keeps one helper thread, started at its first
//! retrieval of two or more entries, and each retrieval hands it the signatures of all its
//! decoded candidates as soon as they are decoded, before its other checks. The retrieval's
//! result is unchanged:
//!
//! - when the helper answers that every candidate's signature verifies ([`keys::verify_batch`]
//!   is `Ok`), so would every subset of them, in particular the entries that pass the other
//!   checks, which are the ones the retrieval verifies: the weak-key and small-order checks are
//!   per signature, and the batch equation holds for a set exactly when each member's
//!   cofactored equation ([8][S]B = [8]R + [8][k]A, RFC 8032 §5.1.7) holds, up to the batch's
//!   2^-128 soundness error;
//! - in every other case — some candidate fails, the helper has not picked the job up by the
//!   time the retrieval needs the answer (the job is then taken back, not waited for), the
//!   helper is busy with another retrieval of the same handle, the process may use one core —
//!   the retrieval verifies its entries itself, exactly as before.
//!
//! Signatures this handle verified before (`verified_cache.rs`) are not handed over: only the
//! others are verified, here or by the retrieval. A thread
//! spawned per retrieval would cost its start (measured ≈ 80 µs before it ran, on the 2-vCPU
//! benchmark machine); the helper waits on a condition variable between jobs. Where it runs is
//! the scheduler's choice: beside the retrieval on an idle core (the retrieval then waits
//! ≈ 80 µs less), or on the retrieval's own core when the other is busy, which only changes the
//! order of the same work.

use ed25519_dalek::{Signature, VerifyingKey};
use memlineage_core::EntryId;
use memlineage_core::keys::{self, BatchItem, Domain};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;

/// One signature of a job: the entry's id, its signer's key, its signed bytes, its signature.
pub(super) type Item = (EntryId, VerifyingKey, Vec<u8>, Signature);

/// A handle's helper, started at the first job (when the process may use two cores).
#[derive(Default)]
pub(super) struct SignatureHelper(OnceLock<Option<Helper>>);

impl SignatureHelper {
    /// Hands `items` to the helper. Without a helper, or while it is busy with another job,
    /// nothing is started and [`Pending::verified`] answers `None`.
    pub(super) fn start(&self, items: Vec<Item>) -> Pending<'_> {
        let helper = if items.len() > 1 {
            self.0
                .get_or_init(Helper::start)
                .as_ref()
                .filter(|h| h.post(&items))
        } else {
            None
        };
        Pending { helper, items }
    }
}

/// A job handed to the helper, or not.
pub(super) struct Pending<'h> {
    helper: Option<&'h Helper>,
    /// What was handed over, to match the retrieval's entries against.
    items: Vec<Item>,
}

impl Pending<'_> {
    /// `Some(true)` when every signature of the job verifies and the job covers `wanted` (each
    /// of them is a job item with the same key); `Some(false)` when some signature fails;
    /// `None` when the job was not run (no helper, or taken back before the helper started
    /// it) or does not cover `wanted`. Only `Some(true)` lets the caller skip its own check.
    pub(super) fn verified(mut self, wanted: &[(EntryId, VerifyingKey)]) -> Option<bool> {
        let answer = self.helper.take()?.answer();
        let covers = wanted.iter().all(|(id, key)| {
            self.items
                .iter()
                .any(|(i, k, _, _)| i == id && k.as_bytes() == key.as_bytes())
        });
        answer.filter(|_| covers)
    }
}

impl Drop for Pending<'_> {
    /// A job whose retrieval ended early (an error) is taken back or waited for, so that the
    /// helper is free for the next one.
    fn drop(&mut self) {
        if let Some(helper) = self.helper.take() {
            helper.answer();
        }
    }
}

/// The helper thread, stopped when the handle is dropped.
struct Helper {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a job is posted, or on close.
    posted: Condvar,
    /// Signalled when the helper has answered.
    answered: Condvar,
}

enum State {
    /// Nothing to do.
    Idle,
    /// A job waiting for the helper (or to be taken back).
    Posted(Vec<(VerifyingKey, Vec<u8>, Signature)>),
    /// The helper is verifying a job.
    Running,
    /// The helper's answer for the posted job.
    Answered(bool),
    /// The handle is gone: the helper exits.
    Closed,
}

/// Locks the state. No code panics while holding the lock, so a poisoned lock still holds a
/// consistent state and is used as is.
fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether every signature of the job verifies, as [`keys::verify_batch`] answers.
fn verify(job: &[(VerifyingKey, Vec<u8>, Signature)]) -> bool {
    let items: Vec<BatchItem<'_>> = job
        .iter()
        .map(|(key, bytes, signature)| BatchItem {
            key,
            bytes,
            signature,
        })
        .collect();
    keys::verify_batch(Domain::EntryV1, &items).is_ok()
}

impl Helper {
    /// Starts the helper thread, when the process may use two cores and a thread can be
    /// spawned.
    fn start() -> Option<Helper> {
        if super::signing::signing_threads() < 2 {
            return None;
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State::Idle),
            posted: Condvar::new(),
            answered: Condvar::new(),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("memlineage-verify".into())
            .spawn(move || serve(&theirs))
            .ok()?;
        Some(Helper {
            shared,
            thread: Some(thread),
        })
    }

    /// Posts a job when the helper is idle; `false` when it is busy.
    fn post(&self, items: &[Item]) -> bool {
        {
            let mut state = lock(&self.shared);
            if !matches!(*state, State::Idle) {
                return false;
            }
            let job = items
                .iter()
                .map(|(_, key, bytes, sig)| (*key, bytes.clone(), *sig))
                .collect();
            *state = State::Posted(job);
        }
        self.shared.posted.notify_one();
        true
    }

    /// The answer to the posted job: waits while the helper runs it; takes it back (`None`)
    /// when the helper has not started it.
    ///
    /// The wait yields the core instead of sleeping, for up to [`YIELD_WAIT`]: a thread woken
    /// from a sleep is placed by the scheduler, which tends to put it on the core of the thread
    /// that woke it, here the helper's — and the helper's next job then lands on the caller's
    /// core, one after the other instead of side by side. Yielding keeps the caller where it
    /// is and still lets a helper on the same core run; the helper finishes within one batch
    /// check, so the yields are bounded.
    fn answer(&self) -> Option<bool> {
        let started = std::time::Instant::now();
        let mut state = lock(&self.shared);
        loop {
            match std::mem::replace(&mut *state, State::Idle) {
                State::Posted(_) => return None,
                State::Answered(all) => return Some(all),
                State::Running if started.elapsed() < YIELD_WAIT => {
                    *state = State::Running;
                    drop(state);
                    std::thread::yield_now();
                    state = lock(&self.shared);
                }
                State::Running => {
                    *state = State::Running;
                    state = self
                        .shared
                        .answered
                        .wait(state)
                        .unwrap_or_else(|e| e.into_inner());
                }
                // Cannot happen while the handle is alive and the job is posted.
                State::Idle | State::Closed => return None,
            }
        }
    }
}

/// How long a caller yields while the helper runs its job before it sleeps instead: a few
/// times a batch check of a retrieval's results (≈ 0.15 ms).
const YIELD_WAIT: std::time::Duration = std::time::Duration::from_millis(1);

/// The helper's loop: wait for a job, verify it, answer; exit on close. A panic while
/// verifying answers `false` (the retrieval then verifies its entries itself).
fn serve(shared: &Shared) {
    loop {
        let job = {
            let mut state = lock(shared);
            loop {
                match std::mem::replace(&mut *state, State::Running) {
                    State::Posted(job) => break job,
                    State::Closed => {
                        *state = State::Closed;
                        return;
                    }
                    other => {
                        *state = other;
                        state = shared.posted.wait(state).unwrap_or_else(|e| e.into_inner());
                    }
                }
            }
        };
        let all = std::panic::catch_unwind(|| verify(&job)).unwrap_or(false);
        *lock(shared) = State::Answered(all);
        shared.answered.notify_all();
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        *lock(&self.shared) = State::Closed;
        self.shared.posted.notify_all();
        if let Some(thread) = self.thread.take() {
            // The helper's loop catches panics, so it exits by returning.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;
    use memlineage_core::Hash256;

    fn items(n: u8) -> Vec<Item> {
        (0..n)
            .map(|i| {
                let key = SigningKey::from_bytes(&[i; 32]);
                let bytes = vec![i; 40];
                let sig = keys::sign(&key, Domain::EntryV1, &bytes);
                (EntryId(Hash256::of(&[i])), key.verifying_key(), bytes, sig)
            })
            .collect()
    }

    fn wanted(items: &[Item]) -> Vec<(EntryId, VerifyingKey)> {
        items.iter().map(|(id, k, _, _)| (*id, *k)).collect()
    }

    #[test]
    fn answers_agree_with_verify_batch_or_are_left_to_the_caller() {
        let helper = SignatureHelper::default();
        for n in [0u8, 1, 2, 5, 8] {
            let good = items(n);
            for _ in 0..20 {
                let answer = helper.start(good.clone()).verified(&wanted(&good));
                assert!(answer.is_none_or(|all| all), "{n} good signatures");
            }
            if n < 2 {
                continue;
            }
            let mut bad = good.clone();
            bad[1].3 = bad[0].3;
            for _ in 0..20 {
                let answer = helper.start(bad.clone()).verified(&wanted(&bad));
                assert!(answer.is_none_or(|all| !all), "{n} with a bad one");
            }
            // An entry the job does not cover, or covers with another key: no answer.
            let others = items(n + 1);
            let pending = helper.start(good.clone());
            assert_eq!(pending.verified(&wanted(&others)), None);
            let mut rekeyed = wanted(&good);
            rekeyed[0].1 = others[n as usize].1;
            assert_eq!(helper.start(good.clone()).verified(&rekeyed), None);
        }
    }

    #[test]
    fn concurrent_retrievals_share_one_helper() {
        let helper = SignatureHelper::default();
        let good = items(8);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..25 {
                        let answer = helper.start(good.clone()).verified(&wanted(&good));
                        assert!(answer.is_none_or(|all| all));
                    }
                });
            }
        });
    }
}
