//! The decisions of a witness (C2SP tlog-witness §add-checkpoint), without I/O: the caller
//! keeps the witness's record of each log and must make [`Cosigner::decide`] and the update
//! of that record one atomic step (the spec's race: two requests checked against the same old
//! state could roll the record back).
//!
//! Order of the checks, with the status each failure answers:
//!
//! 1. the body parses (`400`), its note parses and its text is a checkpoint (`400`);
//! 2. the origin is a log the witness knows (`404`);
//! 3. a signature from a key trusted for that origin verifies, and none from such a key fails
//!    (`403`);
//! 4. the old size is at most the checkpoint's size (`400`);
//! 5. the old size is the size the witness last cosigned, `0` if none (`409`, body: that size);
//! 6. a size-0 checkpoint has the empty tree's root; a proof from size 0 is empty; the proof
//!    verifies from the cosigned root to the new root, and equal sizes have equal roots
//!    (`422`).
//!
//! Then the witness cosigns with a timestamp and records the checkpoint as its latest.

use super::request::AddCheckpoint;
use super::response::{Refusal, WitnessResponse};
use crate::Hash256;
use crate::checkpoint::{
    Checkpoint, CheckpointError, CosignatureVerifier, NoteVerifier, append_signatures, cosign,
    open_note, parse_note,
};
use crate::merkle::{empty_root, verify_consistency};
use ed25519_dalek::SigningKey;
use std::collections::BTreeMap;

/// What a witness remembers of one log: the checkpoint it cosigned last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosigned {
    /// Its tree size.
    pub size: u64,
    /// Its root.
    pub root: Hash256,
    /// The checkpoint note with the log's signatures and this witness's cosignature: what the
    /// witness serves to monitors, and evidence if the log ever contradicts it.
    pub note: String,
}

/// The logs a witness verifies, by origin: each with the keys trusted to sign its checkpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownLogs {
    logs: BTreeMap<String, Vec<NoteVerifier>>,
}

impl KnownLogs {
    /// No log known.
    pub fn new() -> KnownLogs {
        KnownLogs::default()
    }

    /// Trusts `verifier` for the log whose origin is its key name. A rotated log key is added
    /// beside the old one.
    pub fn add(&mut self, verifier: NoteVerifier) {
        let keys = self.logs.entry(verifier.name().to_string()).or_default();
        if !keys.contains(&verifier) {
            keys.push(verifier);
        }
    }

    /// The keys trusted for `origin`.
    pub fn keys(&self, origin: &str) -> Option<&[NoteVerifier]> {
        self.logs.get(origin).map(Vec::as_slice)
    }

    /// Every (origin, keys) pair, by origin.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[NoteVerifier])> {
        self.logs.iter().map(|(o, k)| (o.as_str(), k.as_slice()))
    }
}

/// A request whose checkpoint is signed by a key the witness trusts for its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// The note as submitted.
    pub note: String,
    /// The old size sent.
    pub old_size: u64,
    /// The consistency proof sent.
    pub proof: Vec<Hash256>,
}

/// A witness: its name (the key name of its cosignatures) and its Ed25519 key.
#[derive(Debug, Clone)]
pub struct Cosigner {
    name: String,
    key: SigningKey,
    verifier: CosignatureVerifier,
}

impl Cosigner {
    /// A witness named `name` (a schema-less URL by convention) signing with `key`.
    pub fn new(name: &str, key: SigningKey) -> Result<Cosigner, CheckpointError> {
        let verifier = CosignatureVerifier::new(name, key.verifying_key())?;
        Ok(Cosigner {
            name: name.to_string(),
            key,
            verifier,
        })
    }

    /// The witness's verifier key (type `0x04`), to publish.
    pub fn verifier(&self) -> &CosignatureVerifier {
        &self.verifier
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Checks 1–4: parses the request and authenticates its checkpoint.
    pub fn authenticate(&self, logs: &KnownLogs, body: &[u8]) -> Result<Submission, Refusal> {
        let req = AddCheckpoint::parse(body).map_err(Refusal::Malformed)?;
        let parsed = parse_note(&req.checkpoint)
            .map_err(|e| Refusal::Malformed(format!("the checkpoint note: {e}")))?;
        let checkpoint = Checkpoint::parse_body(&parsed.body)
            .map_err(|e| Refusal::Malformed(format!("the checkpoint: {e}")))?;
        let keys = logs
            .keys(&checkpoint.origin)
            .ok_or_else(|| Refusal::UnknownOrigin(clip(&checkpoint.origin)))?;
        let mut verified = false;
        let mut last = None;
        for key in keys {
            match open_note(&req.checkpoint, key) {
                Ok(_) => verified = true,
                Err(e @ CheckpointError::NoVerifiedSignature { .. }) => last = Some(e),
                Err(e) => return Err(Refusal::Unauthenticated(e.to_string())),
            }
        }
        if !verified {
            return Err(Refusal::Unauthenticated(last.map_or_else(
                || "no key is trusted for this origin".to_string(),
                |e| e.to_string(),
            )));
        }
        if req.old_size > checkpoint.size {
            return Err(Refusal::OldSizeBeyondCheckpoint {
                old_size: req.old_size,
                size: checkpoint.size,
            });
        }
        Ok(Submission {
            checkpoint,
            note: req.checkpoint,
            old_size: req.old_size,
            proof: req.proof,
        })
    }

    /// Checks 5–6 against `latest` (what the witness cosigned last for this origin, `None` if
    /// nothing), then cosigns at `now` (POSIX seconds; a zero clock is taken as 1, since the
    /// spec forbids a zero timestamp). Returns the new record and the `200` response.
    pub fn decide(
        &self,
        sub: &Submission,
        latest: Option<&Cosigned>,
        now: u64,
    ) -> Result<(Cosigned, WitnessResponse), Refusal> {
        let cp = &sub.checkpoint;
        let latest_size = latest.map_or(0, |c| c.size);
        if sub.old_size != latest_size {
            return Err(Refusal::Conflict {
                old_size: sub.old_size,
                latest: latest_size,
            });
        }
        if cp.size == 0 && cp.root != empty_root() {
            return Err(Refusal::Inconsistent(format!(
                "a checkpoint of size 0 must have the empty tree's root {}, not {}",
                empty_root(),
                cp.root
            )));
        }
        if sub.old_size == 0 {
            if !sub.proof.is_empty() {
                return Err(Refusal::Inconsistent(
                    "a consistency proof from size 0 must be empty".into(),
                ));
            }
        } else if let Some(prev) = latest {
            verify_consistency(prev.size, cp.size, &prev.root, &cp.root, &sub.proof).map_err(
                |e| {
                    Refusal::Inconsistent(format!(
                        "the checkpoint of size {} (root {}) is not consistent with the checkpoint of size {} (root {}) this witness cosigned: {e}",
                        cp.size, cp.root, prev.size, prev.root
                    ))
                },
            )?;
        }
        let body = cp.body();
        let line = cosign(&body, &self.name, &self.key, now.max(1))
            .map_err(|e| Refusal::Malformed(e.to_string()))?;
        let note = append_signatures(&sub.note, &line)
            .map_err(|e| Refusal::Malformed(format!("the checkpoint note: {e}")))?;
        Ok((
            Cosigned {
                size: cp.size,
                root: cp.root,
                note,
            },
            WitnessResponse::cosigned(line),
        ))
    }
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}
