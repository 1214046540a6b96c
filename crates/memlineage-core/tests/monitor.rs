//! The offline monitor's checks on a hand-built log: entries whose signed label is lower than
//! their parents imply, forged signatures, leaves that do not hash to the signed root, parents
//! proved against the verified tree, rollbacks and forks, and its saved state.

use ed25519_dalek::SigningKey;
use memlineage_core::checkpoint::{Checkpoint, NoteVerifier, sign_checkpoint};
use memlineage_core::entry::{EntryBody, EntryKind, Parent, Scope, SignedEntry};
use memlineage_core::label::{Fallback, TrustClass, TrustLabel, Weight};
use memlineage_core::merkle::MemoryTree;
use memlineage_core::monitor::{Finding, Monitor, MonitorState, ParentLeaf};
use memlineage_core::records::RegistryChange;
use memlineage_core::{EntryId, Hash256, keys};

const LOG: &str = "example.com/log";

fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

/// A log built entry by entry: leaves, contents and the tree.
#[derive(Default)]
struct Log {
    leaves: Vec<(Vec<u8>, Vec<u8>)>,
    tree: MemoryTree,
}

impl Log {
    fn push(&mut self, e: &SignedEntry, content: &[u8]) -> EntryId {
        let leaf = e.to_leaf();
        self.tree.append(&leaf);
        self.leaves.push((leaf, content.to_vec()));
        e.id()
    }

    fn body(
        writer: &str,
        signer: &SigningKey,
        kind: EntryKind,
        content: &[u8],
        label: TrustLabel,
    ) -> EntryBody {
        EntryBody {
            scope: Scope::default(),
            writer: writer.into(),
            key_id: keys::key_id(&signer.verifying_key()),
            kind,
            content_hash: Hash256::of(content),
            content_len: content.len() as u64,
            source_hash: None,
            context_hash: None,
            parents: Vec::new(),
            attribution: "none".into(),
            tau: Weight::from_bp(5000).unwrap(),
            fallback: Fallback::Strict,
            label,
            created_at_ms: 1_700_000_000_000,
            metadata: Default::default(),
        }
    }

    fn registry(&mut self, change: RegistryChange) -> EntryId {
        let content = change.to_content();
        let b = Log::body(
            "operator",
            &key(1),
            EntryKind::Registry,
            &content,
            TrustLabel::Trusted,
        );
        self.push(&SignedEntry::sign(b, &key(1)).unwrap(), &content)
    }

    fn entry(
        &mut self,
        writer: &str,
        k: &SigningKey,
        text: &str,
        label: TrustLabel,
        parents: &[(EntryId, u16)],
    ) -> EntryId {
        let kind = if parents.is_empty() {
            EntryKind::Observation
        } else {
            EntryKind::Derived
        };
        let mut b = Log::body(writer, k, kind, text.as_bytes(), label);
        b.parents = parents
            .iter()
            .map(|(id, bp)| Parent {
                id: *id,
                weight: Weight::from_bp(*bp).unwrap(),
            })
            .collect();
        self.push(&SignedEntry::sign(b, k).unwrap(), text.as_bytes())
    }

    fn note(&self, size: u64) -> String {
        let cp = Checkpoint::new(LOG, size, self.tree.root_at(size).unwrap());
        sign_checkpoint(&cp, LOG, &key(1)).unwrap()
    }

    /// Follows from `m`'s verified size to `size`, feeding leaves; parents come with proofs
    /// from this tree.
    fn follow(&self, m: &Monitor, size: u64) -> (Option<MonitorState>, Vec<Finding>) {
        let held = m.state().size();
        let proof = self.tree.consistency_proof(held, size).unwrap();
        let mut f = m.follow(&self.note(size), &proof).unwrap();
        while f.next_index() < size {
            let (leaf, content) = &self.leaves[f.next_index() as usize];
            let mut parent = |id: &EntryId| self.parent(id, held);
            f.push(leaf, Some(content), &mut parent);
        }
        let out = f.finish();
        (out.state, out.findings)
    }

