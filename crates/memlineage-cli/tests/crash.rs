//! Durability and concurrency: a writer killed with SIGKILL mid-storm loses no acknowledged
//! entry and leaves a store that verifies; two writers at once lose nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Store;
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// All ids in the log.
fn log_ids(s: &Store) -> HashSet<String> {
    let log = s.json(&["log", "--limit", "1000000"]);
    log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn sigkill_mid_storm_loses_no_acknowledged_entry() {
    let s = Store::init();
    let mut acknowledged: Vec<String> = Vec::new();
    for round in 0..3u64 {
        let mut child = s
            .cmd(&[
                "debug",
                "write-storm",
                "100000",
                "--tag",
                &format!("round{round}"),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Let it acknowledge some writes (a different number each round), then SIGKILL it.
        let want = 15 + 10 * round as usize;
        let mut got = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while got < want && Instant::now() < deadline {
            if let Ok(id) = rx.recv_timeout(Duration::from_millis(100)) {
                acknowledged.push(id);
                got += 1;
            }
        }
        assert!(
            got >= want,
            "the storm acknowledged only {got} writes in 60 s"
        );
        child.kill().unwrap(); // SIGKILL on Unix
        let status = child.wait().unwrap();
        assert!(!status.success(), "the writer was killed");
        reader.join().unwrap();
        // Ids already printed (still in the pipe) were acknowledged too.
        acknowledged.extend(rx.try_iter());
        let mut err = String::new();
        use std::io::Read;
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(
        acknowledged.iter().all(|id| id.len() == 64),
        "{acknowledged:?}"
    );
    // Every acknowledged id is present (`get`), and the store verifies.
    let present = log_ids(&s);
    for id in &acknowledged {
        assert!(present.contains(id), "acknowledged entry {id} was lost");
    }
    for id in acknowledged.iter().step_by(7) {
        let g = s.json(&["get", id]);
        assert_eq!(g["verified"], true);
    }
    let (code, report) = s.verify();
    assert_eq!(code, 0, "{report:#}");
    assert!(report["entries"].as_u64().unwrap() >= 3 + acknowledged.len() as u64);
    // And the store is still writable.
    s.write(&["after the crash"]);
    assert_eq!(s.verify().0, 0);
}

#[test]
fn two_writers_at_once() {
    let s = Store::init();
    s.json(&["principal", "add", "bot2", "--class", "trusted"]);
    let base = s.size();
    let n = 200usize;
    let spawn = |who: &str| {
        s.cmd(&["debug", "write-storm", &n.to_string(), "--as", who])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn("agent");
    let b = spawn("bot2");
    let oa = a.wait_with_output().unwrap();
    let ob = b.wait_with_output().unwrap();
    for o in [&oa, &ob] {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "a writer failed: {err}");
        assert!(err.is_empty(), "no errors expected: {err}");
    }
    let ids: Vec<String> = [&oa, &ob]
        .iter()
        .flat_map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(ids.len(), 2 * n);
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), 2 * n);
    let present = log_ids(&s);
    for id in &ids {
        assert!(present.contains(id), "acknowledged entry {id} was lost");
    }
    assert_eq!(s.size(), base + 2 * n as u64);
    let (code, report) = s.verify();
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["entries"].as_u64(), Some(base + 2 * n as u64));
}
