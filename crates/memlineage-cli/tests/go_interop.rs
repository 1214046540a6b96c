//! Interop with an implementation the project did not write: Go's golang.org/x/mod
//! (`sumdb/note`, `sumdb/tlog`) verifies the log's checkpoint with its verifier key, the
//! witnesses' cosignatures (through `note.Open` with a cosignature/v1 verifier written on Go's
//! crypto/ed25519, since x/mod's `note.NewVerifier` knows only key type 0x01), the tree hash
//! of the leaves, and RFC 6962 consistency and inclusion proofs (`go/interop.go`).
//!
//! Needs Debian's `golang-go` and `golang-golang-x-mod-dev` (`.ci/run` installs them); the Go
//! program is built offline with `GO111MODULE=off GOPATH=/usr/share/gocode`. Without them the
//! test says so and passes, except under `CI=1`, where it fails.

mod common;

use common::Store;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const GOPATH: &str = "/usr/share/gocode";

/// The Go toolchain and x/mod, or why they are missing.
fn go() -> Result<PathBuf, String> {
    let ok = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return Err("`go` is not installed (Debian: golang-go)".into());
    }
    let xmod = Path::new(GOPATH).join("src/golang.org/x/mod/sumdb/note");
    if !xmod.is_dir() {
        return Err(format!(
            "{} is missing (Debian: golang-golang-x-mod-dev)",
            xmod.display()
        ));
    }
    Ok(PathBuf::from("go"))
}

/// Skips (passes) without Go, except under CI=1.
fn require_go() -> Option<PathBuf> {
    match go() {
        Ok(go) => Some(go),
        Err(why) => {
            assert!(
                std::env::var("CI").map_or(true, |v| v != "1" && v != "true"),
                "the Go interop test needs Go and x/mod under CI: {why}"
            );
            eprintln!("skipping the Go interop test: {why}");
            None
        }
    }
}

/// Builds `go/interop.go` into `dir`.
fn build(go: &Path, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go/interop.go");
    let exe = dir.join("interop");
    let out = Command::new(go)
        .arg("build")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .env("GO111MODULE", "off")
        .env("GOPATH", GOPATH)
        .env("GOCACHE", dir.join("gocache"))
        .env("GOFLAGS", "")
        .env("CGO_ENABLED", "0")
        .output()
        .expect("run go build");
    assert!(
        out.status.success(),
        "go build failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn run_go(exe: &Path, input: &Value, dir: &Path) -> (bool, String) {
    let path = dir.join("input.json");
    std::fs::write(&path, serde_json::to_vec(input).unwrap()).unwrap();
    let out = Command::new(exe).arg(&path).output().expect("run interop");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Every leaf of the log, hex, read from the store's entries table.
fn leaves(store: &Store) -> Vec<String> {
    let conn = store.sqlite();
    let mut stmt = conn
        .prepare("SELECT leaf FROM entries ORDER BY idx")
        .unwrap();
    stmt.query_map([], |r| r.get::<_, Vec<u8>>(0))
        .unwrap()
        .map(|l| hex::encode(l.unwrap()))
        .collect()
}

#[test]
fn go_x_mod_verifies_checkpoints_cosignatures_and_proofs() {
    let Some(go) = require_go() else { return };
    let store = Store::init();
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(&go, tmp.path());
    let first = store.write(&["first"]);
    store.json(&["checkpoint"]);
    let old_size = store.size();
    for i in 0..9 {
        store.write(&[&format!("entry {i}")]);
    }
    let vkey = store.json(&["checkpoint", "--vkey"])["vkey"]
        .as_str()
        .unwrap()
        .to_string();
    let mut wkeys = Vec::new();
    let mut policy = String::new();
    for name in ["w1", "w2"] {
        let dir = tmp.path().join(name);
        let d = dir.to_str().unwrap();
        let w = store.json(&[
            "witness",
            "init",
            "--dir",
            d,
            "--name",
            &format!("{name}.example/witness"),
        ]);
        store.json(&["witness", "add-log", "--dir", d, &vkey]);
        let wk = w["vkey"].as_str().unwrap().to_string();
        policy.push_str(&format!("witness {name} {wk} file://{d}\n"));
        wkeys.push(wk);
    }
    policy.push_str("group all 2 w1 w2\nquorum all\n");
    let policy_path = tmp.path().join("policy");
    std::fs::write(&policy_path, policy).unwrap();
    let round = store.json(&[
        "checkpoint",
        "--witness",
        "--policy",
        policy_path.to_str().unwrap(),
    ]);
    assert_eq!(round["quorum_met"], true, "{round:#}");
    let size = round["size"].as_u64().unwrap();
    let consistency = store.json(&[
        "prove",
        "--consistency",
        &old_size.to_string(),
        &size.to_string(),
    ]);
    let small = store.json(&["prove", "--consistency", "1", "2"]);
    let inclusion = store.json(&["prove", &first]);
    let last = store.json(&["prove", &first, "--size", &(old_size + 1).to_string()]);
    let input = json!({
        "log_vkey": vkey,
        "witness_vkeys": wkeys,
        "note": round["note"],
        "leaves": leaves(&store),
        "consistency": [consistency, small],
        "inclusion": [inclusion, last],
    });
    let (ok, text) = run_go(&exe, &input, tmp.path());
    assert!(ok, "Go rejected MemLineage's output:\n{text}");
    for line in [
        "ok x/mod note.NewVerifier refuses key type 0x04",
        "ok note.Open verified the log signature and 2 cosignature(s)",
        &format!("ok tlog.TreeHash of {size} leaves equals the checkpoint root"),
        &format!("ok tlog.CheckTree {old_size} -> {size}"),
        &format!("ok tlog.CheckRecord {} in {size}", inclusion["index"]),
        "ALL OK",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }

    // The Go side does reject what it should: a cosignature over another timestamp, and a
    // checkpoint signed by another log key.
    let note = round["note"].as_str().unwrap();
    let mut bad = input.clone();
    let forged: String = note
        .lines()
        .map(|l| {
            if l.starts_with("— w1.example") {
                let (head, b64) = l.rsplit_once(' ').unwrap();
                let mut raw = base64_decode(b64);
                raw[11] ^= 1; // the timestamp's last byte
                format!("{head} {}\n", base64_encode(&raw))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    bad["note"] = json!(forged);
    let (ok, text) = run_go(&exe, &bad, tmp.path());
    assert!(!ok && text.contains("note.Open"), "{text}");
    let other = Store::init();
    let mut bad = input.clone();
    bad["log_vkey"] = other.json(&["checkpoint", "--vkey"])["vkey"].clone();
    let (ok, text) = run_go(&exe, &bad, tmp.path());
    assert!(!ok, "{text}");
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

fn base64_encode(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}
