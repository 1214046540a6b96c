//! Reading entries, proofs and checkpoints.

use super::Memory;
use super::control::operator_of;
use crate::error::{Error, InputError, IntegrityCheck, IntegrityError};
use crate::store::{BackendRead, NoteRow, StoredEntry};
use memlineage_core::checkpoint::{self, Checkpoint, NoteVerifier};
use memlineage_core::entry::SignedEntry;
use memlineage_core::label::TrustLabel;
use memlineage_core::merkle;
use memlineage_core::principal::Registry;
use memlineage_core::{EntryId, Hash256};

/// An entry as returned to callers: decoded, with its content and derived state.
#[derive(Clone, Debug)]
pub struct EntryView {
    /// Leaf index.
    pub index: u64,
    /// The signed entry.
    pub entry: SignedEntry,
    /// Content bytes, `None` once erased.
    pub content: Option<Vec<u8>>,
    /// The label as signed.
    pub label: TrustLabel,
    /// The label after retroactive distrust (≥ `label`).
    pub effective_label: TrustLabel,
    /// The tombstone that forgot this entry, if any.
    pub forgotten_by: Option<EntryId>,
}

/// Decodes a stored leaf strictly; a leaf that does not decode is an integrity error naming
/// the entry (its message is the decoder's, which names the fault).
pub(crate) fn decode_stored(stored: &StoredEntry) -> Result<SignedEntry, Error> {
    SignedEntry::from_leaf(&stored.leaf).map_err(|e| {
        IntegrityError::new(IntegrityCheck::LeafDecode, e.to_string())
            .at(stored.index)
            .entry(stored.id)
            .into()
    })
}

impl EntryView {
    pub(crate) fn from_stored(stored: StoredEntry) -> Result<EntryView, Error> {
        let entry = decode_stored(&stored)?;
        if entry.id() != stored.id {
            return Err(IntegrityError::new(
                IntegrityCheck::EntryId,
                format!(
                    "entry at index {} is indexed as {} but its body hashes to {}",
                    stored.index,
                    stored.id,
                    entry.id()
                ),
            )
            .at(stored.index)
            .entry(stored.id)
            .into());
        }
        let label = entry.body().label;
        Ok(EntryView {
            index: stored.index,
            label,
            effective_label: stored.effective_label.map_or(label, |l| l.max(label)),
            forgotten_by: stored.forgotten_by,
            content: stored.content,
            entry,
        })
    }

    /// The content as UTF-8 text (lossy), or `None` once erased.
    pub fn text(&self) -> Option<String> {
        self.content
            .as_ref()
            .map(|c| String::from_utf8_lossy(c).into_owned())
    }
}

/// An RFC 9162 inclusion proof of one entry in a tree of `size` leaves.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct InclusionProof {
    /// Leaf index.
    pub index: u64,
    /// Tree size the proof is for.
    pub size: u64,
    /// The leaf hash.
    pub leaf_hash: Hash256Hex,
    /// The root of the tree of `size` leaves.
    pub root: Hash256Hex,
    /// The audit path, bottom up.
    pub path: Vec<Hash256Hex>,
}

/// A hash that serialises as lowercase hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hash256Hex(pub Hash256);

impl serde::Serialize for Hash256Hex {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_hex())
    }
}

impl Memory {
    /// An entry by id.
    pub fn get(&self, id: &EntryId) -> Result<EntryView, Error> {
        self.check_history()?;
        let stored = self.reads().entry_by_id(id)?.ok_or(Error::NotFound(*id))?;
        EntryView::from_stored(stored)
    }

    /// Entries with index in `[start, start + limit)`.
    pub fn log(&self, start: u64, limit: u64) -> Result<Vec<EntryView>, Error> {
        self.check_history()?;
        self.reads()
            .entries(start, limit)?
            .into_iter()
            .map(EntryView::from_stored)
            .collect()
    }

    /// Number of entries in the log.
    pub fn size(&self) -> Result<u64, Error> {
        self.reads().size()
    }

    /// The root of the tree of the first `size` leaves, from O(log n) stored nodes.
    pub fn root_at(&self, size: u64) -> Result<Hash256, Error> {
        root_at_in(self.reads(), size)
    }

    /// An inclusion proof for `id` in the tree of `size` leaves (default: the current size),
    /// built from O(log n) stored node reads.
    pub fn prove_inclusion(
        &self,
        id: &EntryId,
        size: Option<u64>,
    ) -> Result<InclusionProof, Error> {
        self.check_history()?;
        let r = self.backend.snapshot()?;
        let stored = r.entry_by_id(id)?.ok_or(Error::NotFound(*id))?;
        let size = match size {
            Some(s) => s,
            None => r.size()?,
        };
        inclusion_of_hash(&*r, stored.index, merkle::leaf_hash(&stored.leaf), size)
    }

