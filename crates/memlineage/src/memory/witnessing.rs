//! The log's side of witnessing (C2SP tlog-witness, tlog-cosignature): its verifier key, the
//! `add-checkpoint` requests it sends, and the cosignatures it keeps beside its checkpoints
//! (the stored note gains the witnesses' signature lines; its text is unchanged).

use super::Memory;
use super::read::check_checkpoint_root;
use crate::error::{Error, InputError, IntegrityCheck, Refusal};
use crate::store::NoteRow;
use crate::transparency::witness::WitnessTransport;
use crate::transparency::{HttpTimeouts, WitnessTransports};
use memlineage_core::checkpoint::{
    Checkpoint, CheckpointError, CosignatureVerifier, NoteSignature, NoteVerifier,
    append_signatures,
};
use memlineage_core::principal::{Principal, Registry};
use memlineage_core::witness::{AddCheckpoint, Policy, SIZE_CONTENT_TYPE, parse_conflict_body};

/// One of the operator's checkpoint keys, as the registry in the log records it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct VerifierKeyRecord {
    /// The verifier key (`<origin>+<key id>+<base64>`).
    pub vkey: String,
    /// The log index of the registry record that added it (genesis or a rotation).
    pub added_at: u64,
    /// The log index of the rotation that retired it, if any.
    pub retired_at: Option<u64>,
}

/// What one witness answered.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WitnessAnswer {
    /// The policy's name for the witness.
    pub name: String,
    /// The HTTP status of its last answer (200: cosigned); 0 when no answer came (connection
    /// refused, timeout, a witness directory that cannot be opened): `message` says why.
    pub status: u16,
    /// Its refusal, or empty.
    pub message: String,
    /// The old size of the last request sent.
    pub old_size: u64,
    /// The timestamp of its cosignature, when it cosigned and the cosignature verified.
    pub timestamp: Option<u64>,
}

/// The result of asking the witnesses of a policy to cosign a checkpoint.
#[derive(Clone, Debug)]
pub struct WitnessRound {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// The stored note with every cosignature collected.
    pub note: String,
    /// Each witness's answer, in the policy's order.
    pub answers: Vec<WitnessAnswer>,
    /// The policy's witnesses that were not asked (no transport reaches them: no URL).
    pub not_asked: Vec<String>,
    /// The quorum in words.
    pub quorum: String,
    /// Whether the cosignatures on the note meet it.
    pub quorum_met: bool,
}

impl Memory {
    /// The log's verifier key now: the operator's current key under the log's origin, in the
    /// golang.org/x/mod/sumdb/note format (`<origin>+<key id>+<base64(0x01 || key)>`). A third
    /// party checks checkpoints with it and no secret.
    pub fn verifier_key(&self) -> Result<NoteVerifier, Error> {
        let registry = self.refresh_registry()?;
        let op = operator_record(&registry)?;
        let key = op.current_key().ok_or_else(|| Refusal::Revoked {
            name: op.name.clone(),
            at: op.revoked_at.unwrap_or_default(),
            reason: op.revoke_reason.clone(),
        })?;
        Ok(NoteVerifier::new(&self.settings.origin, key.key)?)
    }

    /// The latest stored checkpoint note, with every cosignature it carries (unverified: open
    /// it with [`Memory::latest_checkpoint`] or a witness policy).
    pub fn latest_checkpoint_note(&self) -> Result<Option<String>, Error> {
        self.reads().latest_checkpoint()
    }

    /// Every checkpoint key the operator has held, oldest first, with the log indices of the
    /// registry records that added and retired it: a rotation is published in the log itself.
    pub fn verifier_key_history(&self) -> Result<Vec<VerifierKeyRecord>, Error> {
        let registry = self.refresh_registry()?;
        let op = operator_record(&registry)?;
        op.keys
            .iter()
            .map(|k| {
                Ok(VerifierKeyRecord {
                    vkey: NoteVerifier::new(&self.settings.origin, k.key)?.to_vkey(),
                    added_at: k.added_at,
                    retired_at: k.retired_at,
                })
            })
            .collect()
    }

