//! Inclusion of a retrieval's entries in the signed checkpoint, with the nodes of every proof
//! and of the checkpoint's root read in one store call.
//!
//! A retrieval of eight entries needs eight inclusion proofs against the same tree size; their
//! upper nodes overlap, and each needs the root nodes of that size for the root check. One
//! read per proof (or per node) was a quarter of a retrieval. [`Anchor::new`] asks the store
//! for the union at once (the SQLite store answers in one statement), checks the stored root
//! against the signed one, and then checks each entry's proof from those hashes.
//!
//! Nothing is checked less: every proof is still assembled from stored nodes and verified
//! against the signed root, and the stored root is still compared with it. When the batch read
//! fails (a node is missing or malformed), the anchor falls back to one read per proof, so the
//! failure lands where it did without the batch: an error for the root, a dropped entry for a
//! path node.

use super::read::{check_checkpoint_root, inclusion_of_hash, nodes_exact, root_at_in};
use crate::error::Error;
use crate::store::BackendRead;
use memlineage_core::Hash256;
use memlineage_core::checkpoint::Checkpoint;
use memlineage_core::merkle::{self, ProofPlan};

/// The signed checkpoint a retrieval's proofs are checked against, with the nodes they need.
pub(crate) struct Anchor<'m> {
    reader: &'m dyn BackendRead,
    checkpoint: &'m Checkpoint,
    /// Per entry: its index, its proof plan, and where its nodes start in `hashes`.
    plans: Vec<(u64, ProofPlan, usize)>,
    /// The prefetched hashes of every plan's nodes, in plan order; `None` after a failed batch
    /// read (one read per proof then).
    hashes: Option<Vec<Hash256>>,
}

impl<'m> Anchor<'m> {
    /// Reads the root nodes of `checkpoint` and the proof nodes of the entries at `indices`
    /// (those the checkpoint covers) in one store call, and checks the stored root against
    /// the signed one (an error when they differ, as [`Memory::latest_checkpoint`](crate::Memory::latest_checkpoint) reports).
    pub(crate) fn new(
        reader: &'m dyn BackendRead,
        checkpoint: &'m Checkpoint,
        indices: impl IntoIterator<Item = u64>,
    ) -> Result<Anchor<'m>, Error> {
        let size = checkpoint.size;
        let mut ids = merkle::root_nodes(size);
        let roots = ids.len();
        let mut plans = Vec::new();
        for index in indices.into_iter().filter(|i| *i < size) {
            // A plan that cannot be made is reported by `includes`, for that entry.
            if let Ok(plan) = merkle::inclusion_plan(index, size) {
                let start = ids.len() - roots;
                ids.extend_from_slice(plan.nodes());
                plans.push((index, plan, start));
            }
        }
        let hashes = match nodes_exact(reader, &ids) {
            Ok(mut hashes) => {
                check_checkpoint_root(checkpoint, merkle::root_from_nodes(&hashes[..roots]))?;
                hashes.drain(..roots);
                Some(hashes)
            }
            Err(_) => {
                check_checkpoint_root(checkpoint, root_at_in(reader, size)?)?;
                None
            }
        };
        Ok(Anchor {
            reader,
            checkpoint,
            plans,
            hashes,
        })
    }

    /// Checks that the leaf with hash `leaf_hash` at `index` is in the checkpoint's tree:
    /// `Ok(true)` when its proof verifies against the signed root, `Ok(false)` when a proof
    /// from the stored nodes verifies but reaches another root, `Err` when no proof verifies.
    pub(crate) fn includes(&self, index: u64, leaf_hash: Hash256) -> Result<bool, Error> {
        let cp = self.checkpoint;
        let prefetched = self.hashes.as_ref().and_then(|hashes| {
            let (_, plan, start) = self.plans.iter().find(|(i, _, _)| *i == index)?;
            Some((plan, hashes.get(*start..*start + plan.nodes().len())?))
        });
        let Some((plan, fetched)) = prefetched else {
            let proof = inclusion_of_hash(self.reader, index, leaf_hash, cp.size)?;
            return Ok(proof.root.0 == cp.root);
        };
        let path = plan.assemble(fetched)?;
        // The signed root equals the stored root (checked in `new`), so this is the check
        // `Memory::prove_inclusion` makes against the stored root.
        merkle::verify_inclusion(&leaf_hash, index, cp.size, &path, &cp.root)?;
        Ok(true)
    }
}