    /// A consistency proof between tree sizes `old` and `new`, with both roots. The proof is
    /// verified before it is returned. The proof's nodes and both roots' nodes are one store
    /// read.
    pub fn prove_consistency(
        &self,
        old: u64,
        new: u64,
    ) -> Result<(Hash256, Hash256, Vec<Hash256>), Error> {
        let r = self.backend.snapshot()?;
        let size = r.size()?;
        if new > size {
            return Err(InputError::TreeSize { asked: new, size }.into());
        }
        let plan = merkle::consistency_plan(old, new)?;
        let (old_nodes, new_nodes) = (merkle::root_nodes(old), merkle::root_nodes(new));
        let fetched = nodes_exact(&*r, &[plan.nodes(), &old_nodes, &new_nodes].concat())?;
        let (proof_nodes, rest) = fetched.split_at(plan.nodes().len());
        let (old_fetched, new_fetched) = rest.split_at(old_nodes.len());
        let proof = plan.assemble(proof_nodes)?;
        let old_root = merkle::root_from_nodes(old_fetched);
        let new_root = merkle::root_from_nodes(new_fetched);
        merkle::verify_consistency(old, new, &old_root, &new_root, &proof)
            .map_err(|e| Error::integrity(IntegrityCheck::MerkleNode, e.to_string()))?;
        Ok((old_root, new_root, proof))
    }

    /// Signs and stores a checkpoint of the current tree with the operator's key (which must
    /// be loaded). Returns the signed note text.
    pub fn checkpoint(&self) -> Result<String, Error> {
        let registry = self.refresh_registry()?;
        let op = operator_of(&registry)?;
        let current = registry
            .get(op.as_str())
            .and_then(|p| p.current_key())
            .map(|k| k.key_id);
        drop(registry);
        let key = self.signing_key(&op, current)?;
        let (size, root) = {
            let r = self.backend.snapshot()?;
            let size = r.size()?;
            (size, root_at_in(&*r, size)?)
        };
        let cp = Checkpoint::new(&self.settings.origin, size, root);
        let note = key.sign_checkpoint(&cp, &self.settings.origin)?;
        self.backend
            .save_checkpoint(&NoteRow::new(size, note.clone()))?;
        Ok(note)
    }

    /// The latest signed checkpoint, verified against the operator's keys (any key the
    /// operator has held) and against the stored tree. `None` when none was ever made.
    pub fn latest_checkpoint(&self) -> Result<Option<Checkpoint>, Error> {
        Ok(self.latest_checkpoint_verified()?.map(|(cp, _)| cp))
    }

    /// [`Memory::latest_checkpoint`] with the signed note itself, verified the same way (for
    /// callers that hand the note on: the HTTP service). [`Memory::latest_checkpoint_note`]
    /// is the stored note with its cosignatures, unverified.
    pub fn latest_checkpoint_verified(&self) -> Result<Option<(Checkpoint, String)>, Error> {
        let registry = self.refresh_registry()?;
        let r = self.backend.snapshot()?;
        let Some(note) = r.latest_checkpoint()? else {
            return Ok(None);
        };
        let cp = self.open_checkpoint_note(&note, &registry)?;
        check_checkpoint_size(&cp, r.size()?)?;
        check_checkpoint_root(&cp, root_at_in(&*r, cp.size)?)?;
        Ok(Some((cp, note)))
    }

    /// A checkpoint note, opened with the operator's keys in `registry` (newest first) and
    /// checked to be this log's origin; the store-dependent checks ([`check_checkpoint_size`],
    /// [`check_checkpoint_root`]) are the caller's. A note that verified before under the same
    /// key is not verified again (`verified_note.rs`).
    pub(crate) fn open_checkpoint_note(
        &self,
        note: &str,
        registry: &Registry,
    ) -> Result<Checkpoint, Error> {
        let op = registry
            .operator()
            .and_then(|o| registry.get(o))
            .ok_or_else(|| {
                Error::integrity(IntegrityCheck::Genesis, "the log has no genesis record")
            })?;
        let origin = &self.settings.origin;
        let mut last_err = None;
        for k in op.keys.iter().rev() {
            let verifier = NoteVerifier::new(origin, k.key)?;
            let opened = match self.verified_note.get(origin, &k.key, note) {
                Some(cp) => Ok(cp),
                None => checkpoint::open_checkpoint(note, &verifier)
                    .inspect(|cp| self.verified_note.put(origin, &k.key, note, cp)),
            };
            match opened {
                Ok(cp) => {
                    if cp.origin != *origin {
                        return Err(Error::integrity(
                            IntegrityCheck::Checkpoint,
                            format!(
                                "checkpoint origin `{}` is not this log's `{origin}`",
                                cp.origin
                            ),
                        ));
                    }
                    return Ok(cp);
                }
                Err(e) => last_err = Some(e),
            }
        }
        Err(Error::integrity(
            IntegrityCheck::Checkpoint,
            format!(
                "the latest checkpoint is not signed by the operator: {}",
                last_err.map_or_else(|| "no operator key".to_string(), |e| e.to_string())
            ),
        ))
    }
}