    /// The `add-checkpoint` request body for the checkpoint `note`, from `old_size` (the size
    /// the witness cosigned last): the consistency proof comes from the stored tree and is
    /// verified against the checkpoint's root first.
    pub fn witness_request(&self, note: &str, old_size: u64) -> Result<String, Error> {
        let cp = self.open_checkpoint_note(note, &*self.refresh_registry()?)?;
        if old_size > cp.size {
            return Err(InputError::TreeSize {
                asked: old_size,
                size: cp.size,
            }
            .into());
        }
        let (_, new_root, proof) = self.prove_consistency(old_size, cp.size)?;
        check_checkpoint_root(&cp, new_root)?;
        Ok(AddCheckpoint {
            old_size,
            proof,
            checkpoint: note.to_string(),
        }
        .to_body())
    }

    /// Asks the witnesses of `policy` that `transports` reaches (by the policy's witness name)
    /// to cosign the stored checkpoint `note`, keeps every cosignature that verifies on the
    /// stored note, and says whether the quorum is met.
    ///
    /// Each witness is first sent the size of the newest stored checkpoint it cosigned (0 if
    /// none); on `409 Conflict` (with the `text/x.tlog.size` body C2SP tlog-witness
    /// prescribes) the request is made again once from the size it names. A refusal is an
    /// answer, not an error: a witness that refuses to cosign a rolled-back or forked
    /// checkpoint is doing its job; a witness that does not answer (transport error) is
    /// reported with status 0, and the policy's quorum decides.
    pub fn witness_checkpoint(
        &self,
        note: &str,
        policy: &Policy,
        transports: &[(&str, &dyn WitnessTransport)],
    ) -> Result<WitnessRound, Error> {
        let cp = self.open_checkpoint_note(note, &*self.refresh_registry()?)?;
        let mut merged = note.to_string();
        let mut answers = Vec::new();
        let mut not_asked = Vec::new();
        for w in policy.witnesses() {
            let Some((_, transport)) = transports.iter().find(|(n, _)| *n == w.name) else {
                not_asked.push(w.name.clone());
                continue;
            };
            let mut old = self.last_cosigned_size(&w.verifier, cp.size)?;
            let mut tries = 0;
            let answer = loop {
                tries += 1;
                let response =
                    match transport.add_checkpoint(self.witness_request(note, old)?.as_bytes()) {
                        Ok(r) => r,
                        Err(e) => {
                            break WitnessAnswer {
                                name: w.name.clone(),
                                status: 0,
                                message: format!("no answer: {e}"),
                                old_size: old,
                                timestamp: None,
                            };
                        }
                    };
                let conflict = (response.status == 409
                    && response.content_type == SIZE_CONTENT_TYPE)
                    .then(|| parse_conflict_body(&response.body))
                    .flatten();
                match conflict {
                    Some(size) if tries < 2 && size <= cp.size && size != old => {
                        old = size;
                        continue;
                    }
                    _ => {}
                }
                let mut answer = WitnessAnswer {
                    name: w.name.clone(),
                    status: response.status,
                    message: String::new(),
                    old_size: old,
                    timestamp: None,
                };
                if response.status != 200 {
                    answer.message = match conflict {
                        Some(size) if size > cp.size => format!(
                            "the witness cosigned a checkpoint of size {size}, larger than this one ({}): the log went back (rolled back or restored from an older copy)",
                            cp.size
                        ),
                        _ => response.body.trim().to_string(),
                    };
                    break answer;
                }
                match own_lines(&response.body, &w.verifier)
                    .and_then(|lines| append_signatures(&merged, &lines))
                    .map_err(Error::from)
                    .and_then(|m| Ok((w.verifier.verify(&m)?, m)))
                {
                    Ok((ts, m)) => {
                        merged = m;
                        answer.timestamp = Some(ts);
                    }
                    Err(e) => answer.message = format!("its answer does not verify: {e}"),
                }
                break answer;
            };
            answers.push(answer);
        }
        if merged != note {
            self.backend
                .save_checkpoint(&NoteRow::new(cp.size, merged.clone()))?;
        }
        let check = policy.check(&merged);
        Ok(WitnessRound {
            checkpoint: cp,
            note: merged,
            answers,
            not_asked,
            quorum: policy.describe_quorum(),
            quorum_met: check.met,
        })
    }

