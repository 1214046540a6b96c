//! The offline monitor over a store opened read-only ([`OpenMode::ReadOnly`], read through
//! [`BackendRead`], best in one snapshot): it reads the latest signed checkpoint, the log's
//! consistency proof from the tree it verified last, the new leaves and their content, and
//! parents' leaves with inclusion proofs, and hands them to `memlineage_core::monitor`, which
//! trusts none of them before checking. Its state lives in a directory it owns, one JSON file
//! per log (`DIR/<sha256(origin)>.json`).
//!
//! What the monitor reads of the store: the leaves and their content, the checkpoint notes,
//! the `origin` setting, and stored Merkle nodes only as material for proofs that it verifies
//! against roots it computed itself. It reads no derived table and needs no key.
//!
//! [`OpenMode::ReadOnly`]: crate::OpenMode::ReadOnly

use super::files::{lock, origin_file, private_dir, read_optional, write_atomic};
use crate::error::{Error, HistoryError, StateDirError, StoreState};
use crate::memory::read::{root_at_in, unverified_consistency_proof, unverified_inclusion_proof};
use crate::store::BackendRead;
use memlineage_core::Hash256;
use memlineage_core::checkpoint::{Checkpoint, NoteVerifier, parse_note};
use memlineage_core::monitor::{Finding, Monitor, MonitorState, ParentLeaf};
use std::path::Path;

/// Leaves are read this many at a time.
const CHUNK: u64 = 4096;

/// What one run of the monitor found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MonitorReport {
    /// The log's origin.
    pub origin: String,
    /// The size verified before this run.
    pub from_size: u64,
    /// The size verified after it (unchanged when a history finding stopped it).
    pub to_size: u64,
    /// The root verified after it.
    pub root: Hash256,
    /// How many new leaves were checked.
    pub entries_checked: u64,
    /// Whether the state advanced.
    pub advanced: bool,
    /// Everything found: rollbacks, forks, checkpoints that do not match, entries that do not
    /// check.
    pub findings: Vec<Finding>,
}

impl MonitorReport {
    /// True when nothing was found.
    pub fn ok(&self) -> bool {
        self.findings.is_empty()
    }
}

/// A monitor's state directory.
#[derive(Debug, Clone)]
pub struct MonitorDir {
    dir: std::path::PathBuf,
}

impl MonitorDir {
    /// The state directory `dir` (created when missing).
    pub fn new(dir: &Path) -> Result<MonitorDir, Error> {
        private_dir(dir)?;
        Ok(MonitorDir {
            dir: dir.to_path_buf(),
        })
    }

    fn path(&self, origin: &str) -> std::path::PathBuf {
        self.dir.join(format!("{}.json", origin_file(origin)))
    }

    /// Follows the log `store` reads (a read-only backend, or a snapshot of one) from the
    /// state kept for its origin (a new monitor when there is none: `pinned` is then the
    /// log's verifier key to trust, and a given `pinned` must match the one kept), then checks
    /// each of `others` (checkpoint notes seen elsewhere) against the verified tree, and saves
    /// the advanced state.
    pub fn run(
        &self,
        store: &dyn BackendRead,
        pinned: Option<NoteVerifier>,
        others: &[String],
    ) -> Result<MonitorReport, Error> {
        let origin = store
            .setting("origin")?
            .ok_or_else(|| StoreState::NotInitialised {
                missing: "origin".into(),
            })?;
        let _guard = lock(&self.dir)?;
        let path = self.path(&origin);
        let damaged = |problem: String| StateDirError::Damaged {
            path: path.display().to_string(),
            problem,
        };
        let monitor = match read_optional(&path)? {
            Some(text) => {
                let state = MonitorState::from_json(&text).map_err(|e| damaged(e.to_string()))?;
                if state.origin() != origin {
                    return Err(
                        damaged(format!("follows `{}`, not `{origin}`", state.origin())).into(),
                    );
                }
                if let (Some(given), Some(kept)) = (&pinned, state.pinned())
                    && given != kept
                {
                    return Err(StateDirError::Mismatch {
                        dir: self.dir.display().to_string(),
                        problem: format!(
                            "the monitor was set up to trust {kept}, not {given}; use another state directory to follow the log under another key"
                        ),
                    }
                    .into());
                }
                Monitor::from_state(state).map_err(damaged)?
            }
            None => {
                if let Some(p) = &pinned
                    && p.name() != origin
                {
                    return Err(HistoryError::OtherLog {
                        what: "verifier key",
                        named: p.name().to_string(),
                        origin,
                    }
                    .into());
                }
                Monitor::new(&origin, pinned)
            }
        };
        let (report, next) = follow(store, &monitor, others)?;
        if let Some(state) = next {
            write_atomic(&path, state.to_json().as_bytes())?;
        }
        Ok(report)
    }
}

