//! Principals' keys in a PKCS#11 token (SoftHSM2), as a user runs it: keys generated inside
//! the token, registered from it (`principal add --external-key`), entries signed through it
//! by `write --signer` / `MEMLINEAGE_SIGNER` and by `memlineage serve --signer`, verified by
//! `memlineage verify` with no signer at all (the format is the file keys'); a rotation to a
//! new key in the token; and every failure — no signer, a wrong or missing PIN, a key gone
//! from the token, a module that does not load, a token deleted under a running service —
//! answered with an error naming the principal and the signer, with nothing written.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod pkcs11_support;

use common::{Run, Store};
use pkcs11_support::SoftHsm;
use std::process::Stdio;

fn with_hsm(s: &Store, hsm: &SoftHsm, args: &[&str]) -> Run {
    Run::from_output(
        hsm.env(&mut s.cmd(args))
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    )
}

/// [`with_hsm`] with `--signer URI` before `args`.
fn with_signer(s: &Store, hsm: &SoftHsm, uri: &str, args: &[&str]) -> Run {
    let mut all = vec!["--signer", uri];
    all.extend_from_slice(args);
    with_hsm(s, hsm, &all)
}

/// Exits non-zero, names every word of `words` on stderr, and writes nothing.
fn refused(s: &Store, hsm: &SoftHsm, args: &[&str], words: &[&str]) {
    let before = s.size();
    let r = with_hsm(s, hsm, args);
    assert_ne!(r.code, 0, "{r:#?}");
    for w in words {
        assert!(r.stderr.contains(w), "`{w}` not in: {}", r.stderr);
    }
    assert_eq!(s.size(), before, "nothing is written: {r:#?}");
}

#[test]
fn entries_signed_in_a_pkcs11_token_verify_and_failures_write_nothing() {
    let Some(hsm) = SoftHsm::start() else { return };
    let s = Store::init();
    let uri = hsm.uri();
    hsm.keygen("vault", "01");

    // Registered from the token: no key file is made.
    let r = with_signer(
        &s,
        &hsm,
        &uri,
        &[
            "--json",
            "principal",
            "add",
            "vault",
            "--class",
            "trusted",
            "--external-key",
        ],
    );
    assert_eq!(r.code, 0, "{r:#?}");
    let added = r.json();
    assert!(
        added["signer"].as_str().unwrap().contains("PKCS#11 signer"),
        "{added}"
    );
    assert!(
        !added["signer"]
            .as_str()
            .unwrap()
            .contains(pkcs11_support::PIN)
    );
    assert!(!s.keys().join("vault.key").exists());

    // Writes through --signer and through MEMLINEAGE_SIGNER.
    let r = with_signer(
        &s,
        &hsm,
        &uri,
        &[
            "--json",
            "write",
            "--as",
            "vault",
            "the vault code is in the safe",
        ],
    );
    assert_eq!(r.code, 0, "{r:#?}");
    let first = r.json()["id"].as_str().unwrap().to_string();
    let mut c = s.cmd(&[
        "--json",
        "write",
        "--as",
        "vault",
        "--parent",
        &format!("{first}:0.9"),
        "derived from the first",
    ]);
    let out = hsm
        .env(&mut c)
        .env("MEMLINEAGE_SIGNER", &uri)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = s.json(&["get", &first]);
    assert_eq!(got["writer"], "vault");
    assert_eq!(got["key_id"], added["key_id"], "{got}");
    // The store verifies with no signer at all: the signatures are plain Ed25519.
    let (code, report) = s.verify();
    assert_eq!(code, 0, "{report:#}");

    // Rotation to a new key generated in the token; the old key is refused from then on.
    hsm.keygen("vault", "02");
    let r = with_signer(
        &s,
        &hsm,
        &uri,
        &["--json", "principal", "rotate", "vault", "--external-key"],
    );
    assert_eq!(r.code, 0, "{r:#?}");
    let rotated = r.json();
    assert_ne!(rotated["key_id"], added["key_id"]);
    let r = with_signer(
        &s,
        &hsm,
        &uri,
        &["--json", "write", "--as", "vault", "after the rotation"],
    );
    assert_eq!(r.code, 0, "{r:#?}");
    let after = r.json()["id"].as_str().unwrap().to_string();
    assert_eq!(s.json(&["get", &after])["key_id"], rotated["key_id"]);
    assert_eq!(s.verify().0, 0);

    // Failures: each names the principal and the signer, and writes nothing.
    refused(
        &s,
        &hsm,
        &["write", "--as", "vault", "no signer"],
        &["vault"],
    );
    let wrong_pin = format!(
        "pkcs11:token=memlineage?module-path={}&pin-value=0000",
        hsm.module.display()
    );
    refused(
        &s,
        &hsm,
        &["--signer", &wrong_pin, "write", "--as", "vault", "x"],
        &["PIN is incorrect", "PKCS#11 signer"],
    );
    let no_pin = format!(
        "pkcs11:token=memlineage?module-path={}",
        hsm.module.display()
    );
    refused(
        &s,
        &hsm,
        &["--signer", &no_pin, "write", "--as", "vault", "x"],
        &["no PIN", "MEMLINEAGE_PKCS11_PIN"],
    );
    let no_module = "pkcs11:token=memlineage?module-path=/nonexistent/libnothing.so&pin-value=1234";
    refused(
        &s,
        &hsm,
        &["--signer", no_module, "write", "--as", "vault", "x"],
        &[
            "cannot load the PKCS#11 module",
            "/nonexistent/libnothing.so",
        ],
    );
    let other_token = format!(
        "pkcs11:token=elsewhere?module-path={}&pin-value=1234",
        hsm.module.display()
    );
    refused(
        &s,
        &hsm,
        &["--signer", &other_token, "write", "--as", "vault", "x"],
        &["no token matches", "`memlineage`"],
    );
    refused(
        &s,
        &hsm,
        &["--signer", "kms:whatever", "write", "--as", "vault", "x"],
        &["not a signer"],
    );
    // The current key is deleted from the token: no such key, named.
    hsm.delete_private_key("vault", "02");
    refused(
        &s,
        &hsm,
        &["--signer", &uri, "write", "--as", "vault", "x"],
        &[
            "signing as `vault`",
            "PKCS#11 signer",
            "holds no such key",
            "nothing was written",
        ],
    );
    assert_eq!(s.verify().0, 0);
}

