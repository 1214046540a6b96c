//! The request timeout: a request that runs past it is answered 503 `timeout` with a JSON
//! body, and its write is all or nothing — a request told "nothing was written" wrote nothing,
//! one answered 201 is wholly durable, and the store verifies afterwards (`deadline.rs`).

mod common;

use common::TestServer;
use memlineage::StoreLocation;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

const BATCHES: usize = 12;
const PER_BATCH: usize = 400;

#[test]
fn timed_out_requests_write_all_or_nothing() {
    // 20 ms: far less than a few thousand signed durable writes queued behind each other.
    let mut s = TestServer::start_with(|c| {
        c.limits.request_timeout = Duration::from_millis(20);
        c.limits.max_batch = PER_BATCH;
        c.limits.max_body_bytes = 1 << 20;
    });
    let answers: Vec<(usize, u16, Value)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..BATCHES)
            .map(|b| {
                let s = &s;
                sc.spawn(move || {
                    let entries: Vec<Value> = (0..PER_BATCH)
                        .map(|i| json!({"content": format!("deadline batch {b} entry {i}")}))
                        .collect();
                    let (st, v) = s.call(
                        "POST",
                        "/v1/entries/batch",
                        Some(&s.agent),
                        Some(json!({ "entries": entries })),
                    );
                    (b, st, v)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    s.stop().unwrap();

    // What the store holds, per batch, read back through the library after the stop.
    let keys = memlineage_server::FileKeys::new(&s.prepared.keys_dir);
    let mem =
        memlineage_server::state::open_handle(&StoreLocation::Sqlite(s.prepared.db.clone()), &keys)
            .unwrap();
    let mut stored: HashMap<usize, usize> = HashMap::new();
    for view in mem.log(0, mem.size().unwrap()).unwrap() {
        let text = String::from_utf8_lossy(view.content.as_deref().unwrap_or_default()).to_string();
        if let Some(rest) = text.strip_prefix("deadline batch ") {
            let b: usize = rest.split(' ').next().unwrap().parse().unwrap();
            *stored.entry(b).or_default() += 1;
        }
    }
    let mut timed_out = 0;
    for (b, st, v) in &answers {
        let n = stored.get(b).copied().unwrap_or(0);
        match st {
            201 => assert_eq!(
                n, PER_BATCH,
                "batch {b} was acknowledged: all of it is durable"
            ),
            503 => {
                timed_out += 1;
                assert_eq!(v["error"]["kind"], "timeout", "{v}");
                assert_eq!(v["error"]["status"], 503, "{v}");
                let message = v["error"]["message"].as_str().unwrap();
                if message.contains("nothing was written") {
                    assert_eq!(
                        n, 0,
                        "batch {b}: told nothing was written, but {n} entries are"
                    );
                } else {
                    assert!(
                        n == 0 || n == PER_BATCH,
                        "batch {b} is half-written: {n} of {PER_BATCH}"
                    );
                }
            }
            other => panic!("batch {b}: unexpected {other}: {v}"),
        }
    }
    assert!(
        timed_out > 0,
        "no request ran past a 20 ms timeout: {:?}",
        answers.iter().map(|a| a.1).collect::<Vec<_>>()
    );
    let report = mem.verify(&mut |_, _| {}).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
}
