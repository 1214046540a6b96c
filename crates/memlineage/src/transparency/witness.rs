//! A witness that keeps its state in a directory it owns (C2SP tlog-witness): its key, the
//! logs it verifies, and for each log the checkpoint it cosigned last.
//!
//! ```text
//! DIR/witness.key          the Ed25519 seed, hex, mode 0600 (DIR is 0700)
//! DIR/witness.conf         `name <witness name>` and one `log <vkey>` line per trusted log key
//! DIR/logs/<sha256(origin)> the last cosigned checkpoint of that log (log signature and ours)
//! DIR/evidence/…           authenticated requests that were refused as inconsistent
//! DIR/lock                 held while a request is checked and the record updated
//! ```
//!
//! The decisions are `memlineage_core::witness::Cosigner`'s; this file adds the files and the
//! lock that makes "check against the last cosigned size, then record the new one" atomic
//! between processes (the race the spec warns about). [`FileWitness::add_checkpoint`] takes the
//! request body and returns status, content type and body, so an HTTP service can mount it.

use super::files::{io_err, lock, origin_file, private_dir, read_optional, write_atomic};
use crate::error::{Error, StateDirError};
use crate::keyring::{Keyring, save_key};
use memlineage_core::PrincipalName;
use memlineage_core::checkpoint::{Checkpoint, CosignatureVerifier, NoteVerifier, parse_note};
use memlineage_core::witness::{Cosigned, Cosigner, KnownLogs, Refusal, WitnessResponse};
use std::path::{Path, PathBuf};

/// The witness key's file name in its directory (`witness.key`).
const KEY_NAME: &str = "witness";
const CONFIG: &str = "witness.conf";

/// A witness backed by a directory.
#[derive(Debug)]
pub struct FileWitness {
    dir: PathBuf,
    cosigner: Cosigner,
    logs: KnownLogs,
}

impl FileWitness {
    /// Creates a witness in `dir` (which must not hold one) named `name` with a new key.
    pub fn init(
        dir: &Path,
        name: &str,
        key: ed25519_dalek::SigningKey,
    ) -> Result<FileWitness, Error> {
        let cosigner = Cosigner::new(name, key.clone())?;
        if dir.join(CONFIG).exists() {
            return Err(StateDirError::Exists {
                what: "witness",
                dir: dir.display().to_string(),
            }
            .into());
        }
        private_dir(dir)?;
        save_key(dir, &key_name()?, &key)?;
        write_atomic(&dir.join(CONFIG), format!("name {name}\n").as_bytes())?;
        Ok(FileWitness {
            dir: dir.to_path_buf(),
            cosigner,
            logs: KnownLogs::new(),
        })
    }

    /// Opens the witness in `dir`.
    pub fn open(dir: &Path) -> Result<FileWitness, Error> {
        let path = dir.join(CONFIG);
        let text = read_optional(&path)?.ok_or_else(|| StateDirError::Missing {
            what: "witness",
            dir: dir.display().to_string(),
            hint: "create one with `memlineage witness init`",
        })?;
        let mut name = None;
        let mut logs = KnownLogs::new();
        for (i, line) in text.lines().enumerate() {
            let bad = |why: String| StateDirError::Damaged {
                path: path.display().to_string(),
                problem: format!("line {}: {why}", i + 1),
            };
            match line.split_once(' ') {
                Some(("name", n)) => name = Some(n.to_string()),
                Some(("log", v)) => {
                    logs.add(NoteVerifier::parse(v).map_err(|e| bad(e.to_string()))?)
                }
                _ if line.trim().is_empty() || line.starts_with('#') => {}
                _ => {
                    return Err(bad(format!(
                        "expected `name NAME` or `log VKEY`, found {line:?}"
                    ))
                    .into());
                }
            }
        }
        let name = name.ok_or_else(|| StateDirError::Damaged {
            path: path.display().to_string(),
            problem: "no `name` line".into(),
        })?;
        let ring = Keyring::new();
        ring.load_dir(dir)?;
        let key = ring.get(&key_name()?)?;
        Ok(FileWitness {
            dir: dir.to_path_buf(),
            cosigner: Cosigner::new(&name, key)?,
            logs,
        })
    }

    /// The witness's cosignature verifier key (type `0x04`), to put in a log's or a reader's
    /// policy.
    pub fn verifier(&self) -> &CosignatureVerifier {
        self.cosigner.verifier()
    }

    /// The logs this witness verifies.
    pub fn logs(&self) -> &KnownLogs {
        &self.logs
    }

