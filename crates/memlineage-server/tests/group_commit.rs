//! Group commit across concurrent requests: many clients writing at once get distinct,
//! durable entries, written in fewer commits than requests; a bad request in a group fails
//! alone; after a graceful stop every acknowledged entry is in the store and it verifies.

mod common;

use common::TestServer;
use memlineage::StoreLocation;
use serde_json::json;
use std::collections::HashSet;

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn concurrent_writers_share_commits_and_lose_nothing() {
    let mut s = TestServer::start();
    let (_, m0) = s.text("GET", "/metrics", None, None, None);
    let commits_before = metric(&m0, "memlineage_commit_group_entries_count");
    let threads = 16;
    let per = 40;
    let ghost = "ab".repeat(32);
    let acknowledged: Vec<Vec<String>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (s, ghost) = (&s, ghost.clone());
                sc.spawn(move || {
                    let mut ids = Vec::new();
                    for i in 0..per {
                        // Every tenth request is bad: it must fail alone.
                        let body = if i % 10 == 9 {
                            json!({"content": "bad", "parents": [{"id": ghost}]})
                        } else {
                            json!({"content": format!("writer {t} entry {i}")})
                        };
                        let (st, v) = s.call("POST", "/v1/entries", Some(&s.agent), Some(body));
                        if i % 10 == 9 {
                            assert_eq!(st, 404, "{v}");
                        } else {
                            assert_eq!(st, 201, "{v}");
                            ids.push(v["id"].as_str().unwrap().to_string());
                        }
                    }
                    ids
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<String> = acknowledged.into_iter().flatten().collect();
    let distinct: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), threads * per * 9 / 10);
    assert_eq!(distinct.len(), all.len());
    let (_, m1) = s.text("GET", "/metrics", None, None, None);
    let commits = metric(&m1, "memlineage_commit_group_entries_count") - commits_before;
    // Groups of several requests formed: fewer group commits than requests.
    assert!(
        commits >= 1.0 && commits < (threads * per) as f64,
        "{commits} group commits for {} requests",
        threads * per
    );
    s.stop().unwrap();
    // Reopen the store: every acknowledged entry is there, and the whole store verifies.
    let keys = memlineage_server::FileKeys::new(&s.prepared.keys_dir);
    let mem =
        memlineage_server::state::open_handle(&StoreLocation::Sqlite(s.prepared.db.clone()), &keys)
            .unwrap();
    for id in &all {
        let id: memlineage_core::EntryId = id.parse().unwrap();
        mem.get(&id).unwrap();
    }
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}
