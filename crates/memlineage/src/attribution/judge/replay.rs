//! Record/replay of judge replies, so that evaluations are deterministic and need no model.
//!
//! A [`ReplayJudge`] wraps any [`JudgeBackend`] and keeps its replies in a JSON-lines file, one
//! object per line:
//!
//! ```json
//! {"key":"<64 hex>","model":"SmolLM2-135M-Instruct-Q4_1@b179c9523d0e","micros":812345,"reply":"{\"weights\": …}"}
//! {"key":"<64 hex>","model":"openai:smollm2","micros":301234,"reply":"…","mode":"json-object-schema"}
//! ```
//!
//! `key` is SHA-256 over `memlineage/judge-replay/v1\0` followed by the model id, the system
//! prompt and the user message, each prefixed by its length as a big-endian u64 — so a reply is
//! replayed only for the exact request and model that produced it. `micros` is the wall time
//! the backend took when the reply was recorded (for cost reports; `null` when unknown).
//! `mode`, present only for backends with several request modes (the OpenAI-compatible
//! judge's reply formats), is the mode that answered; replaying gives it back with the reply,
//! so a replayed judgement records the same attribution name as the live one.
//! Later lines override earlier ones with the same key; [`ReplayJudge::compact`] rewrites the
//! file sorted by key with one line per key, which is the form to commit.
//!
//! Modes: [`ReplayMode::Replay`] never calls the backend (a missing key is an error, which
//! [`super::LmSelfEval`] turns into the coarse fallback); [`ReplayMode::Record`] always calls
//! it and stores the reply; [`ReplayMode::Fill`] replays what is stored and records what is not.

use super::{JudgeBackend, JudgeReply};
use crate::attribution::AttributionError;
use memlineage_core::Hash256;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// How a [`ReplayJudge`] uses its file and its backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayMode {
    /// Answer from the file only; a missing key is [`AttributionError::ReplayMiss`].
    Replay,
    /// Always call the backend, and store (replace) the reply.
    Record,
    /// Answer from the file when it has the key, else call the backend and store the reply.
    Fill,
}

impl std::str::FromStr for ReplayMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "replay" => Ok(ReplayMode::Replay),
            "record" => Ok(ReplayMode::Record),
            "fill" => Ok(ReplayMode::Fill),
            _ => Err(format!(
                "unknown replay mode `{s}`: expected replay, record or fill"
            )),
        }
    }
}

/// One stored reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recorded {
    /// The request key (hex SHA-256).
    pub key: String,
    /// The model id of the backend that answered.
    pub model: String,
    /// Wall time of the backend call when recorded, in microseconds.
    pub micros: Option<u64>,
    /// The reply, verbatim.
    pub reply: String,
    /// The request mode that answered, for backends with several (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// The replay key of one request.
pub fn replay_key(model_id: &str, system: &str, user: &str) -> String {
    let mut buf = b"memlineage/judge-replay/v1\0".to_vec();
    for part in [model_id, system, user] {
        buf.extend_from_slice(&(part.len() as u64).to_be_bytes());
        buf.extend_from_slice(part.as_bytes());
    }
    Hash256::of(&buf).to_hex()
}

struct State {
    map: BTreeMap<String, Recorded>,
    file: Option<File>,
}

/// A [`JudgeBackend`] that records and replays another one's replies (see the module docs).
pub struct ReplayJudge {
    inner: Option<Box<dyn JudgeBackend>>,
    model_id: String,
    mode: ReplayMode,
    path: PathBuf,
    state: Mutex<State>,
}

impl std::fmt::Debug for ReplayJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayJudge")
            .field("model_id", &self.model_id)
            .field("mode", &self.mode)
            .field("path", &self.path)
            .field("live", &self.inner.is_some())
            .finish_non_exhaustive()
    }
}

impl ReplayJudge {
    /// Wraps `backend`. In [`ReplayMode::Replay`] the file must exist; in the other modes it is
    /// created on the first reply recorded.
    pub fn new(
        backend: impl JudgeBackend + 'static,
        path: impl AsRef<Path>,
        mode: ReplayMode,
    ) -> Result<ReplayJudge, AttributionError> {
        let model_id = backend.model_id();
        Self::open(Some(Box::new(backend)), model_id, path.as_ref(), mode)
    }

    /// Replays a file with no backend at all (no model needed): answers as the model
    /// `model_id` did when the file was recorded.
    pub fn replay_only(
        model_id: &str,
        path: impl AsRef<Path>,
    ) -> Result<ReplayJudge, AttributionError> {
        Self::open(
            None,
            model_id.to_string(),
            path.as_ref(),
            ReplayMode::Replay,
        )
    }