/// A signed checkpoint may not cover more entries than the log has.
pub(crate) fn check_checkpoint_size(cp: &Checkpoint, size: u64) -> Result<(), Error> {
    if cp.size > size {
        return Err(Error::integrity(
            IntegrityCheck::Checkpoint,
            format!(
                "the signed checkpoint covers {} entries but the log has only {size}: entries were removed",
                cp.size
            ),
        ));
    }
    Ok(())
}

/// The stored tree of the checkpoint's size must have the signed root.
pub(crate) fn check_checkpoint_root(cp: &Checkpoint, stored_root: Hash256) -> Result<(), Error> {
    if stored_root != cp.root {
        return Err(Error::integrity(
            IntegrityCheck::Checkpoint,
            format!(
                "the stored tree of size {} has root {stored_root}, but the signed checkpoint says {}",
                cp.size, cp.root
            ),
        ));
    }
    Ok(())
}

/// The root of the tree of the first `size` leaves, from O(log n) stored nodes read by `r`.
pub(crate) fn root_at_in(r: &dyn BackendRead, size: u64) -> Result<Hash256, Error> {
    let nodes = merkle::root_nodes(size);
    Ok(merkle::root_from_nodes(&nodes_exact(r, &nodes)?))
}

/// An inclusion proof of the leaf with hash `leaf_hash` at `index` in the tree of `size`
/// leaves: the path nodes and the root nodes in one read, the root folded from them, the path
/// verified against it.
pub(crate) fn inclusion_of_hash(
    r: &dyn BackendRead,
    index: u64,
    leaf_hash: Hash256,
    size: u64,
) -> Result<InclusionProof, Error> {
    let plan = merkle::inclusion_plan(index, size)?;
    let roots = merkle::root_nodes(size);
    let fetched = nodes_exact(r, &[plan.nodes(), &roots].concat())?;
    let (path_nodes, root_nodes) = fetched.split_at(plan.nodes().len());
    let path = plan.assemble(path_nodes)?;
    let root = merkle::root_from_nodes(root_nodes);
    merkle::verify_inclusion(&leaf_hash, index, size, &path, &root)
        .map_err(|e| IntegrityError::new(IntegrityCheck::MerkleNode, e.to_string()).at(index))?;
    Ok(InclusionProof {
        index,
        size,
        leaf_hash: Hash256Hex(leaf_hash),
        root: Hash256Hex(root),
        path: path.into_iter().map(Hash256Hex).collect(),
    })
}

/// The stored hashes of `ids`, in order; a store that answers with another number of hashes
/// is an integrity error, never a slice out of bounds.
pub(crate) fn nodes_exact(
    r: &dyn BackendRead,
    ids: &[memlineage_core::merkle::NodeId],
) -> Result<Vec<Hash256>, Error> {
    let hashes = r.nodes(ids)?;
    if hashes.len() != ids.len() {
        return Err(Error::integrity(
            IntegrityCheck::MerkleNode,
            format!(
                "the store returned {} Merkle nodes for {} requested",
                hashes.len(),
                ids.len()
            ),
        ));
    }
    Ok(hashes)
}

/// The consistency proof from size `old` to size `new` assembled from the nodes `r` reads,
/// unverified: the caller verifies it against roots it trusts (a reader's held checkpoint, a
/// monitor's verified tree), never against the store's own.
pub(crate) fn unverified_consistency_proof(
    r: &dyn BackendRead,
    old: u64,
    new: u64,
) -> Result<Vec<Hash256>, Error> {
    let plan = merkle::consistency_plan(old, new)?;
    Ok(plan.assemble(&nodes_exact(r, plan.nodes())?)?)
}

/// The inclusion proof of leaf `index` in the tree of `size` leaves assembled from the nodes
/// `r` reads, unverified (as [`unverified_consistency_proof`]).
pub(crate) fn unverified_inclusion_proof(
    r: &dyn BackendRead,
    index: u64,
    size: u64,
) -> Result<Vec<Hash256>, Error> {
    let plan = merkle::inclusion_plan(index, size)?;
    Ok(plan.assemble(&nodes_exact(r, plan.nodes())?)?)
}
