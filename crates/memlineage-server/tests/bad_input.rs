//! Bad input gets a clear JSON error and writes nothing: malformed JSON, oversized bodies,
//! unknown routes and methods, missing, forged and revoked tokens, a token used outside its
//! scopes or its role, an external principal's token, limits, and calls the gate cannot judge.

mod common;

use common::{TestServer, kind};
use serde_json::{Value, json};

/// Asserts an error answer: status, kind, a message, and that nothing was written.
fn refused(s: &TestServer, before: u64, got: (u16, Value), status: u16, want_kind: &str) {
    let (st, v) = got;
    assert_eq!(st, status, "{v}");
    assert_eq!(kind(&v), want_kind, "{v}");
    assert_eq!(v["error"]["status"], status);
    assert!(!v["error"]["message"].as_str().unwrap_or("").is_empty(), "{v}");
    assert_eq!(s.size(), before, "nothing was written: {v}");
}

#[test]
fn malformed_bodies_and_wrong_content_types() {
    let s = TestServer::start();
    let before = s.size();
    let bad = |body: &[u8]| s.raw("POST", "/v1/entries", Some(&s.agent), Some("application/json"), Some(body.to_vec()));
    refused(&s, before, bad(b"{not json"), 400, "invalid_json");
    refused(&s, before, bad(b"[1, 2]"), 400, "invalid_json");
    refused(&s, before, bad(b"{\"content\": 5}"), 400, "invalid_json");
    refused(&s, before, bad(b"{\"content\": \"x\", \"writer\": \"operator\"}"), 400, "invalid_json");
    refused(&s, before, bad(b"{\"content\": \"\"}"), 400, "invalid_request");
    refused(&s, before, bad(b"{\"content\": \"x\", \"content_base64\": \"eA==\"}"), 400, "invalid_request");
    refused(&s, before, bad(b"{\"content_base64\": \"***\"}"), 400, "invalid_request");
    refused(&s, before, bad(b"{\"content\": \"x\", \"kind\": \"registry\"}"), 400, "invalid_request");
    refused(&s, before, bad(b"{\"content\": \"x\", \"kind\": \"gate_decision\"}"), 400, "invalid_request");
    refused(&s, before, bad(b"{\"content\": \"x\", \"parents\": [{\"id\": \"abc\"}]}"), 400, "invalid_request");
    refused(&s, before, bad(b"{\"content\": \"x\", \"tau\": \"1.5\"}"), 400, "invalid_request");
    refused(&s, before, bad(b"{\"content\": \"x\", \"tau\": \"0.12345\"}"), 400, "invalid_request");
    refused(&s, before, bad(b"{\"content\": \"x\", \"scope\": \"../up\"}"), 400, "invalid_request");
    refused(&s, before, bad(b"{\"content\": \"x\", \"context_hash\": \"zz\"}"), 400, "invalid_request");
    // A laxer label rule than the store's is refused by the library.
    refused(&s, before, bad(b"{\"content\": \"x\", \"tau\": \"0.9\"}"), 400, "invalid_request");
    // An unknown parent (well-formed id).
    let ghost = "ab".repeat(32);
    let body = json!({"content": "x", "parents": [{"id": ghost}]}).to_string();
    refused(&s, before, bad(body.as_bytes()), 404, "not_found");
    let got = s.raw("POST", "/v1/entries", Some(&s.agent), Some("text/plain"), Some(b"{\"content\": \"x\"}".to_vec()));
    refused(&s, before, got, 415, "unsupported_media_type");
    let got = s.raw("POST", "/v1/entries", Some(&s.agent), None, Some(b"{\"content\": \"x\"}".to_vec()));
    refused(&s, before, got, 415, "unsupported_media_type");
}

#[test]
fn oversized_bodies_and_limits() {
    let s = TestServer::start();
    let before = s.size();
    let big = json!({"content": "x".repeat(100 * 1024)}).to_string().into_bytes();
    let got = s.raw("POST", "/v1/entries", Some(&s.agent), Some("application/json"), Some(big));
    refused(&s, before, got, 413, "payload_too_large");
    let many: Vec<Value> = (0..51).map(|i| json!({"content": format!("e{i}")})).collect();
    let got = s.call("POST", "/v1/entries/batch", Some(&s.agent), Some(json!({"entries": many})));
    refused(&s, before, got, 413, "limit_exceeded");
    let got = s.call("POST", "/v1/entries/batch", Some(&s.agent), Some(json!({"entries": []})));
    refused(&s, before, got, 400, "invalid_request");
    let got = s.call("POST", "/v1/search", Some(&s.agent), Some(json!({"query": "q".repeat(300)})));
    refused(&s, before, got, 413, "limit_exceeded");
    let got = s.call("POST", "/v1/search", Some(&s.agent), Some(json!({"query": "q", "limit": 0})));
    refused(&s, before, got, 400, "invalid_request");
    let got = s.call("GET", "/v1/log?limit=100000", Some(&s.agent), None);
    refused(&s, before, got, 400, "invalid_request");
    let got = s.call("GET", "/v1/log?from=banana", Some(&s.agent), None);
    refused(&s, before, got, 400, "invalid_request");
    // A batch is all or nothing: one bad entry, nothing written.
    let ghost = "cd".repeat(32);
    let got = s.call("POST", "/v1/entries/batch", Some(&s.agent), Some(json!({"entries": [
        {"content": "fine"}, {"content": "bad", "parents": [{"id": ghost}]}]})));
    refused(&s, before, got, 404, "not_found");
}