    /// Signs a checkpoint and asks every witness of `policy` that has a URL (`file:///DIR`,
    /// `https://…`, `http://…`) to cosign it: [`Memory::checkpoint`], then
    /// [`Memory::witness_checkpoint`] over [`WitnessTransports::for_policy`]. A witness that
    /// does not answer within `timeouts` is reported (status 0) and the round goes on; whether
    /// the checkpoint counts as witnessed is the policy's quorum (`quorum_met`).
    pub fn checkpoint_and_witness(
        &self,
        policy: &Policy,
        timeouts: HttpTimeouts,
    ) -> Result<WitnessRound, Error> {
        let note = self.checkpoint()?;
        let transports = WitnessTransports::for_policy(policy, timeouts);
        self.witness_checkpoint(&note, policy, &transports.as_refs())
    }

    /// The size of the newest stored checkpoint (at most `max_size`) that `witness` cosigned,
    /// 0 if none.
    fn last_cosigned_size(
        &self,
        witness: &CosignatureVerifier,
        max_size: u64,
    ) -> Result<u64, Error> {
        for stored in self
            .reads()
            .checkpoint_notes(max_size, super::reader::WITNESSED_SEARCH)?
        {
            if witness.verify(&stored.note).is_ok() {
                return Ok(stored.size);
            }
        }
        Ok(0)
    }

    /// Adds cosignature lines a witness returned (for a request sent by other means, e.g. over
    /// HTTP) to the stored checkpoint they sign: the newest stored checkpoint (of the last
    /// few) on which one of `policy`'s witnesses' cosignatures verifies. Returns that
    /// checkpoint and the stored note.
    pub fn add_cosignatures(
        &self,
        lines: &str,
        policy: &Policy,
    ) -> Result<(Checkpoint, String), Error> {
        let registry = self.refresh_registry()?;
        for stored in self
            .reads()
            .checkpoint_notes(u64::MAX, super::reader::WITNESSED_SEARCH)?
        {
            let Ok(merged) = append_signatures(&stored.note, lines) else {
                continue;
            };
            let verifies = policy.witnesses().iter().any(|w| {
                w.verifier.verify(&merged).is_ok() && w.verifier.verify(&stored.note).is_err()
            });
            if verifies {
                let cp = self.open_checkpoint_note(&merged, &registry)?;
                self.backend
                    .save_checkpoint(&NoteRow::new(stored.size, merged.clone()))?;
                return Ok((cp, merged));
            }
        }
        Err(InputError::Cosignatures(
            "no line is a new, valid cosignature by a witness of the policy on any recent stored checkpoint".into(),
        )
        .into())
    }

    /// The newest stored checkpoint (of the last few) whose cosignatures meet `policy`'s
    /// quorum and whose signature verifies, with its note.
    pub fn witnessed_checkpoint(
        &self,
        policy: &Policy,
    ) -> Result<Option<(Checkpoint, String)>, Error> {
        let registry = self.refresh_registry()?;
        self.witnessed_in(self.reads(), policy, &registry)
    }
}

/// The lines of a witness's `200` answer that carry `witness`'s key (name and key ID); the
/// others are ignored, as C2SP tlog-witness requires of clients. A line that is not a
/// signature line makes the answer malformed.
fn own_lines(body: &str, witness: &CosignatureVerifier) -> Result<String, CheckpointError> {
    let mut out = String::new();
    for line in body.lines() {
        let sig = NoteSignature::parse_line(line)?;
        if sig.name == witness.name() && sig.key_id == witness.key_id() {
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(out)
}

/// The operator's registry record (the genesis principal).
fn operator_record(registry: &Registry) -> Result<&Principal, Error> {
    registry
        .operator()
        .and_then(|o| registry.get(o))
        .ok_or_else(|| Error::integrity(IntegrityCheck::Genesis, "the log has no genesis record"))
}
