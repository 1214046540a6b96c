//! C2SP tlog-witness `add-checkpoint` decisions, in the spec's order, with the status each
//! refusal answers; C2SP tlog-policy parsing and quorums.

use ed25519_dalek::SigningKey;
use memlineage_core::Hash256;
use memlineage_core::checkpoint::{Checkpoint, NoteVerifier, sign_checkpoint};
use memlineage_core::merkle::{MemoryTree, empty_root};
use memlineage_core::witness::{
    AddCheckpoint, Cosigned, Cosigner, KnownLogs, Policy, Refusal, SIZE_CONTENT_TYPE,
};

const LOG: &str = "example.com/log";

fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn tree(n: u32) -> MemoryTree {
    let mut t = MemoryTree::new();
    for i in 0..n {
        t.append(&i.to_be_bytes());
    }
    t
}

fn note(t: &MemoryTree, size: u64, signer: &SigningKey) -> String {
    let cp = Checkpoint::new(LOG, size, t.root_at(size).unwrap());
    sign_checkpoint(&cp, LOG, signer).unwrap()
}

fn request(old: u64, proof: Vec<Hash256>, note: String) -> Vec<u8> {
    AddCheckpoint {
        old_size: old,
        proof,
        checkpoint: note,
    }
    .to_body()
    .into_bytes()
}

fn setup() -> (Cosigner, KnownLogs) {
    let mut logs = KnownLogs::new();
    logs.add(NoteVerifier::from_signing_key(LOG, &key(1)).unwrap());
    (Cosigner::new("witness.example/w1", key(9)).unwrap(), logs)
}

/// Authenticates and decides against `latest`.
fn submit(
    w: &Cosigner,
    logs: &KnownLogs,
    latest: Option<&Cosigned>,
    body: &[u8],
) -> Result<Cosigned, Refusal> {
    let sub = w.authenticate(logs, body)?;
    w.decide(&sub, latest, 1_800_000_000).map(|(c, r)| {
        assert_eq!(r.status, 200);
        assert!(r.body.starts_with("— witness.example/w1 "), "{}", r.body);
        c
    })
}

#[test]
fn witness_cosigns_consistent_checkpoints_and_remembers_them() {
    let (w, logs) = setup();
    let t = tree(10);
    let first = submit(&w, &logs, None, &request(0, vec![], note(&t, 4, &key(1)))).unwrap();
    assert_eq!((first.size, first.root), (4, t.root_at(4).unwrap()));
    w.verifier().verify(&first.note).unwrap();
    let proof = t.consistency_proof(4, 10).unwrap();
    let second = submit(
        &w,
        &logs,
        Some(&first),
        &request(4, proof, note(&t, 10, &key(1))),
    )
    .unwrap();
    assert_eq!(second.size, 10);
    // The same checkpoint again is consistent (equal sizes, equal roots).
    let again = submit(
        &w,
        &logs,
        Some(&second),
        &request(10, vec![], note(&t, 10, &key(1))),
    );
    assert!(again.is_ok());
}

