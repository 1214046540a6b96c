//! What a reader trusts about a log's history, kept apart from the store: a checkpoint it
//! holds (given once, or remembered in a directory it owns) and, optionally, a witness policy
//! the checkpoints it accepts must meet. The checks themselves are the handle's
//! (`memory/reader.rs`): with a [`ReaderTrust`] every open, read, search and gate first proves
//! that the store's tree extends the held checkpoint.

use super::files::{lock, origin_file, private_dir, read_optional, write_atomic};
use crate::error::{Error, StateDirError};
use memlineage_core::Hash256;
use memlineage_core::checkpoint::{Checkpoint, parse_note};
use memlineage_core::witness::Policy;
use std::path::{Path, PathBuf};

/// Where a reader's trusted checkpoint comes from.
#[derive(Clone, Debug)]
pub enum TrustedCheckpoint {
    /// A signed checkpoint note the caller trusts (for example read from a file, or obtained
    /// from a witness): checked on every operation; the handle remembers newer verified
    /// checkpoints for its own lifetime but never writes them anywhere.
    Note(String),
    /// A directory the client owns, apart from the store, holding the latest verified
    /// checkpoint of each log (`DIR/<sha256(origin)>.checkpoint`). It advances only after a
    /// newer checkpoint verified against it. When it holds nothing for a log yet, the first
    /// checkpoint that verifies is trusted on first use.
    StateDir(PathBuf),
}

/// What a reader requires of the store's history.
#[derive(Clone, Debug, Default)]
pub struct ReaderTrust {
    /// The checkpoint the store must be consistent with.
    pub checkpoint: Option<TrustedCheckpoint>,
    /// Witnesses whose cosignatures (per the policy's quorum) a checkpoint needs before
    /// retrieval anchors to it or the client remembers it.
    pub witnesses: Option<Policy>,
}

impl ReaderTrust {
    /// True when nothing is required (the handle then checks only the store's own
    /// checkpoint, as without a reader).
    pub fn is_empty(&self) -> bool {
        self.checkpoint.is_none() && self.witnesses.is_none()
    }
}

/// A checkpoint held by a reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Its tree size.
    pub size: u64,
    /// Its root.
    pub root: Hash256,
    /// The signed note.
    pub note: String,
}

impl Held {
    /// Parses a checkpoint note (its signature is the caller's to check).
    pub fn from_note(note: &str) -> Result<(Held, Checkpoint), Error> {
        let parsed = parse_note(note)?;
        let cp = Checkpoint::parse_body(&parsed.body)?;
        Ok((
            Held {
                size: cp.size,
                root: cp.root,
                note: note.to_string(),
            },
            cp,
        ))
    }
}

/// A client's state directory.
#[derive(Clone, Debug)]
pub(crate) struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    pub(crate) fn new(dir: &Path) -> StateDir {
        StateDir {
            dir: dir.to_path_buf(),
        }
    }

    fn path(&self, origin: &str) -> PathBuf {
        self.dir.join(format!("{}.checkpoint", origin_file(origin)))
    }

    /// The checkpoint held for `origin`, if any.
    pub(crate) fn load(&self, origin: &str) -> Result<Option<Held>, Error> {
        let path = self.path(origin);
        let Some(note) = read_optional(&path)? else {
            return Ok(None);
        };
        let damaged = |problem: String| StateDirError::Damaged {
            path: path.display().to_string(),
            problem,
        };
        let (held, cp) = Held::from_note(&note)
            .map_err(|e| damaged(format!("the held checkpoint does not parse: {e}")))?;
        if cp.origin != origin {
            return Err(damaged(format!(
                "holds a checkpoint of `{}`, not of `{origin}`",
                cp.origin
            ))
            .into());
        }
        Ok(Some(held))
    }

    /// Replaces the held checkpoint of `origin` under the directory's lock, after `check`
    /// accepted the new one against whatever the directory holds then (another process may
    /// have advanced it meanwhile). Returns what is held afterwards.
    pub(crate) fn advance(
        &self,
        origin: &str,
        new: &Held,
        check: impl FnOnce(Option<&Held>) -> Result<(), Error>,
    ) -> Result<Held, Error> {
        private_dir(&self.dir)?;
        let _guard = lock(&self.dir)?;
        let current = self.load(origin)?;
        check(current.as_ref())?;
        match current {
            Some(c) if c.size >= new.size => Ok(c),
            _ => {
                write_atomic(&self.path(origin), new.note.as_bytes())?;
                Ok(new.clone())
            }
        }
    }
}