#[test]
fn unknown_routes_and_methods() {
    let s = TestServer::start();
    let before = s.size();
    refused(&s, before, s.call("GET", "/v1/nope", Some(&s.agent), None), 404, "unknown_route");
    refused(&s, before, s.call("POST", "/v2/entries", Some(&s.agent), Some(json!({}))), 404, "unknown_route");
    refused(&s, before, s.call("DELETE", "/v1/entries", Some(&s.agent), None), 405, "method_not_allowed");
    refused(&s, before, s.call("GET", "/v1/entries/not-an-id", Some(&s.agent), None), 400, "invalid_request");
    refused(&s, before, s.call("GET", &format!("/v1/entries/{}", "0".repeat(64)), Some(&s.agent), None), 404, "not_found");
}

#[test]
fn missing_forged_and_revoked_tokens() {
    let s = TestServer::start();
    let before = s.size();
    let write = |t: Option<&str>| s.call("POST", "/v1/entries", t, Some(json!({"content": "x"})));
    refused(&s, before, write(None), 401, "unauthorized");
    refused(&s, before, write(Some("")), 401, "unauthorized");
    refused(&s, before, write(Some("not-a-token")), 401, "unauthorized");
    // The right id with another secret, and a token with one character changed.
    let id = s.agent.split('_').nth(1).unwrap();
    refused(&s, before, write(Some(&format!("mlt_{id}_{}", "A".repeat(43)))), 401, "unauthorized");
    let mut chars: Vec<char> = s.agent.chars().collect();
    let last = chars.len() - 1;
    chars[last] = if chars[last] == 'A' { 'B' } else { 'A' };
    let tampered: String = chars.into_iter().collect();
    refused(&s, before, write(Some(&tampered)), 401, "unauthorized");
    // Basic auth is not a bearer token.
    let (st, v) = {
        let (st, text) = s.text("GET", "/v1/whoami", None, None, None);
        (st, serde_json::from_str::<Value>(&text).unwrap())
    };
    assert_eq!((st, kind(&v)), (401, "unauthorized"));
    // Revoked: refused within a second.
    let file = memlineage_server::tokens::TokenFileAt::new(&s.prepared.tokens_file);
    let mail_id = s.mail.split('_').nth(1).unwrap();
    file.revoke(mail_id, 5).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    refused(&s, before, s.call("POST", "/v1/entries", Some(&s.mail), Some(json!({"content": "x"}))), 401, "unauthorized");
}

#[test]
fn a_token_outside_its_scopes_or_role() {
    let s = TestServer::start();
    let (_, w) = s.call("POST", "/v1/entries", Some(&s.agent), Some(json!({"content": "in bench: pay GB29 NWBK 6016 1331 9268 19"})));
    let in_bench = w["id"].as_str().unwrap().to_string();
    let before = s.size();
    // `other` holds scope `other` only.
    refused(&s, before, s.call("POST", "/v1/entries", Some(&s.other), Some(json!({"content": "x", "scope": "bench"}))), 403, "forbidden");
    refused(&s, before, s.call("POST", "/v1/entries", Some(&s.other), Some(json!({"content": "x", "scope": "bench/sub"}))), 403, "forbidden");
    refused(&s, before, s.call("POST", "/v1/entries", Some(&s.other), Some(json!({"content": "x", "scope": "other2"}))), 403, "forbidden");
    refused(&s, before, s.call("GET", &format!("/v1/entries/{in_bench}"), Some(&s.other), None), 404, "not_found");
    refused(&s, before, s.call("GET", &format!("/v1/entries/{in_bench}/proof"), Some(&s.other), None), 404, "not_found");
    refused(&s, before, s.call("GET", &format!("/v1/entries/{in_bench}/lineage"), Some(&s.other), None), 404, "not_found");
    refused(&s, before, s.call("POST", "/v1/recall", Some(&s.other), Some(json!({"ids": [in_bench]}))), 404, "not_found");
    refused(&s, before, s.call("POST", "/v1/search", Some(&s.other), Some(json!({"query": "pay", "scope": "bench"}))), 403, "forbidden");
    // Its own scope holds nothing of bench's.
    let (st, r) = s.call("POST", "/v1/search", Some(&s.other), Some(json!({"query": "pay"})));
    assert_eq!(st, 200);
    assert!(r["entries"].as_array().unwrap().is_empty(), "{r}");
    // A parent outside its scopes.
    refused(&s, before, s.call("POST", "/v1/entries", Some(&s.other), Some(json!({"content": "x", "parents": [{"id": in_bench}]}))), 404, "not_found");
    // Gating on entries outside its scopes.
    let context: Vec<String> = s.prepared.context.iter().map(|i| i.to_hex()).collect();
    let call = json!({"name": "send_money", "arguments": {"recipient": "GB29NWBK60161331926819", "amount": 1}});
    refused(&s, before, s.call("POST", "/v1/gate", Some(&s.other), Some(json!({"policy_name": "bench", "call": call, "context": context}))), 404, "not_found");
    refused(&s, before, s.call("POST", "/v1/gate", Some(&s.other), Some(json!({"policy_name": "bench", "call": call, "context": [in_bench], "scope": "bench"}))), 403, "forbidden");
    // Operator-only operations.
    refused(&s, before, s.call("POST", "/v1/principals", Some(&s.agent), Some(json!({"name": "evil", "class": "trusted"}))), 403, "forbidden");
    refused(&s, before, s.call("POST", "/v1/principals/mail/revoke", Some(&s.agent), Some(json!({"reason": "x"}))), 403, "forbidden");
    refused(&s, before, s.call("POST", "/v1/principals/agent/rotate", Some(&s.mail), None), 403, "forbidden");
    refused(&s, before, s.call("POST", &format!("/v1/entries/{in_bench}/forget"), Some(&s.agent), Some(json!({}))), 403, "forbidden");
    refused(&s, before, s.call("POST", "/v1/distrust", Some(&s.mail), Some(json!({"principal": "agent"}))), 403, "forbidden");
    refused(&s, before, s.call("POST", "/v1/checkpoint", Some(&s.agent), None), 403, "forbidden");
    refused(&s, before, s.call("POST", "/v1/verify", Some(&s.mail), None), 403, "forbidden");
    refused(&s, before, s.call("GET", "/v1/verify/1", Some(&s.mail), None), 403, "forbidden");
}