    /// Trusts `vkey` to sign checkpoints of the log named by its key name (a rotated log key
    /// is added beside the old one).
    pub fn add_log(&mut self, vkey: NoteVerifier) -> Result<(), Error> {
        let _guard = lock(&self.dir)?;
        let path = self.dir.join(CONFIG);
        let mut text = read_optional(&path)?.unwrap_or_default();
        if !text.lines().any(|l| l == format!("log {vkey}")) {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("log {vkey}\n"));
            write_atomic(&path, text.as_bytes())?;
        }
        self.logs.add(vkey);
        Ok(())
    }

    /// The checkpoint this witness cosigned last for `origin`, with the log's signatures and
    /// its cosignature (what C2SP tlog-witness serves to monitors), if any.
    pub fn latest(&self, origin: &str) -> Result<Option<Cosigned>, Error> {
        let path = self.record_path(origin);
        let Some(note) = read_optional(&path)? else {
            return Ok(None);
        };
        let damaged = |problem: String| StateDirError::Damaged {
            path: path.display().to_string(),
            problem,
        };
        let cp = parse_note(&note)
            .and_then(|n| Checkpoint::parse_body(&n.body))
            .map_err(|e| damaged(e.to_string()))?;
        if cp.origin != origin {
            return Err(damaged(format!(
                "holds a checkpoint of `{}`, not of `{origin}`",
                cp.origin
            ))
            .into());
        }
        Ok(Some(Cosigned {
            size: cp.size,
            root: cp.root,
            note,
        }))
    }

    /// The note of [`latest`](Self::latest) by the SHA-256 of the origin in lowercase hex:
    /// what C2SP tlog-witness serves at `GET <monitoring prefix>/<origin hash>/checkpoint`
    /// (`None`: answer 404). Anything but 64 lowercase hex digits is `None`, so the argument
    /// never names another file.
    pub fn latest_by_origin_hash(&self, origin_hash: &str) -> Result<Option<String>, Error> {
        let well_formed = origin_hash.len() == 64
            && origin_hash
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !well_formed {
            return Ok(None);
        }
        read_optional(&self.dir.join("logs").join(origin_hash))
    }

    fn record_path(&self, origin: &str) -> PathBuf {
        self.dir.join("logs").join(origin_file(origin))
    }

    /// Answers an `add-checkpoint` request body at the system clock's time.
    pub fn add_checkpoint(&self, body: &[u8]) -> Result<WitnessResponse, Error> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.add_checkpoint_at(body, now)
    }

    /// Answers an `add-checkpoint` request body, cosigning at `now` (POSIX seconds).
    ///
    /// A refusal is an `Ok` response with its status (`400`, `403`, `404`, `409`, `422`); an
    /// `Err` is the witness's own failure (its files), for which a service answers `500`.
    pub fn add_checkpoint_at(&self, body: &[u8], now: u64) -> Result<WitnessResponse, Error> {
        let sub = match self.cosigner.authenticate(&self.logs, body) {
            Ok(s) => s,
            Err(refusal) => return Ok(refusal.response()),
        };
        let _guard = lock(&self.dir)?;
        let latest = self.latest(&sub.checkpoint.origin)?;
        match self.cosigner.decide(&sub, latest.as_ref(), now) {
            Ok((record, response)) => {
                private_dir(&self.dir.join("logs"))?;
                write_atomic(
                    &self.record_path(&sub.checkpoint.origin),
                    record.note.as_bytes(),
                )?;
                Ok(response)
            }
            Err(refusal) => {
                if matches!(
                    refusal,
                    Refusal::Inconsistent(_) | Refusal::OldSizeBeyondCheckpoint { .. }
                ) {
                    self.keep_evidence(&sub.checkpoint, body)?;
                }
                Ok(refusal.response())
            }
        }
    }

    /// Keeps an authenticated request that contradicts the witness's record: a signed
    /// checkpoint of a rollback or a fork is proof of the log's misbehaviour.
    fn keep_evidence(&self, cp: &Checkpoint, body: &[u8]) -> Result<(), Error> {
        let dir = self.dir.join("evidence");
        private_dir(&dir)?;
        let path = dir.join(format!(
            "{}-{}-{}.request",
            origin_file(&cp.origin),
            cp.size,
            &cp.root.to_hex()[..16]
        ));
        write_atomic(&path, body).map_err(|e| match e {
            Error::Io { source, .. } => io_err(&path, source),
            other => other,
        })
    }
}

/// The principal-style name the witness key is kept under (`witness.key`).
fn key_name() -> Result<PrincipalName, Error> {
    PrincipalName::new(KEY_NAME).map_err(|e| Error::internal(format!("witness key name: {e}")))
}

/// Something that answers `add-checkpoint` requests: a local [`FileWitness`], or an HTTP
/// client of a remote witness (the service provides one).
pub trait WitnessTransport {
    /// Sends the request body and returns the witness's response.
    fn add_checkpoint(&self, body: &[u8]) -> Result<WitnessResponse, Error>;
}

impl WitnessTransport for FileWitness {
    fn add_checkpoint(&self, body: &[u8]) -> Result<WitnessResponse, Error> {
        FileWitness::add_checkpoint(self, body)
    }
}
