//! `memlineage witness serve` and `memlineage checkpoint` with witnesses given as HTTP URLs, as
//! a user runs them: the real binary serving a witness on a loopback port (C2SP tlog-witness),
//! a log whose `witnesses.policy` names it and a witness nobody serves; plain `checkpoint`
//! submits to both, reports each, and the k-of-n policy decides the exit status; a witness
//! serving HTTPS under a private CA, reached with `checkpoint --witness-ca` only.
#![cfg(all(unix, feature = "server", feature = "witness-http"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Store, private_ca};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

/// A witness service child process, stopped with SIGTERM when dropped.
struct Serving {
    child: Child,
    url: String,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

fn witness(store: &Store, dir: &str, name: &str) -> String {
    let vkey = store.json(&["checkpoint", "--vkey"])["vkey"]
        .as_str()
        .unwrap()
        .to_string();
    let w = store.json(&["witness", "init", "--dir", dir, "--name", name]);
    store.json(&["witness", "add-log", "--dir", dir, &vkey]);
    w["vkey"].as_str().unwrap().to_string()
}

fn serve(store: &Store, dir: &str) -> Serving {
    serve_with(store, dir, &[])
}

fn serve_with(store: &Store, dir: &str, extra: &[&str]) -> Serving {
    let log = std::fs::File::create(format!("{dir}.log")).unwrap();
    let mut args = vec![
        "--json",
        "witness",
        "serve",
        "--dir",
        dir,
        "--listen",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(extra);
    let mut child = store
        .cmd(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    let scheme = if v["tls"] == true { "https" } else { "http" };
    let addr: std::net::SocketAddr = v["listening"].as_str().unwrap().parse().unwrap();
    Serving {
        child,
        // By name, as a certificate names its host.
        url: format!("{scheme}://localhost:{}", addr.port()),
    }
}

#[test]
fn checkpoint_reaches_an_https_witness_under_a_private_ca_with_witness_ca() {
    let store = Store::init();
    store.write(&["a fact worth keeping"]);
    let out = tempfile::tempdir().unwrap();
    let d1 = out.path().join("w1").display().to_string();
    let w1 = witness(&store, &d1, "w1.example");
    let [ca, cert, key] = private_ca(out.path(), "witness");
    let [other_ca, _, _] = private_ca(out.path(), "other");
    let served = serve_with(&store, &d1, &["--tls-cert", &cert, "--tls-key", &key]);
    assert!(served.url.starts_with("https://"), "{}", served.url);
    std::fs::write(
        store.dir.path().join("witnesses.policy"),
        format!("witness w1 {w1} {}\nquorum w1\n", served.url),
    )
    .unwrap();
    let checkpoint = |extra: &[&str]| {
        let mut args = vec!["checkpoint", "--json", "--witness-timeout", "3"];
        args.extend_from_slice(extra);
        store.run(&args)
    };

    // Mozilla's roots, or another private CA: the certificate is not trusted, exit 1.
    for extra in [&[][..], &["--witness-ca", &other_ca][..]] {
        let r = checkpoint(extra);
        assert_eq!(r.code, 1, "{r:#?}");
        let v = r.json();
        assert_eq!(v["quorum_met"], false, "{v:#}");
        assert_eq!(v["witnesses"][0]["status"], 0, "{v:#}");
    }

    // The witness's CA: cosigned over HTTPS.
    let r = checkpoint(&["--witness-ca", &ca]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert_eq!(r.json()["witnesses"][0]["status"], 200);

    // A CA file that is not one is refused by name before anything is signed or sent.
    let size = store.json(&["checkpoint", "--no-witness"])["size"].clone();
    for bad in [key.as_str(), "/nonexistent/ca.pem"] {
        let r = checkpoint(&["--witness-ca", bad]);
        assert_eq!(r.code, 2, "{r:#?}");
        assert!(r.stderr.contains("--witness-ca"), "{}", r.stderr);
        assert!(r.stderr.contains(bad), "{}", r.stderr);
    }
    let vkey = store.json(&["checkpoint", "--vkey"]);
    let origin = vkey["origin"].as_str().unwrap();
    let held = store.json(&["witness", "checkpoint", "--dir", &d1, origin]);
    assert_eq!(held["size"], size);
}

#[test]
fn checkpoint_submits_to_http_witnesses_and_the_policy_decides() {
    let store = Store::init();
    store.write(&["a fact worth keeping"]);
    let out = tempfile::tempdir().unwrap();
    let d1 = out.path().join("w1").display().to_string();
    let d2 = out.path().join("w2").display().to_string();
    let w1 = witness(&store, &d1, "w1.example");
    let w2 = witness(&store, &d2, "w2.example");
    let served = serve(&store, &d1);
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let policy = |quorum: &str| {
        std::fs::write(
            store.dir.path().join("witnesses.policy"),
            format!(
                "witness w1 {w1} {}\nwitness w2 {w2} {dead}\n{quorum}",
                served.url
            ),
        )
        .unwrap();
    };

    // One of two: w1 cosigns over HTTP, w2 does not answer; plain `checkpoint` asks both.
    policy("group any 1 w1 w2\nquorum any\n");
    let r = store.run(&["checkpoint", "--json", "--witness-timeout", "3"]);
    assert_eq!(r.code, 0, "{r:#?}");
    let v = r.json();
    assert_eq!(v["quorum_met"], true, "{v:#}");
    assert_eq!(v["witnesses"][0]["status"], 200);
    assert_eq!(v["witnesses"][1]["status"], 0);
    let why = v["witnesses"][1]["message"].as_str().unwrap();
    assert!(
        why.starts_with(&format!("no answer: witness {dead}")),
        "{why}"
    );
    let text = store.run(&["checkpoint"]).stdout;
    assert!(text.contains("witness w1: cosigned"), "{text}");
    assert!(text.contains("witness w2: no answer"), "{text}");

    // Two of two: not witnessed, exit 1 (fail closed); the checkpoint is stored all the same.
    policy("group all 2 w1 w2\nquorum all\n");
    let r = store.run(&["checkpoint", "--json", "--witness-timeout", "3"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert_eq!(r.json()["quorum_met"], false);
    assert_eq!(r.json()["witnesses"][0]["status"], 200);

    // Only signing, on request.
    let plain = store.json(&["checkpoint", "--no-witness"]);
    assert!(plain.get("quorum_met").is_none(), "{plain:#}");

    // The witness serves what it cosigned, and the CLI reads the same from its directory.
    let origin = store.json(&["checkpoint", "--vkey"])["origin"]
        .as_str()
        .unwrap()
        .to_string();
    let held = store.json(&["witness", "checkpoint", "--dir", &d1, &origin]);
    assert!(held["size"].as_u64().unwrap() >= 2);
}