    /// Replays a file with no backend, as the one model that recorded it (an error when the
    /// file is empty or mixes replies of several models).
    pub fn replay_file(path: impl AsRef<Path>) -> Result<ReplayJudge, AttributionError> {
        let path = path.as_ref();
        let f = File::open(path).map_err(|source| AttributionError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let map = load(f, path)?;
        let mut models: Vec<&str> = map.values().map(|r| r.model.as_str()).collect();
        models.sort_unstable();
        models.dedup();
        match models.as_slice() {
            [one] => Self::replay_only(one, path),
            _ => Err(AttributionError::ReplayFormat {
                path: path.display().to_string(),
                line: 0,
                message: format!(
                    "expected replies of exactly one model, found {}",
                    models.len()
                ),
            }),
        }
    }

    fn open(
        inner: Option<Box<dyn JudgeBackend>>,
        model_id: String,
        path: &Path,
        mode: ReplayMode,
    ) -> Result<ReplayJudge, AttributionError> {
        let map = match File::open(path) {
            Ok(f) => load(f, path)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && mode != ReplayMode::Replay => {
                BTreeMap::new()
            }
            Err(source) => {
                return Err(AttributionError::Io {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        Ok(ReplayJudge {
            inner,
            model_id,
            mode,
            path: path.to_path_buf(),
            state: Mutex::new(State { map, file: None }),
        })
    }

    /// The mode.
    pub fn mode(&self) -> ReplayMode {
        self.mode
    }

    /// The stored reply for this request, if any.
    pub fn recorded(&self, system: &str, user: &str) -> Option<Recorded> {
        let key = replay_key(&self.model_id, system, user);
        self.lock().map.get(&key).cloned()
    }

    /// How many replies are stored.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether no reply is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves the map consistent (inserts are atomic).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn io_err(&self, source: std::io::Error) -> AttributionError {
        AttributionError::Io {
            path: self.path.display().to_string(),
            source,
        }
    }

    fn store(&self, rec: Recorded) -> Result<(), AttributionError> {
        let mut line = serde_json::to_string(&rec).unwrap_or_default();
        line.push('\n');
        let mut st = self.lock();
        if st.file.is_none() {
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| self.io_err(e))?;
            st.file = Some(f);
        }
        if let Some(f) = st.file.as_mut() {
            f.write_all(line.as_bytes()).map_err(|e| self.io_err(e))?;
        }
        st.map.insert(rec.key.clone(), rec);
        Ok(())
    }

    /// Rewrites the file with one line per key, sorted by key (atomically, through a temporary
    /// file and a rename). Keys not used since the file was opened are kept.
    pub fn compact(&self) -> Result<(), AttributionError> {
        let mut st = self.lock();
        st.file = None;
        let mut out = String::new();
        for rec in st.map.values() {
            out.push_str(&serde_json::to_string(rec).unwrap_or_default());
            out.push('\n');
        }
        let tmp = self.path.with_extension("jsonl.tmp");
        std::fs::write(&tmp, out).map_err(|e| self.io_err(e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| self.io_err(e))
    }

    /// Keeps only the given keys (before [`ReplayJudge::compact`], to drop stale replies).
    pub fn retain_keys(&self, keys: &std::collections::BTreeSet<String>) {
        self.lock().map.retain(|k, _| keys.contains(k));
    }
}

fn load(f: File, path: &Path) -> Result<BTreeMap<String, Recorded>, AttributionError> {
    let mut map = BTreeMap::new();
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|source| AttributionError::Io {
            path: path.display().to_string(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let rec: Recorded =
            serde_json::from_str(&line).map_err(|e| AttributionError::ReplayFormat {
                path: path.display().to_string(),
                line: i + 1,
                message: e.to_string(),
            })?;
        if rec.key.len() != 64 || !rec.key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(AttributionError::ReplayFormat {
                path: path.display().to_string(),
                line: i + 1,
                message: "key is not 64 hex digits".into(),
            });
        }
        map.insert(rec.key.clone(), rec);
    }
    Ok(map)
}

impl JudgeBackend for ReplayJudge {
    fn model_id(&self) -> String {
        self.model_id.clone()
    }

    fn complete(&self, system: &str, user: &str) -> Result<String, AttributionError> {
        self.complete_detailed(system, user).map(|r| r.text)
    }

    /// The live backend's mode; replaying only, the mode of the stored replies when they all
    /// have the same one.
    fn mode(&self) -> Option<String> {
        if let Some(inner) = &self.inner {
            return inner.mode();
        }
        let st = self.lock();
        let mut modes = st.map.values().map(|r| r.mode.clone());
        let first = modes.next().flatten();
        modes.all(|m| m == first).then_some(first).flatten()
    }

    fn complete_detailed(&self, system: &str, user: &str) -> Result<JudgeReply, AttributionError> {
        let key = replay_key(&self.model_id, system, user);
        if self.mode != ReplayMode::Record
            && let Some(rec) = self.lock().map.get(&key)
        {
            return Ok(JudgeReply {
                text: rec.reply.clone(),
                mode: rec.mode.clone(),
            });
        }
        let inner = match (&self.inner, self.mode) {
            (Some(inner), ReplayMode::Record | ReplayMode::Fill) => inner,
            _ => {
                return Err(AttributionError::ReplayMiss {
                    key,
                    path: self.path.display().to_string(),
                });
            }
        };
        let start = Instant::now();
        let reply = inner.complete_detailed(system, user)?;
        let micros = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.store(Recorded {
            key,
            model: self.model_id.clone(),
            micros: Some(micros),
            reply: reply.text.clone(),
            mode: reply.mode.clone(),
        })?;
        Ok(reply)
    }
}