#[cfg(feature = "server")]
mod service {
    use super::*;
    use serde_json::{Value, json};
    use std::io::{BufRead, BufReader};

    fn post(base: &str, token: &str, body: Value) -> (u16, Value) {
        let http: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(std::time::Duration::from_secs(60)))
            .build()
            .into();
        let mut r = http
            .post(format!("{base}/v1/entries"))
            .header("Authorization", &format!("Bearer {token}"))
            .send_json(body)
            .unwrap();
        (
            r.status().as_u16(),
            r.body_mut().read_json::<Value>().unwrap(),
        )
    }

    #[test]
    fn the_service_signs_in_the_token_and_fails_closed_when_the_token_is_gone() {
        let Some(hsm) = SoftHsm::start() else { return };
        let s = Store::init();
        let uri = hsm.uri();
        hsm.keygen("vault", "01");
        let r = with_signer(
            &s,
            &hsm,
            &uri,
            &[
                "principal",
                "add",
                "vault",
                "--class",
                "trusted",
                "--external-key",
            ],
        );
        assert_eq!(r.code, 0, "{r:#?}");
        let token = with_signer(
            &s,
            &hsm,
            &uri,
            &["token", "create", "--principal", "vault", "--scope", "acme"],
        );
        assert_eq!(token.code, 0, "{token:#?}");
        assert!(
            !token.stderr.contains("no secret key"),
            "the signer holds the key: {token:#?}"
        );
        let token = token.stdout.trim().to_string();
        let log = s.dir.path().join("serve.log");
        let mut child = hsm
            .env(&mut s.cmd(&[
                "--json",
                "--signer-timeout",
                "1",
                "serve",
                "--listen",
                "127.0.0.1:0",
            ]))
            .env("MEMLINEAGE_SIGNER", &uri)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!(
                "{e}: {line:?}: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        });
        let base = format!("http://{}", v["listening"].as_str().unwrap());

        let (st, w) = post(
            &base,
            &token,
            json!({"content": "signed in the token, over HTTP"}),
        );
        assert_eq!(st, 201, "{w}");
        let size = s.size();
        // The token stops answering: another process holds the locks of every token file,
        // which SoftHSM2 waits for. The write fails closed at the signer's deadline (1 s), and
        // writes again once the token answers.
        if let Some(mut locker) = pkcs11_support::lock_token(&hsm, 5) {
            let started = std::time::Instant::now();
            let (st, e) = post(&base, &token, json!({"content": "the token hangs"}));
            eprintln!(
                "a hanging token answered {st} after {:?}: {e}",
                started.elapsed()
            );
            assert_eq!(
                (st, e["error"]["kind"].as_str()),
                (503, Some("unavailable")),
                "{e}"
            );
            let msg = e["error"]["message"].as_str().unwrap();
            assert!(
                msg.contains("`vault`")
                    && msg.contains("no answer within 1000 ms")
                    && msg.contains("nothing was written"),
                "{msg}"
            );
            assert!(locker.wait().unwrap().success());
            assert_eq!(s.size(), size, "nothing was written while the token hung");
            let (st, again) = post(&base, &token, json!({"content": "the token answers again"}));
            assert_eq!(st, 201, "{again}");
        }
        let size = s.size();
        // The key is deleted from the token while the service runs: the next write fails
        // closed, naming the principal and the signer.
        hsm.delete_private_key("vault", "01");
        let (st, e) = post(&base, &token, json!({"content": "must not be written"}));
        eprintln!("signer failure answered {st}: {e}");
        assert!(st == 403 || st == 503, "{st} {e}");
        let msg = e["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("`vault`")
                && msg.contains("PKCS#11 signer")
                && msg.contains("nothing was written"),
            "{msg}"
        );
        // The whole token is deleted: still closed.
        hsm.tool(
            "softhsm2-util",
            &["--delete-token", "--token", pkcs11_support::TOKEN],
        );
        let (st, e) = post(
            &base,
            &token,
            json!({"content": "must not be written either"}),
        );
        eprintln!("signer failure answered {st}: {e}");
        assert!(st == 403 || st == 503, "{st} {e}");
        let status = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        assert!(
            child.wait().unwrap().success(),
            "{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        // Exactly the acknowledged write is in the store, and it verifies.
        let got = s.json(&["get", w["id"].as_str().unwrap()]);
        assert_eq!(got["writer"], "vault");
        assert_eq!(s.size(), size, "nothing was written after the token went");
        assert_eq!(s.verify().0, 0);
    }
}

/// Known answer: a key with a known seed, imported into the token, signs an entry byte for
/// byte as the same seed does as a file key (Ed25519 is deterministic, RFC 8032 §5.1.6): the
/// stored leaf — body and signature — equals the one `SignedEntry::sign` makes in process.
#[test]
fn a_token_signs_byte_for_byte_as_the_file_key_of_the_same_seed() {
    use base64::Engine;
    let Some(hsm) = SoftHsm::start() else { return };
    let s = Store::init();
    let uri = hsm.uri();
    let seed = [0x2au8; 32];
    // PKCS#8 (RFC 8410 §7) for an Ed25519 seed: a fixed prefix, then the 32 bytes.
    let mut der = hex::decode("302e020100300506032b657004220420").unwrap();
    der.extend_from_slice(&seed);
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(&der)
    );
    let pem_file = hsm.dir.path().join("known.pem");
    std::fs::write(&pem_file, pem).unwrap();
    hsm.import(&pem_file, "known", "07");
    std::fs::remove_file(&pem_file).unwrap();
    let file_key = ed25519_dalek::SigningKey::from_bytes(&seed);

    let r = with_signer(
        &s,
        &hsm,
        &uri,
        &[
            "--json",
            "principal",
            "add",
            "known",
            "--class",
            "external",
            "--external-key",
        ],
    );
    assert_eq!(r.code, 0, "{r:#?}");
    assert_eq!(
        r.json()["key_id"].as_str().unwrap(),
        memlineage_core::keys::key_id(&file_key.verifying_key()).to_hex()
    );
    let r = with_signer(
        &s,
        &hsm,
        &uri,
        &["--json", "write", "--as", "known", "a known answer"],
    );
    assert_eq!(r.code, 0, "{r:#?}");
    let id = r.json()["id"].as_str().unwrap().to_string();
    let leaf: Vec<u8> = s
        .sqlite()
        .query_row(
            "SELECT leaf FROM entries WHERE id = ?1",
            [hex::decode(&id).unwrap()],
            |row| row.get(0),
        )
        .unwrap();
    let stored = memlineage_core::entry::SignedEntry::from_leaf(&leaf).unwrap();
    let in_process =
        memlineage_core::entry::SignedEntry::sign(stored.body().clone(), &file_key).unwrap();
    assert_eq!(
        stored, in_process,
        "the token's signature is the file key's"
    );
    assert_eq!(
        stored.signature().to_bytes(),
        in_process.signature().to_bytes()
    );
}
