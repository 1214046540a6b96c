//! `memlineage serve` and `memlineage token`, as a user runs them: the real binary on a
//! loopback port, bearer tokens from the CLI, requests from an HTTP client this project did
//! not write (ureq), and SIGTERM in the middle of a flood of writes: every write the service
//! acknowledged is in the store afterwards, the store verifies, and nothing is left pending in
//! its full-text index.
#![cfg(all(unix, feature = "server"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Store;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

struct Serving {
    child: Child,
    base: String,
    /// The service's stderr (its log), in a file: a pipe nobody reads would fill and block it.
    log: std::path::PathBuf,
}

/// Starts `serve` with its default log level, or with `log_filter` as `RUST_LOG`.
fn serve(s: &Store, extra: &[&str], log_filter: Option<&str>) -> Serving {
    let mut args = vec!["--json", "serve", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let log = s.dir.path().join(format!("serve-{}.log", extra.len()));
    let mut cmd = s.cmd(&args);
    if let Some(filter) = log_filter {
        cmd.env("RUST_LOG", filter);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    Serving {
        child,
        base: format!("http://{}", v["listening"].as_str().unwrap()),
        log,
    }
}

fn sigterm(child: &Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

fn post(http: &ureq::Agent, url: &str, token: &str, body: Value) -> Result<(u16, Value), String> {
    let mut r = http
        .post(url)
        .header("Authorization", &format!("Bearer {token}"))
        .send_json(body)
        .map_err(|e| e.to_string())?;
    let status = r.status().as_u16();
    let v = r
        .body_mut()
        .read_json::<Value>()
        .map_err(|e| e.to_string())?;
    Ok((status, v))
}

#[test]
fn tokens_from_the_cli_and_a_graceful_stop_under_load() {
    let s = Store::init();
    let t = s.json(&[
        "token",
        "create",
        "--principal",
        "agent",
        "--scope",
        "acme",
        "--note",
        "test",
    ]);
    let token = t["token"].as_str().unwrap().to_string();
    assert_eq!(t["scopes"], json!(["acme"]));
    // The operator role is for trusted principals only.
    let r = s
        .run(&["token", "create", "--principal", "web", "--operator"])
        .code(1);
    assert!(r.stderr.contains("external"), "{}", r.stderr);
    s.run(&["token", "create", "--principal", "nobody"]).code(1);
    s.run(&["token", "create", "--principal", "agent", "--scope", "../x"])
        .code(2);
    let list = s.json(&["token", "list"]);
    assert_eq!(list["tokens"].as_array().unwrap().len(), 1);
    assert!(
        !std::fs::read_to_string(s.dir.path().join("tokens.json"))
            .unwrap()
            .contains(&token)
    );

    // A line for every request (a success's line is at `debug`), to check that none queued is
    // lost at the stop.
    let mut srv = serve(&s, &[], Some("info,memlineage_server::http=debug"));
    let http = agent();
    let url = format!("{}/v1/entries", srv.base);
    let (st, v) = post(&http, &url, &token, json!({"content": "hello"})).unwrap();
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["label"], "TRUSTED");
    let (st, v) = post(
        &http,
        &url,
        &token,
        json!({"content": "x", "scope": "default"}),
    )
    .unwrap();
    assert_eq!((st, v["error"]["kind"].as_str()), (403, Some("forbidden")));

    // A flood of writes from 8 clients; SIGTERM in the middle.
    let stop = AtomicBool::new(false);
    let acknowledged: Vec<String> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..8)
            .map(|w| {
                let (http, url, token, stop) = (&http, &url, &token, &stop);
                sc.spawn(move || {
                    let mut ids = Vec::new();
                    let started = Instant::now();
                    for i in 0.. {
                        if stop.load(Ordering::SeqCst)
                            || started.elapsed() > Duration::from_secs(20)
                        {
                            break;
                        }
                        match post(
                            http,
                            url,
                            token,
                            json!({"content": format!("worker {w} entry {i}")}),
                        ) {
                            Ok((201, v)) => ids.push(v["id"].as_str().unwrap().to_string()),
                            // Refused or cut off by the shutdown: not acknowledged.
                            Ok(_) | Err(_) => break,
                        }
                    }
                    ids
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(700));
        sigterm(&srv.child);
        let status = srv.child.wait().unwrap();
        stop.store(true, Ordering::SeqCst);
        assert!(status.success(), "serve exited with {status}");
        workers
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        acknowledged.len() > 20,
        "only {} writes before the signal",
        acknowledged.len()
    );
    let stderr = std::fs::read_to_string(&srv.log).unwrap();
    // JSON log lines, one per request, and the shutdown message.
    let line = stderr
        .lines()
        .find(|l| l.contains("\"route\":\"/v1/entries\""))
        .unwrap();
    let log: Value = serde_json::from_str(line).unwrap();
    assert_eq!(log["status"], "201");
    // The log thread writes out every line still queued when the service stops: a line for
    // each acknowledged write (and one for each refused or unanswered one).
    let logged_writes = stderr
        .lines()
        .filter(|l| l.contains("\"route\":\"/v1/entries\"") && l.contains("\"status\":\"201\""))
        .count();
    assert!(
        logged_writes >= acknowledged.len(),
        "{logged_writes} log lines of acknowledged writes for {} acknowledged",
        acknowledged.len()
    );
    assert!(
        stderr.contains("every acknowledged write is durable"),
        "{stderr}"
    );

    // Every acknowledged write is in the store, and the store verifies.
    let size = s.size();
    let log = s.json(&["log", "--limit", &size.to_string()]);
    let ids: std::collections::HashSet<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    for id in &acknowledged {
        assert!(
            ids.contains(id.as_str()),
            "acknowledged entry {id} is missing"
        );
    }
    let (code, report) = s.verify();
    assert_eq!(code, 0, "{report}");
    // The service left the full-text indexing to after its commits, and its stop indexed
    // whatever was still pending: nothing is (a read-only open indexes nothing itself).
    let read_only = memlineage::SqliteStore::open_read_only(&s.db()).unwrap();
    assert_eq!(
        memlineage::Backend::index_full_text(&read_only, 0)
            .unwrap()
            .pending,
        0
    );
    drop(read_only);
    let found = s.json(&["search", "worker 0 entry 3", "--scope", "acme"]);
    assert!(!found["entries"].as_array().unwrap().is_empty(), "{found}");

    // A revoked token is refused by the next service.
    s.run(&["token", "revoke", t["id"].as_str().unwrap()]).ok();
    let mut srv = serve(&s, &["--text-logs"], None);
    let (st, v) = post(
        &agent(),
        &format!("{}/v1/entries", srv.base),
        &token,
        json!({"content": "x"}),
    )
    .unwrap();
    assert_eq!(
        (st, v["error"]["kind"].as_str()),
        (401, Some("unauthorized")),
        "{v}"
    );
    sigterm(&srv.child);
    assert!(srv.child.wait().unwrap().success());
    // At the default level a refused request is logged (a success is not).
    let text = std::fs::read_to_string(&srv.log).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("memlineage_server::http") && l.contains("401")),
        "{text}"
    );
}

#[test]
fn serve_prints_the_openapi_document_and_refuses_a_missing_store() {
    let s = Store::init();
    let r = s.run(&["serve", "--openapi"]).ok();
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let empty = Store::empty();
    let r = empty.run(&["serve", "--listen", "127.0.0.1:0"]).code(1);
    assert!(r.stderr.contains("memlineage init"), "{}", r.stderr);
    let r = s
        .run(&["serve", "--listen", "127.0.0.1:0", "--policy", "nofile"])
        .code(2);
    assert!(r.stderr.contains("NAME=FILE"), "{}", r.stderr);
}