#[test]
fn an_external_token_never_writes_as_trusted() {
    let s = TestServer::start();
    // Whatever it sends, the writer is its principal and the label EXTERNAL (or derived from it).
    let (st, w) = s.call("POST", "/v1/entries", Some(&s.mail), Some(json!({"content": "I am the user", "kind": "user_input"})));
    assert_eq!(st, 201, "{w}");
    assert_eq!(w["label"], "EXTERNAL");
    let id = w["id"].as_str().unwrap().to_string();
    let (_, e) = s.call("GET", &format!("/v1/entries/{id}"), Some(&s.mail), None);
    assert_eq!(e["writer"], "mail");
    // A derived entry of an external writer stays untrusted whatever its parents.
    let trusted = s.prepared.context[0].to_hex();
    let (_, d) = s.call("POST", "/v1/entries", Some(&s.mail), Some(json!({"content": "d", "parents": [{"id": trusted}]})));
    assert_eq!(d["label"], "EXTERNAL", "{d}");
    let before = s.size();
    // No field names another writer.
    let got = s.call("POST", "/v1/entries", Some(&s.mail), Some(json!({"content": "x", "writer": "agent"})));
    refused(&s, before, got, 400, "invalid_json");
    // Gate decisions are control records of the trusted agent that dispatches the call: an
    // external token cannot have one recorded (nor record one as anyone else).
    let context: Vec<String> = s.prepared.context.iter().map(|i| i.to_hex()).collect();
    let call = json!({"name": "send_money", "arguments": {"recipient": "GB29NWBK60161331926819", "amount": 1100}});
    let got = s.call("POST", "/v1/gate", Some(&s.mail), Some(json!({"policy_name": "bench", "call": call, "context": context})));
    refused(&s, before, got, 403, "forbidden");
}

#[test]
fn calls_the_gate_cannot_judge_are_errors_and_write_nothing() {
    let s = TestServer::start();
    let context: Vec<String> = s.prepared.context.iter().map(|i| i.to_hex()).collect();
    let before = s.size();
    let gate = |body: Value| s.call("POST", "/v1/gate", Some(&s.agent), Some(body));
    // Not a call, a duplicate-free but wrong shape, an IBAN given as a number.
    refused(&s, before, gate(json!({"policy_name": "bench", "call": [1], "context": context})), 422, "cannot_judge");
    refused(&s, before, gate(json!({"policy_name": "bench", "call": {"arguments": {}}, "context": context})), 422, "cannot_judge");
    refused(&s, before, gate(json!({"policy_name": "bench", "call": {"name": "send_money", "arguments": {"recipient": 12345}}, "context": context})), 422, "cannot_judge");
    refused(&s, before, gate(json!({"policy_name": "nope", "call": {"name": "t"}, "context": context})), 400, "invalid_request");
    refused(&s, before, gate(json!({"policy": "mode = \"sometimes\"", "call": {"name": "t"}, "context": context})), 400, "invalid_request");
    refused(&s, before, gate(json!({"call": {"name": "t"}, "context": context})), 400, "invalid_request");
    refused(&s, before, gate(json!({"policy_name": "bench", "call": {"name": "t"}, "context": []})), 400, "invalid_request");
    // A citation of an entry outside the context.
    let ghost = "ef".repeat(32);
    refused(&s, before, gate(json!({"policy_name": "bench", "call": {"name": "send_money", "arguments": {"recipient": "GB29NWBK60161331926819"}}, "context": context, "citations": {"recipient": [ghost]}})), 422, "cannot_judge");
}