/// One run: follow the store's latest checkpoint, then check `others`.
fn follow(
    store: &dyn BackendRead,
    monitor: &Monitor,
    others: &[String],
) -> Result<(MonitorReport, Option<MonitorState>), Error> {
    let held = monitor.state();
    let mut report = MonitorReport {
        origin: held.origin().to_string(),
        from_size: held.size(),
        to_size: held.size(),
        root: held.root(),
        entries_checked: 0,
        advanced: false,
        findings: Vec::new(),
    };
    let mut next: Option<MonitorState> = None;
    let size = store.size()?;
    if size < held.size() {
        // The log holds fewer leaves than were verified: whatever its checkpoints say.
        let seen_root = root_at_in(store, size).unwrap_or_default();
        report.findings.push(Finding::Rollback {
            held_size: held.size(),
            held_root: held.root(),
            seen_size: size,
            seen_root,
        });
    }
    let latest = store.latest_checkpoint()?;
    let mut current = monitor.clone();
    if let Some(note) = latest.filter(|_| report.findings.is_empty()) {
        let cp_size = checkpoint_size(&note);
        let proof = match cp_size {
            Some(s) if s >= held.size() && s <= size => {
                unverified_consistency_proof(store, held.size(), s)
            }
            _ => Ok(Vec::new()),
        };
        match proof {
            Err(e) => report.findings.push(Finding::Fork {
                held_size: held.size(),
                held_root: held.root(),
                seen_size: cp_size.unwrap_or(0),
                seen_root: Hash256::default(),
                detail: format!("the log cannot prove consistency with the verified tree: {e}"),
            }),
            Ok(proof) => match monitor.follow(&note, &proof) {
                Err(f) => report.findings.push(f),
                Ok(mut follow) => {
                    let (verified_size, _) = follow.verified_tree();
                    while follow.next_index() < follow.target_size() {
                        let start = follow.next_index();
                        let rows = store.entries(start, CHUNK.min(follow.target_size() - start))?;
                        if rows.is_empty() {
                            break;
                        }
                        for row in rows {
                            if row.index != follow.next_index() {
                                break;
                            }
                            let mut parent = |id: &memlineage_core::EntryId| -> Option<ParentLeaf> {
                                let p = store.entry_by_id(id).ok()??;
                                let proof =
                                    unverified_inclusion_proof(store, p.index, verified_size)
                                        .ok()?;
                                Some(ParentLeaf {
                                    index: p.index,
                                    leaf: p.leaf,
                                    proof,
                                })
                            };
                            follow.push(&row.leaf, row.content.as_deref(), &mut parent);
                            report.entries_checked += 1;
                        }
                    }
                    let outcome = follow.finish();
                    report.findings.extend(outcome.findings);
                    if let Some(state) = outcome.state {
                        current = Monitor::from_state(state.clone()).map_err(Error::internal)?;
                        report.to_size = state.size();
                        report.root = state.root();
                        report.advanced =
                            state.size() > held.size() || held.checkpoint_note().is_none();
                        next = Some(state);
                    }
                }
            },
        }
    }
    for note in others {
        let verified = current.state().size();
        let proof = match checkpoint_size(note) {
            Some(s) if s <= verified => {
                unverified_consistency_proof(store, s, verified).unwrap_or_default()
            }
            _ => Vec::new(),
        };
        if let Err(f) = current.check_other(note, &proof) {
            report.findings.push(f);
        }
    }
    Ok((report, next))
}

fn checkpoint_size(note: &str) -> Option<u64> {
    let parsed = parse_note(note).ok()?;
    Checkpoint::parse_body(&parsed.body).ok().map(|cp| cp.size)
}