#[test]
fn witness_refusals_carry_the_specified_statuses() {
    let (w, logs) = setup();
    let t = tree(10);
    // Nine leaves that differ from `t`'s from the first one on.
    let mut forked = MemoryTree::new();
    for i in 100u32..109 {
        forked.append(&i.to_be_bytes());
    }
    let latest = Cosigned {
        size: 6,
        root: t.root_at(6).unwrap(),
        note: note(&t, 6, &key(1)),
    };
    let good_proof = t.consistency_proof(6, 10).unwrap();
    let status = |body: &[u8]| submit(&w, &logs, Some(&latest), body).unwrap_err();

    // 400: malformed body.
    assert_eq!(status(b"old 6\n").status(), 400);
    assert_eq!(status(b"old x\n\nnote").status(), 400);
    // 404: unknown origin.
    let alien = sign_checkpoint(
        &Checkpoint::new("other.example/log", 1, Hash256([1; 32])),
        "other.example/log",
        &key(1),
    )
    .unwrap();
    assert_eq!(status(&request(0, vec![], alien)).status(), 404);
    // 403: not signed by the log's key, or a bad signature from it.
    assert_eq!(
        status(&request(6, good_proof.clone(), note(&t, 10, &key(2)))).status(),
        403
    );
    let mut tampered = note(&t, 10, &key(1));
    tampered = tampered.replacen("\n10\n", "\n11\n", 1);
    assert_eq!(
        status(&request(6, good_proof.clone(), tampered)).status(),
        403
    );
    // 400: old size beyond the checkpoint.
    let r = status(&request(8, vec![], note(&t, 7, &key(1))));
    assert!(matches!(
        r,
        Refusal::OldSizeBeyondCheckpoint {
            old_size: 8,
            size: 7
        }
    ));
    // 409: old size is not the size last cosigned; the body is that size.
    let r = status(&request(
        4,
        t.consistency_proof(4, 10).unwrap(),
        note(&t, 10, &key(1)),
    ));
    let resp = r.response();
    assert_eq!(
        (resp.status, resp.content_type, resp.body.as_str()),
        (409, SIZE_CONTENT_TYPE, "6\n")
    );
    // 422: a fork (the proof cannot connect the cosigned tree to another tree).
    let fork_proof = forked.consistency_proof(6, 9).unwrap();
    let r = status(&request(
        6,
        fork_proof,
        sign_checkpoint(
            &Checkpoint::new(LOG, 9, forked.root_at(9).unwrap()),
            LOG,
            &key(1),
        )
        .unwrap(),
    ));
    assert_eq!(r.status(), 422, "{r}");
    // 422: equal size, different root (two trees of one size).
    let r = status(&request(6, vec![], note(&forked, 6, &key(1))));
    assert_eq!(r.status(), 422, "{r}");
    // 422: a bad proof for the right tree.
    let mut bad = good_proof.clone();
    bad[0] = Hash256([0; 32]);
    assert_eq!(
        status(&request(6, bad, note(&t, 10, &key(1)))).status(),
        422
    );
    // 422: size 0 with another root than the empty tree's; a non-empty proof from size 0.
    let fresh = |body: &[u8]| submit(&w, &logs, None, body).unwrap_err();
    let zero = sign_checkpoint(&Checkpoint::new(LOG, 0, Hash256([5; 32])), LOG, &key(1)).unwrap();
    assert_eq!(fresh(&request(0, vec![], zero)).status(), 422);
    let ok_zero = sign_checkpoint(&Checkpoint::new(LOG, 0, empty_root()), LOG, &key(1)).unwrap();
    assert!(submit(&w, &logs, None, &request(0, vec![], ok_zero)).is_ok());
    assert_eq!(
        fresh(&request(0, vec![Hash256([1; 32])], note(&t, 3, &key(1)))).status(),
        422
    );
}

#[test]
fn policy_parses_tlog_policy_and_evaluates_quorums() {
    let vk = |seed: u8, name: &str| Cosigner::new(name, key(seed)).unwrap().verifier().to_vkey();
    let log = NoteVerifier::from_signing_key(LOG, &key(1)).unwrap();
    let text = format!(
        "# two groups\nlog {log} https://log.example\n\nwitness X1 {}\nwitness X2 {}\nwitness X3 {}\ngroup X 2 X1 X2 X3\n\twitness Y1 {} file:///tmp/y1\ngroup Y any Y1\ngroup XY all X Y\nquorum XY\n",
        vk(11, "x1.example"),
        vk(12, "x2.example"),
        vk(13, "x3.example"),
        vk(14, "y1.example")
    );
    let p = Policy::parse(&text).unwrap();
    assert_eq!(p.logs().len(), 1);
    assert_eq!(p.witnesses().len(), 4);
    assert_eq!(p.witnesses()[3].url.as_deref(), Some("file:///tmp/y1"));
    assert_eq!(p.describe_quorum(), "2 of {2 of {X1, X2, X3}, 1 of {Y1}}");
    let met = |set: &[usize]| p.quorum_met(|i| set.contains(&i));
    assert!(met(&[0, 1, 3]));
    assert!(!met(&[0, 1]));
    assert!(!met(&[0, 3]));
    assert_eq!(Policy::parse(&p.to_string()).unwrap(), p);
    assert!(Policy::parse("quorum none\n").unwrap().requires_nothing());

    for (bad, why) in [
        ("", "no quorum line"),
        ("quorum X\n", "not a witness or group"),
        ("quorum none\nquorum none\n", "exactly one quorum"),
        (
            &format!(
                "witness A {}\nwitness A {}\nquorum A\n",
                vk(1, "a"),
                vk(2, "b")
            ),
            "already defined",
        ),
        (
            &format!(
                "witness A {}\nwitness B {}\nquorum A\n",
                vk(1, "a"),
                vk(1, "b")
            ),
            "already listed",
        ),
        (
            &format!("witness A {}\ngroup G 2 A\nquorum G\n", vk(1, "a")),
            "threshold",
        ),
        (
            &format!("witness A {}\ngroup G 01 A\nquorum G\n", vk(1, "a")),
            "threshold",
        ),
        (
            &format!("witness A {}\ngroup G any A A\nquorum G\n", vk(1, "a")),
            "listed twice",
        ),
        (
            &format!("witness none {}\nquorum none\n", vk(1, "a")),
            "predefined",
        ),
        (
            &format!("witness A {log}\nquorum A\n"),
            "signature type 0x01",
        ),
        ("frobnicate\nquorum none\n", "unknown keyword"),
        ("quorum none\x0b\n", "control character"),
    ] {
        let err = Policy::parse(bad).unwrap_err().to_string();
        assert!(err.contains(why), "{bad:?}: {err}");
    }
}
