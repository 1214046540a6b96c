//! The transparency commands end to end on the real binary: `checkpoint --vkey`, a witness in
//! its own directory (`witness init/add-log/vkey/add-checkpoint/checkpoint`), `checkpoint
//! --witness` with a k-of-n policy, request and answer files, the reader flags
//! (`--client-state`, `--trusted-checkpoint`), the rollback window in `verify` and in the
//! control commands, and `monitor` — and a restored older copy of the store caught by the
//! client, the witness and the monitor.

mod common;

use common::Store;
use std::path::{Path, PathBuf};

/// Directories apart from the store: witnesses, the client's state, the monitor's state.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Outside {
        Outside {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn s(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

/// Creates witness `name` trusting the store's log key; returns its vkey.
fn witness(store: &Store, out: &Outside, name: &str) -> String {
    let vkey = store.json(&["checkpoint", "--vkey"])["vkey"]
        .as_str()
        .unwrap()
        .to_string();
    let w = store.json(&[
        "witness",
        "init",
        "--dir",
        &out.s(name),
        "--name",
        &format!("{name}.example"),
    ]);
    store.json(&["witness", "add-log", "--dir", &out.s(name), &vkey]);
    w["vkey"].as_str().unwrap().to_string()
}

fn write_policy(store: &Store, text: &str) {
    std::fs::write(store.dir.path().join("witnesses.policy"), text).unwrap();
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
}

/// Puts a saved copy back over the store (every command has closed it: no WAL is pending).
fn restore(store: &Store, saved: &Path) {
    for ext in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", store.db().display()));
    }
    copy(saved, &store.db());
}

#[test]
fn vkey_witnessing_rollback_window_and_a_restored_copy_caught_everywhere() {
    let store = Store::init();
    let out = Outside::new();
    store.write(&["the user's IBAN is DE89 3704 0044 0532 0130 00"]);

    // The verifier key is what a third party needs to check checkpoints, and no secret.
    let v = store.json(&["checkpoint", "--vkey"]);
    let vkey = v["vkey"].as_str().unwrap().to_string();
    let origin = v["origin"].as_str().unwrap().to_string();
    assert!(vkey.starts_with(&format!("{origin}+{}+", v["key_id"].as_str().unwrap())));
    assert_eq!(
        store.run(&["checkpoint", "--vkey"]).ok().stdout.trim(),
        vkey
    );

    let w1 = witness(&store, &out, "w1");
    let w2 = witness(&store, &out, "w2");
    assert!(w1.starts_with("w1.example+"));
    assert_eq!(
        store
            .run(&["witness", "vkey", "--dir", &out.s("w1")])
            .ok()
            .stdout
            .trim(),
        w1
    );
    write_policy(
        &store,
        &format!(
            "witness w1 {w1} file://{}\nwitness w2 {w2} file://{}\ngroup both 2 w1 w2\nquorum both\n",
            out.s("w1"),
            out.s("w2")
        ),
    );

    // A copy of the store as it is now, before the revocations.
    let saved = out.path("old.db");
    copy(&store.db(), &saved);
    let revoked_from = store.size();

    // A revocation is at risk of rollback until a checkpoint covering it is witnessed.
    let r = store.json(&["principal", "revoke", "web", "--reason", "laptop stolen"]);
    assert_eq!(r["rollback_risk"]["at_risk"], true);
    let text = store
        .run(&["principal", "revoke", "agent", "--reason", "x"])
        .ok()
        .stdout;
    assert!(
        text.contains("At risk of rollback until a checkpoint covering index"),
        "{text}"
    );
    let (_, report) = store.verify();
    assert_eq!(
        report["history"]["rollback_window"]["at_risk"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(
        store
            .run(&["verify"])
            .ok()
            .stdout
            .contains("AT RISK: 2 control record(s)")
    );

    let round = store.json(&["checkpoint", "--witness"]);
    assert_eq!(round["quorum_met"], true, "{round:#}");
    assert_eq!(round["quorum"], "2 of {w1, w2}");
    let witnessed_size = round["size"].as_u64().unwrap();
    for w in round["witnesses"].as_array().unwrap() {
        assert_eq!(w["status"], 200, "{w}");
        assert!(w["timestamp"].as_u64().unwrap() > 1_700_000_000);
    }
    assert_eq!(
        round["rollback_window"]["at_risk"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert!(
        store
            .run(&["verify"])
            .ok()
            .stdout
            .contains("rollback    no revocation")
    );
    // The witness serves what it cosigned, for monitors.
    let served = store.json(&["witness", "checkpoint", "--dir", &out.s("w1"), &origin]);
    assert_eq!(served["size"].as_u64().unwrap(), witnessed_size);
    let held_note = out.path("held.checkpoint");
    std::fs::write(&held_note, served["note"].as_str().unwrap()).unwrap();

    // A client and a monitor follow the log.
    let client = ["--client-state", &out.s("client")];
    let mut search = vec!["search", "IBAN", "--json"];
    search.extend_from_slice(&client);
    store.run(&search).ok();
    let mon = store.json(&["monitor", "--state", &out.s("monitor"), "--vkey", &vkey]);
    assert_eq!(mon["ok"], true, "{mon:#}");
    assert_eq!(mon["to_size"].as_u64().unwrap(), witnessed_size);
    let verified = store.json(&[
        "verify",
        "--trusted-checkpoint",
        held_note.to_str().unwrap(),
    ]);
    assert_eq!(verified["history"]["trusted"]["ok"], true);

    // Someone puts back the copy taken before the revocations.
    restore(&store, &saved);
    assert_eq!(store.size(), revoked_from);

    let refused = store.run(&search);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stdout.contains("refusing the store: rollback"),
        "{refused:#?}"
    );
    let r = store.run(&[
        "verify",
        "--trusted-checkpoint",
        held_note.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stdout.contains("CONTRADICTED"), "{}", r.stdout);
    let m = store.run(&["monitor", "--state", &out.s("monitor"), "--json"]);
    assert_eq!(m.code, 1, "{m:#?}");
    assert_eq!(m.json()["findings"][0]["kind"], "rollback");
    let w = store.run(&["checkpoint", "--witness", "--json"]);
    assert_eq!(w.code, 1, "{w:#?}");
    assert_eq!(w.json()["quorum_met"], false);
    assert_eq!(w.json()["witnesses"][0]["status"], 409);
    assert!(w.stdout.contains("the log went back"), "{}", w.stdout);
}

#[test]
fn witness_requests_and_answers_as_files() {
    let store = Store::init();
    let out = Outside::new();
    store.write(&["one"]);
    let w1 = witness(&store, &out, "w1");
    let policy = out.path("log.policy");
    std::fs::write(&policy, format!("witness w1 {w1}\nquorum w1\n")).unwrap();
    let policy = policy.to_str().unwrap();
    // Without a file:// URL the witness is not asked; the quorum is not met.
    let r = store.run(&["checkpoint", "--witness", "--policy", policy]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stdout.contains("not asked"), "{}", r.stdout);
    // The request body, the witness's answer, and the answer attached.
    let body = store.run(&["checkpoint", "--request", "0"]).ok().stdout;
    assert!(body.starts_with("old 0\n\n"), "{body}");
    let answer = store
        .run_stdin(
            &["witness", "add-checkpoint", "--dir", &out.s("w1")],
            body.as_bytes(),
        )
        .ok()
        .stdout;
    assert!(answer.starts_with("— w1.example "), "{answer}");
    let attached = store
        .run_stdin(
            &["checkpoint", "--attach", "-", "--policy", policy, "--json"],
            answer.as_bytes(),
        )
        .ok()
        .json();
    assert_eq!(attached["quorum_met"], true, "{attached:#}");
    // The same old size again: the witness has moved on (409, its size in the body).
    store.write(&["two"]);
    store.json(&["checkpoint"]);
    let stale = store.run(&["checkpoint", "--request", "0"]).ok().stdout;
    let r = store.run_stdin(
        &["witness", "add-checkpoint", "--dir", &out.s("w1"), "--json"],
        stale.as_bytes(),
    );
    assert_eq!(r.code, 1, "{r:#?}");
    let j = r.json();
    assert_eq!(j["status"], 409);
    assert_eq!(j["content_type"], "text/x.tlog.size");
    assert_eq!(j["body"], format!("{}\n", attached["size"]));
    // Garbage is a 400; an unknown log is a 404.
    let r = store.run_stdin(
        &["witness", "add-checkpoint", "--dir", &out.s("w1"), "--json"],
        b"old 1\n",
    );
    assert_eq!(r.json()["status"], 400);
    let other = Store::init();
    other.json(&["checkpoint"]);
    let foreign = other.run(&["checkpoint", "--request", "0"]).ok().stdout;
    let r = store.run_stdin(
        &["witness", "add-checkpoint", "--dir", &out.s("w1"), "--json"],
        foreign.as_bytes(),
    );
    assert_eq!(r.json()["status"], 404);
    // Bad flags are usage errors.
    store
        .run(&["witness", "add-log", "--dir", &out.s("w1"), "not-a-vkey"])
        .code(2);
    store
        .run(&["checkpoint", "--witness", "--policy", "/nonexistent"])
        .code(2);
    store
        .run(&["search", "x", "--require-witnesses", "/nonexistent"])
        .code(2);
}
