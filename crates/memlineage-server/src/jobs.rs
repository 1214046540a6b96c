//! `verify` as a background job: a full audit of a large store takes minutes, longer than an
//! HTTP request should stay open. `POST /v1/verify` starts one (one at a time) and answers at
//! once with its id; `GET /v1/verify/{id}` shows its progress (entries checked of the total)
//! and, once done, the audit report.

use memlineage::AuditReport;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use utoipa::ToSchema;

/// Finished jobs kept for `GET`.
const KEPT: usize = 16;

/// The state of one job.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Still checking.
    Running,
    /// Finished; `report` says whether the store is sound.
    Done,
    /// The audit could not run to the end (`error` says why).
    Failed,
}

/// A job as `GET /v1/verify/{id}` shows it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct JobView {
    /// The job id.
    pub id: u64,
    /// Running, done or failed.
    pub state: JobState,
    /// Entries checked so far.
    pub done: u64,
    /// Entries to check.
    pub total: u64,
    /// The audit report, once done.
    #[schema(value_type = Option<Object>)]
    pub report: Option<serde_json::Value>,
    /// True when the report found no problem.
    pub ok: Option<bool>,
    /// Why the audit failed, when it did.
    pub error: Option<String>,
}

/// One job's shared progress.
pub struct Job {
    id: u64,
    done: AtomicU64,
    total: AtomicU64,
    end: Mutex<Option<Result<AuditReport, String>>>,
}

impl Job {
    /// Progress callback for `Memory::verify`.
    pub fn progress(&self, done: u64, total: u64) {
        self.done.store(done, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }

    /// Records the end.
    pub fn finish(&self, result: Result<AuditReport, String>) {
        if let Ok(r) = &result {
            self.done.store(r.entries, Ordering::Relaxed);
            self.total.store(r.entries, Ordering::Relaxed);
        }
        if let Ok(mut end) = self.end.lock() {
            *end = Some(result);
        }
    }

    fn view(&self) -> JobView {
        let end = self.end.lock().ok().and_then(|e| e.clone());
        let (state, report, ok, error) = match end {
            None => (JobState::Running, None, None, None),
            Some(Ok(r)) => (
                JobState::Done,
                serde_json::to_value(&r).ok(),
                Some(r.ok()),
                None,
            ),
            Some(Err(e)) => (JobState::Failed, None, None, Some(e)),
        };
        JobView {
            id: self.id,
            state,
            done: self.done.load(Ordering::Relaxed),
            total: self.total.load(Ordering::Relaxed),
            report,
            ok,
            error,
        }
    }

    fn running(&self) -> bool {
        self.end.lock().is_ok_and(|e| e.is_none())
    }
}

/// The jobs of this process.
#[derive(Default)]
pub struct Jobs {
    next: AtomicU64,
    jobs: Mutex<BTreeMap<u64, Arc<Job>>>,
}

impl Jobs {
    /// Starts tracking a new job; `Err` with the running job's id when one is running.
    pub fn start(&self) -> Result<Arc<Job>, u64> {
        let mut jobs = self.jobs.lock().map_err(|_| 0u64)?;
        if let Some(running) = jobs.values().find(|j| j.running()) {
            return Err(running.id);
        }
        while jobs.len() >= KEPT {
            let Some(first) = jobs.keys().next().copied() else {
                break;
            };
            jobs.remove(&first);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let job = Arc::new(Job {
            id,
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            end: Mutex::new(None),
        });
        jobs.insert(id, Arc::clone(&job));
        Ok(job)
    }

    /// A job's view.
    pub fn view(&self, id: u64) -> Option<JobView> {
        self.jobs.lock().ok()?.get(&id).map(|j| j.view())
    }

    /// The id of a job.
    pub fn id(job: &Job) -> u64 {
        job.id
    }
}