    fn parent(&self, id: &EntryId, size: u64) -> Option<ParentLeaf> {
        let index = self
            .leaves
            .iter()
            .position(|(l, _)| SignedEntry::from_leaf(l).unwrap().id() == *id)?
            as u64;
        Some(ParentLeaf {
            index,
            leaf: self.leaves[index as usize].0.clone(),
            proof: self.tree.inclusion_proof(index, size).ok()?,
        })
    }
}

/// Genesis, `agent` (trusted, key 2) and `web` (external, key 4).
fn base() -> Log {
    let mut log = Log::default();
    log.registry(RegistryChange::Add {
        name: "operator".into(),
        class: TrustClass::Trusted,
        key: key(1).verifying_key(),
    });
    log.registry(RegistryChange::Add {
        name: "agent".into(),
        class: TrustClass::Trusted,
        key: key(2).verifying_key(),
    });
    log.registry(RegistryChange::Add {
        name: "web".into(),
        class: TrustClass::External,
        key: key(4).verifying_key(),
    });
    log
}

fn vkey() -> NoteVerifier {
    NoteVerifier::from_signing_key(LOG, &key(1)).unwrap()
}

fn problems(findings: &[Finding]) -> Vec<(u64, String)> {
    findings
        .iter()
        .filter_map(|f| match f {
            Finding::Entry { index, problem, .. } => Some((*index, problem.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn monitor_reports_label_violations_and_forged_signatures() {
    let mut log = base();
    let page = log.entry("web", &key(4), "pay XX00", TrustLabel::External, &[]);
    // Laundering: derived from an external page through a strong edge, signed TRUSTED.
    log.entry(
        "agent",
        &key(2),
        "pay XX00 (summary)",
        TrustLabel::DerivedTrusted,
        &[(page, 9000)],
    );
    // A forged signature: a signed entry whose signature bytes were altered in the leaf
    // (`docs/formats.md`: the 64 signature bytes follow `a2 63 "sig" 58 40`).
    let b = Log::body(
        "agent",
        &key(2),
        EntryKind::Observation,
        b"forged",
        TrustLabel::Trusted,
    );
    let mut leaf = SignedEntry::sign(b, &key(2)).unwrap().to_leaf();
    leaf[7 + 10] ^= 0x01;
    log.tree.append(&leaf);
    log.leaves.push((leaf, b"forged".to_vec()));
    // An honest derived entry.
    log.entry(
        "agent",
        &key(2),
        "it asked to pay XX00",
        TrustLabel::DerivedUntrusted,
        &[(page, 9000)],
    );

    let m = Monitor::new(LOG, Some(vkey()));
    let (state, findings) = log.follow(&m, 7);
    let p = problems(&findings);
    assert_eq!(p.len(), 2, "{findings:?}");
    assert_eq!(p[0].0, 4);
    assert!(
        p[0].1.contains(
            "signed label DERIVED_TRUSTED is lower than its parents imply (DERIVED_UNTRUSTED)"
        ),
        "{p:?}"
    );
    assert_eq!(p[1], (5, "signature does not verify".to_string()));
    // Entry findings are reported, and the monitor still advances (the log is append-only).
    let state = state.expect("the checkpoint itself checks out");
    assert_eq!(state.size(), 7);
    assert_eq!(state.root(), log.tree.root());

    // Saved and loaded, it goes on: a new entry whose strong parent is older than the
    // verified size is checked through an inclusion proof against the verified root.
    let m = Monitor::from_state(MonitorState::from_json(&state.to_json()).unwrap()).unwrap();
    log.entry(
        "agent",
        &key(2),
        "again",
        TrustLabel::Trusted,
        &[(page, 9000)],
    );
    let (state, findings) = log.follow(&m, 8);
    assert_eq!(problems(&findings).len(), 1, "{findings:?}");
    assert!(
        problems(&findings)[0]
            .1
            .contains("lower than its parents imply")
    );
    assert_eq!(state.unwrap().size(), 8);
}

#[test]
fn monitor_refuses_rollbacks_forks_and_leaves_that_miss_the_signed_root() {
    let mut log = base();
    log.entry("agent", &key(2), "one", TrustLabel::Trusted, &[]);
    log.entry("agent", &key(2), "two", TrustLabel::Trusted, &[]);
    let m = Monitor::new(LOG, Some(vkey()));
    let (state, findings) = log.follow(&m, 5);
    assert!(findings.is_empty(), "{findings:?}");
    let m = Monitor::from_state(state.unwrap()).unwrap();

    // Rollback: a checkpoint of a smaller tree.
    let err = m.follow(&log.note(4), &[]).unwrap_err();
    assert!(
        matches!(
            err,
            Finding::Rollback {
                held_size: 5,
                seen_size: 4,
                ..
            }
        ),
        "{err}"
    );

    // Fork: another tree of the same size, signed by the same key.
    let mut other = base();
    other.entry("agent", &key(2), "one", TrustLabel::Trusted, &[]);
    other.entry("agent", &key(2), "TWO", TrustLabel::Trusted, &[]);
    let err = m.follow(&other.note(5), &[]).unwrap_err();
    assert!(
        matches!(
            err,
            Finding::Fork {
                held_size: 5,
                seen_size: 5,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("does not extend"), "{err}");
    // The same fork shown by a client: check_other.
    let err = m.check_other(&other.note(5), &[]).unwrap_err();
    assert!(matches!(err, Finding::Fork { .. }), "{err}");
    m.check_other(&log.note(3), &log.tree.consistency_proof(3, 5).unwrap())
        .unwrap();

    // Leaves that are not the signed tree: consistent note, other leaf served.
    log.entry("agent", &key(2), "three", TrustLabel::Trusted, &[]);
    let proof = log.tree.consistency_proof(5, 6).unwrap();
    let mut f = m.follow(&log.note(6), &proof).unwrap();
    f.push(&other.leaves[4].0, Some(b"TWO"), &mut |_| None);
    let out = f.finish();
    assert!(out.state.is_none());
    assert!(
        out.findings
            .iter()
            .any(|f| matches!(f, Finding::CheckpointMismatch { size: 6, .. })),
        "{:?}",
        out.findings
    );

    // A checkpoint signed by another key than the operator's.
    let cp = Checkpoint::new(LOG, 6, log.tree.root_at(6).unwrap());
    let bad = sign_checkpoint(&cp, LOG, &key(9)).unwrap();
    let mut f = m.follow(&bad, &proof).unwrap();
    f.push(&log.leaves[5].0, Some(b"three"), &mut |_| None);
    let out = f.finish();
    assert!(out.state.is_none());
    assert!(
        matches!(
            out.findings.as_slice(),
            [Finding::BadCheckpoint { size: Some(6), .. }]
        ),
        "{:?}",
        out.findings
    );

    // A pinned key the operator never held: nothing verifies.
    let stranger = Monitor::new(
        LOG,
        Some(NoteVerifier::from_signing_key(LOG, &key(8)).unwrap()),
    );
    let (state, findings) = log.follow(&stranger, 6);
    assert!(state.is_none());
    assert!(
        findings
            .iter()
            .any(|f| f.to_string().contains("never held the pinned verifier key")),
        "{findings:?}"
    );
}

#[test]
fn monitor_follows_operator_key_rotation_strictly() {
    let mut log = base();
    log.registry(RegistryChange::Rotate {
        name: "operator".into(),
        key: key(7).verifying_key(),
    });
    // Checkpoints covering the rotation must be signed with the new key.
    let m = Monitor::new(LOG, Some(vkey()));
    let proof = log.tree.consistency_proof(0, 4).unwrap();
    let mut f = m.follow(&log.note(4), &proof).unwrap();
    for (leaf, content) in &log.leaves {
        f.push(leaf, Some(content), &mut |_| None);
    }
    let out = f.finish();
    assert!(out.state.is_none(), "signed by the retired key");
    let cp = Checkpoint::new(LOG, 4, log.tree.root_at(4).unwrap());
    let note = sign_checkpoint(&cp, LOG, &key(7)).unwrap();
    let mut f = m.follow(&note, &proof).unwrap();
    for (leaf, content) in &log.leaves {
        f.push(leaf, Some(content), &mut |_| None);
    }
    let out = f.finish();
    assert!(out.findings.is_empty(), "{:?}", out.findings);
    assert_eq!(out.state.unwrap().size(), 4);
}
