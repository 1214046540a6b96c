//! Bad input gets a clear JSON error and writes nothing: malformed JSON, oversized bodies,
//! unknown routes and methods, missing, forged and revoked tokens, a token used outside its
//! scopes or its role, an external principal's token, limits, and calls the gate cannot judge.

mod common;

use common::{TestServer, kind};
use serde_json::{Value, json};

/// One request expected to fail: method, path, token, JSON body, status, error kind.
type Case<'a> = (
    &'a str,
    String,
    Option<&'a str>,
    Option<Value>,
    u16,
    &'a str,
);

/// Asserts an error answer: status, kind, a message, and that nothing was written.
fn refused(s: &TestServer, before: u64, got: (u16, Value), status: u16, want_kind: &str) {
    let (st, v) = got;
    assert_eq!(st, status, "{v}");
    assert_eq!(kind(&v), want_kind, "{v}");
    assert_eq!(v["error"]["status"], status);
    assert!(
        !v["error"]["message"].as_str().unwrap_or("").is_empty(),
        "{v}"
    );
    assert_eq!(s.size(), before, "nothing was written: {v}");
}

/// Runs every case, each refused and writing nothing.
fn all_refused(s: &TestServer, cases: Vec<Case<'_>>) {
    let before = s.size();
    for (method, path, token, body, status, want) in cases {
        let got = s.call(method, &path, token, body);
        assert_eq!(
            (got.0, kind(&got.1)),
            (status, want),
            "{method} {path}: {}",
            got.1
        );
        refused(s, before, got, status, want);
    }
}

/// Raw bodies posted to `/v1/entries`, each refused and writing nothing.
fn raw_refused(s: &TestServer, cases: &[(&[u8], Option<&str>, u16, &str)]) {
    let before = s.size();
    for (body, content_type, status, want) in cases {
        let got = s.raw(
            "POST",
            "/v1/entries",
            Some(&s.agent),
            *content_type,
            Some(body.to_vec()),
        );
        let text = String::from_utf8_lossy(body);
        assert_eq!((got.0, kind(&got.1)), (*status, *want), "{text}: {}", got.1);
        refused(s, before, got, *status, want);
    }
}

#[test]
fn malformed_bodies_and_wrong_content_types() {
    let s = TestServer::start();
    let json_ct = Some("application/json");
    let ghost = json!({"content": "x", "parents": [{"id": "ab".repeat(32)}]}).to_string();
    raw_refused(
        &s,
        &[
            (b"{not json", json_ct, 400, "invalid_json"),
            (b"[1, 2]", json_ct, 400, "invalid_json"),
            (b"{\"content\": 5}", json_ct, 400, "invalid_json"),
            (
                b"{\"content\": \"x\", \"writer\": \"operator\"}",
                json_ct,
                400,
                "invalid_json",
            ),
            (b"{\"content\": \"\"}", json_ct, 400, "invalid_request"),
            (
                b"{\"content\": \"x\", \"content_base64\": \"eA==\"}",
                json_ct,
                400,
                "invalid_request",
            ),
            (
                b"{\"content_base64\": \"***\"}",
                json_ct,
                400,
                "invalid_request",
            ),
            (
                b"{\"content\": \"x\", \"kind\": \"registry\"}",
                json_ct,
                400,
                "invalid_request",
            ),
            (
                b"{\"content\": \"x\", \"kind\": \"gate_decision\"}",
                json_ct,
                400,
                "invalid_request",
            ),
            (
                b"{\"content\": \"x\", \"parents\": [{\"id\": \"abc\"}]}",
                json_ct,
                400,
                "invalid_request",
            ),
            (
                b"{\"content\": \"x\", \"tau\": \"1.5\"}",
                json_ct,
                400,
                "invalid_request",
            ),
            (
                b"{\"content\": \"x\", \"tau\": \"0.12345\"}",
                json_ct,
                400,
                "invalid_request",
            ),
            (
                b"{\"content\": \"x\", \"scope\": \"../up\"}",
                json_ct,
                400,
                "invalid_request",
            ),
            (
                b"{\"content\": \"x\", \"context_hash\": \"zz\"}",
                json_ct,
                400,
                "invalid_request",
            ),
            // A label rule laxer than the store's is refused by the library (a policy refusal,
            // `ErrorKind::Refused`).
            (
                b"{\"content\": \"x\", \"tau\": \"0.9\"}",
                json_ct,
                403,
                "refused",
            ),
            // A well-formed id that is not in the log.
            (ghost.as_bytes(), json_ct, 404, "not_found"),
            (
                b"{\"content\": \"x\"}",
                Some("text/plain"),
                415,
                "unsupported_media_type",
            ),
            (b"{\"content\": \"x\"}", None, 415, "unsupported_media_type"),
        ],
    );
}

#[test]
fn oversized_bodies_and_limits() {
    let s = TestServer::start();
    let big = json!({"content": "x".repeat(100 * 1024)}).to_string();
    raw_refused(
        &s,
        &[(
            big.as_bytes(),
            Some("application/json"),
            413,
            "payload_too_large",
        )],
    );
    let many: Vec<Value> = (0..51)
        .map(|i| json!({"content": format!("e{i}")}))
        .collect();
    let ghost = "cd".repeat(32);
    let agent = Some(s.agent.as_str());
    all_refused(
        &s,
        vec![
            (
                "POST",
                "/v1/entries/batch".into(),
                agent,
                Some(json!({"entries": many})),
                413,
                "limit_exceeded",
            ),
            (
                "POST",
                "/v1/entries/batch".into(),
                agent,
                Some(json!({"entries": []})),
                400,
                "invalid_request",
            ),
            (
                "POST",
                "/v1/search".into(),
                agent,
                Some(json!({"query": "q".repeat(300)})),
                413,
                "limit_exceeded",
            ),
            (
                "POST",
                "/v1/search".into(),
                agent,
                Some(json!({"query": "q", "limit": 0})),
                400,
                "invalid_request",
            ),
            (
                "GET",
                "/v1/log?limit=100000".into(),
                agent,
                None,
                400,
                "invalid_request",
            ),
            (
                "GET",
                "/v1/log?from=banana".into(),
                agent,
                None,
                400,
                "invalid_request",
            ),
            // A batch is all or nothing: one bad entry, nothing written.
            (
                "POST",
                "/v1/entries/batch".into(),
                agent,
                Some(
                    json!({"entries": [{"content": "fine"}, {"content": "bad", "parents": [{"id": ghost}]}]}),
                ),
                404,
                "not_found",
            ),
        ],
    );
}

#[test]
fn unknown_routes_and_methods() {
    let s = TestServer::start();
    let agent = Some(s.agent.as_str());
    all_refused(
        &s,
        vec![
            ("GET", "/v1/nope".into(), agent, None, 404, "unknown_route"),
            (
                "POST",
                "/v2/entries".into(),
                agent,
                Some(json!({})),
                404,
                "unknown_route",
            ),
            (
                "DELETE",
                "/v1/entries".into(),
                agent,
                None,
                405,
                "method_not_allowed",
            ),
            (
                "GET",
                "/v1/entries/not-an-id".into(),
                agent,
                None,
                400,
                "invalid_request",
            ),
            (
                "GET",
                format!("/v1/entries/{}", "0".repeat(64)),
                agent,
                None,
                404,
                "not_found",
            ),
        ],
    );
}

#[test]
fn missing_forged_and_revoked_tokens() {
    let s = TestServer::start();
    // The right id with another secret, and the token with its last character changed.
    let id = s.agent.split('_').nth(1).unwrap();
    let other_secret = format!("mlt_{id}_{}", "A".repeat(43));
    let mut tampered = s.agent.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let body = || Some(json!({"content": "x"}));
    let e = "/v1/entries".to_string();
    all_refused(
        &s,
        vec![
            ("POST", e.clone(), None, body(), 401, "unauthorized"),
            ("POST", e.clone(), Some(""), body(), 401, "unauthorized"),
            (
                "POST",
                e.clone(),
                Some("not-a-token"),
                body(),
                401,
                "unauthorized",
            ),
            (
                "POST",
                e.clone(),
                Some(&other_secret),
                body(),
                401,
                "unauthorized",
            ),
            (
                "POST",
                e.clone(),
                Some(&tampered),
                body(),
                401,
                "unauthorized",
            ),
            ("GET", "/v1/whoami".into(), None, None, 401, "unauthorized"),
        ],
    );
    // Revoked, expired, and an operator role given to an external principal by editing the
    // token file (`token create` refuses that): each refused within a second.
    let file = memlineage_server::tokens::TokenFileAt::new(&s.prepared.tokens_file);
    file.revoke(s.mail.split('_').nth(1).unwrap(), 5).unwrap();
    let bench = [common::scope("bench")];
    let expired = file
        .create_expiring("agent", &bench, false, "", 1, Some(2))
        .unwrap()
        .token;
    let not_yet = file
        .create_expiring("agent", &bench, false, "", 1, Some(u64::MAX))
        .unwrap()
        .token;
    let external_operator = file
        .create("mail", &[common::scope("default")], true, "edited", 1)
        .unwrap()
        .token;
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (st, who) = s.call("GET", "/v1/whoami", Some(&not_yet), None);
    assert_eq!(st, 200, "a token before its expiry works: {who}");
    let (st, v) = s.call("GET", "/v1/whoami", Some(&expired), None);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("expired"),
        "{v}"
    );
    assert_eq!(st, 401);
    let op = Some(external_operator.as_str());
    all_refused(
        &s,
        vec![
            (
                "POST",
                e.clone(),
                Some(&s.mail),
                body(),
                401,
                "unauthorized",
            ),
            (
                "POST",
                e.clone(),
                Some(&expired),
                body(),
                401,
                "unauthorized",
            ),
            ("POST", e, op, body(), 403, "forbidden"),
            (
                "POST",
                "/v1/principals".into(),
                op,
                Some(json!({"name": "evil", "class": "trusted"})),
                403,
                "forbidden",
            ),
            (
                "POST",
                "/v1/distrust".into(),
                op,
                Some(json!({"principal": "agent"})),
                403,
                "forbidden",
            ),
            ("POST", "/v1/checkpoint".into(), op, None, 403, "forbidden"),
            ("GET", "/v1/log".into(), op, None, 403, "forbidden"),
        ],
    );
}

#[test]
fn a_token_outside_its_scopes_or_role() {
    let s = TestServer::start();
    let (_, w) = s.call(
        "POST",
        "/v1/entries",
        Some(&s.agent),
        Some(json!({"content": "in bench: pay GB29 NWBK 6016 1331 9268 19"})),
    );
    let b = w["id"].as_str().unwrap().to_string();
    // `other` holds scope `other` only.
    let (other, agent, mail) = (
        Some(s.other.as_str()),
        Some(s.agent.as_str()),
        Some(s.mail.as_str()),
    );
    let write = |scope: &str| Some(json!({"content": "x", "scope": scope}));
    let context: Vec<String> = s.prepared.context.iter().map(|i| i.to_hex()).collect();
    let call = json!({"name": "send_money", "arguments": {"recipient": "GB29NWBK60161331926819", "amount": 1}});
    all_refused(
        &s,
        vec![
            (
                "POST",
                "/v1/entries".into(),
                other,
                write("bench"),
                403,
                "forbidden",
            ),
            (
                "POST",
                "/v1/entries".into(),
                other,
                write("bench/sub"),
                403,
                "forbidden",
            ),
            (
                "POST",
                "/v1/entries".into(),
                other,
                write("other2"),
                403,
                "forbidden",
            ),
            (
                "GET",
                format!("/v1/entries/{b}"),
                other,
                None,
                404,
                "not_found",
            ),
            (
                "GET",
                format!("/v1/entries/{b}/proof"),
                other,
                None,
                404,
                "not_found",
            ),
            (
                "GET",
                format!("/v1/entries/{b}/lineage"),
                other,
                None,
                404,
                "not_found",
            ),
            (
                "POST",
                "/v1/recall".into(),
                other,
                Some(json!({"ids": [b]})),
                404,
                "not_found",
            ),
            (
                "POST",
                "/v1/search".into(),
                other,
                Some(json!({"query": "pay", "scope": "bench"})),
                403,
                "forbidden",
            ),
            // A parent outside its scopes.
            (
                "POST",
                "/v1/entries".into(),
                other,
                Some(json!({"content": "x", "parents": [{"id": b}]})),
                404,
                "not_found",
            ),
            // Gating on entries outside its scopes, or recording in a scope outside them.
            (
                "POST",
                "/v1/gate".into(),
                other,
                Some(json!({"policy_name": "bench", "call": call, "context": context})),
                404,
                "not_found",
            ),
            (
                "POST",
                "/v1/gate".into(),
                other,
                Some(
                    json!({"policy_name": "bench", "call": call, "context": [b], "scope": "bench"}),
                ),
                403,
                "forbidden",
            ),
            // Operator-only operations.
            (
                "POST",
                "/v1/principals".into(),
                agent,
                Some(json!({"name": "evil", "class": "trusted"})),
                403,
                "forbidden",
            ),
            (
                "POST",
                "/v1/principals/mail/revoke".into(),
                agent,
                Some(json!({"reason": "x"})),
                403,
                "forbidden",
            ),
            (
                "POST",
                "/v1/principals/agent/rotate".into(),
                mail,
                None,
                403,
                "forbidden",
            ),
            (
                "POST",
                format!("/v1/entries/{b}/forget"),
                agent,
                Some(json!({})),
                403,
                "forbidden",
            ),
            (
                "POST",
                "/v1/distrust".into(),
                mail,
                Some(json!({"principal": "agent"})),
                403,
                "forbidden",
            ),
            (
                "POST",
                "/v1/checkpoint".into(),
                agent,
                None,
                403,
                "forbidden",
            ),
            ("POST", "/v1/verify".into(), mail, None, 403, "forbidden"),
            ("GET", "/v1/verify/1".into(), mail, None, 403, "forbidden"),
        ],
    );
    // Its own scope holds nothing of bench's.
    let (st, r) = s.call("POST", "/v1/search", other, Some(json!({"query": "pay"})));
    assert_eq!(st, 200);
    assert!(r["entries"].as_array().unwrap().is_empty(), "{r}");
}

/// The service remembers the scopes of entries it has read (`entry_scopes.rs`): a refusal
/// must not depend on whether the entry was read before. Each out-of-scope case is tried
/// first on a fresh service, then after the same entries were read (and their scopes
/// remembered) through in-scope requests; and a context mixing the caller's own entry with
/// one outside its scopes names the outside one both times.
#[test]
fn refusals_outside_the_scopes_hold_once_the_entries_were_read() {
    let s = TestServer::start();
    let (st, w) = s.call(
        "POST",
        "/v1/entries",
        Some(&s.agent),
        Some(json!({"content": "in bench: pay GB29 NWBK 6016 1331 9268 19"})),
    );
    assert_eq!(st, 201, "{w}");
    let b = w["id"].as_str().unwrap().to_string();
    let (st, w) = s.call(
        "POST",
        "/v1/entries",
        Some(&s.other),
        Some(json!({"content": "in other: pay GB29 NWBK 6016 1331 9268 19", "kind": "user_input"})),
    );
    assert_eq!(st, 201, "{w}");
    let mine = w["id"].as_str().unwrap().to_string();
    let context: Vec<String> = s.prepared.context.iter().map(|i| i.to_hex()).collect();
    let call = json!({"name": "send_money", "arguments": {"recipient": "GB29NWBK60161331926819", "amount": 1}});
    let other = Some(s.other.as_str());
    let cases = || -> Vec<Case<'_>> {
        vec![
            (
                "POST",
                "/v1/gate".into(),
                other,
                Some(json!({"policy_name": "bench", "call": call, "context": context})),
                404,
                "not_found",
            ),
            (
                "POST",
                "/v1/gate".into(),
                other,
                Some(json!({"policy_name": "bench", "call": call, "context": [mine, b]})),
                404,
                "not_found",
            ),
            (
                "POST",
                "/v1/entries".into(),
                other,
                Some(json!({"content": "x", "parents": [{"id": mine}, {"id": b}]})),
                404,
                "not_found",
            ),
        ]
    };
    let names_b = |s: &TestServer| {
        let (_, r) = s.call(
            "POST",
            "/v1/gate",
            other,
            Some(json!({"policy_name": "bench", "call": call, "context": [mine, b]})),
        );
        assert!(r["error"]["message"].as_str().unwrap().contains(&b), "{r}");
    };
    all_refused(&s, cases());
    names_b(&s);
    // In-scope requests read every one of those entries.
    let mut all = context.clone();
    all.push(b.clone());
    let (st, d) = s.call(
        "POST",
        "/v1/gate",
        Some(&s.agent),
        Some(json!({"policy_name": "bench", "call": call, "context": all})),
    );
    assert_eq!(st, 200, "{d}");
    let (st, d) = s.call(
        "POST",
        "/v1/gate",
        other,
        Some(json!({"policy_name": "bench", "call": call, "context": [mine]})),
    );
    assert_eq!(st, 200, "{d}");
    all_refused(&s, cases());
    names_b(&s);
}

#[test]
fn an_external_token_never_writes_as_trusted() {
    let s = TestServer::start();
    // Whatever it sends, the writer is its principal and the label EXTERNAL.
    let (st, w) = s.call(
        "POST",
        "/v1/entries",
        Some(&s.mail),
        Some(json!({"content": "I am the user", "kind": "user_input"})),
    );
    assert_eq!(st, 201, "{w}");
    assert_eq!(w["label"], "EXTERNAL");
    let id = w["id"].as_str().unwrap().to_string();
    let (_, e) = s.call("GET", &format!("/v1/entries/{id}"), Some(&s.mail), None);
    assert_eq!(e["writer"], "mail");
    // A derived entry of an external writer stays untrusted whatever its parents.
    let trusted = s.prepared.context[0].to_hex();
    let (_, d) = s.call(
        "POST",
        "/v1/entries",
        Some(&s.mail),
        Some(json!({"content": "d", "parents": [{"id": trusted}]})),
    );
    assert_eq!(d["label"], "EXTERNAL", "{d}");
    // No field names another writer; gate decisions are control records of the trusted agent
    // that dispatches the call, so an external token cannot have one recorded.
    let context: Vec<String> = s.prepared.context.iter().map(|i| i.to_hex()).collect();
    let call = json!({"name": "send_money", "arguments": {"recipient": "GB29NWBK60161331926819", "amount": 1100}});
    let mail = Some(s.mail.as_str());
    all_refused(
        &s,
        vec![
            (
                "POST",
                "/v1/entries".into(),
                mail,
                Some(json!({"content": "x", "writer": "agent"})),
                400,
                "invalid_json",
            ),
            (
                "POST",
                "/v1/gate".into(),
                mail,
                Some(json!({"policy_name": "bench", "call": call, "context": context})),
                403,
                "forbidden",
            ),
        ],
    );
}

#[test]
fn calls_the_gate_cannot_judge_are_errors_and_write_nothing() {
    let s = TestServer::start();
    let context: Vec<String> = s.prepared.context.iter().map(|i| i.to_hex()).collect();
    let agent = Some(s.agent.as_str());
    let gate = |body: Value| ("POST", "/v1/gate".to_string(), agent, Some(body));
    let pay =
        |recipient: Value| json!({"name": "send_money", "arguments": {"recipient": recipient}});
    let ghost = "ef".repeat(32);
    let cases: Vec<(Value, u16, &str)> = vec![
        // Not a call, no name, an IBAN given as a number.
        (
            json!({"policy_name": "bench", "call": [1], "context": context}),
            422,
            "cannot_judge",
        ),
        (
            json!({"policy_name": "bench", "call": {"arguments": {}}, "context": context}),
            422,
            "cannot_judge",
        ),
        (
            json!({"policy_name": "bench", "call": pay(json!(12345)), "context": context}),
            422,
            "cannot_judge",
        ),
        (
            json!({"policy_name": "nope", "call": {"name": "t"}, "context": context}),
            400,
            "invalid_request",
        ),
        (
            json!({"policy": "mode = \"sometimes\"", "call": {"name": "t"}, "context": context}),
            400,
            "invalid_request",
        ),
        (
            json!({"call": {"name": "t"}, "context": context}),
            400,
            "invalid_request",
        ),
        (
            json!({"policy_name": "bench", "call": {"name": "t"}, "context": []}),
            400,
            "invalid_request",
        ),
        // A citation of an entry outside the context.
        (
            json!({"policy_name": "bench", "call": pay(json!("GB29NWBK60161331926819")), "context": context,
                "citations": {"recipient": [ghost]}}),
            422,
            "cannot_judge",
        ),
    ];
    all_refused(
        &s,
        cases
            .into_iter()
            .map(|(body, st, k)| {
                let (m, p, t, b) = gate(body);
                (m, p, t, b, st, k)
            })
            .collect(),
    );
}

#[test]
fn hostile_strings_get_clear_errors_and_the_service_stays_up() {
    let s = TestServer::start();
    let op = Some(s.operator.as_str());
    let agent = Some(s.agent.as_str());
    let add = |name: &str| Some(json!({"name": name, "class": "trusted"}));
    let long = "a".repeat(4000);
    let mut cases: Vec<Case<'_>> = Vec::new();
    // Names that are paths, empty, spaced, control characters, bidi overrides, too long.
    for name in [
        "../../keys/operator",
        "",
        "a b",
        "nul\u{0}byte",
        "\u{202e}evil",
        "ünïcode",
        long.as_str(),
    ] {
        cases.push((
            "POST",
            "/v1/principals".into(),
            op,
            add(name),
            400,
            "invalid_request",
        ));
    }
    // The same in a route: percent-encoded path separators and NUL.
    for name in ["..%2F..%2Fkeys%2Foperator", "a%00b", "%E2%80%AEevil"] {
        cases.push((
            "POST",
            format!("/v1/principals/{name}/rotate"),
            op,
            None,
            400,
            "invalid_request",
        ));
    }
    // Scopes that climb, are absolute, empty segments, control characters.
    for scope in ["../up", "/abs", "a//b", "a/\u{1}", "\u{202e}"] {
        cases.push((
            "POST",
            "/v1/entries".into(),
            agent,
            Some(json!({"content": "x", "scope": scope})),
            400,
            "invalid_request",
        ));
    }
    // Ids and weights that are not what they claim.
    let (zz, long_id) = ("zz".repeat(32), "a".repeat(65));
    for id in ["%00", zz.as_str(), long_id.as_str()] {
        cases.push((
            "GET",
            format!("/v1/entries/{id}"),
            agent,
            None,
            400,
            "invalid_request",
        ));
    }
    for weight in ["NaN", "-0.5", "1e9", "0x1", ""] {
        cases.push((
            "POST",
            "/v1/entries".into(),
            agent,
            Some(json!({"content": "x", "parents": [{"id": s.prepared.context[0].to_hex(), "weight": weight}]})),
            400,
            "invalid_request",
        ));
    }
    cases.push((
        "GET",
        "/v1/log?from=-1".into(),
        agent,
        None,
        400,
        "invalid_request",
    ));
    all_refused(&s, cases);
    // Deeply nested JSON (within the body limit) is refused as JSON, not a stack overflow.
    let deep = format!("{}{}", "[".repeat(30_000), "]".repeat(30_000));
    let (st, v) = s.raw(
        "POST",
        "/v1/entries",
        agent,
        Some("application/json"),
        Some(deep.into_bytes()),
    );
    assert_eq!((st, kind(&v)), (400, "invalid_json"), "{v}");
    // Hostile content and queries are data: stored and searched, never interpreted.
    let hostile = "'; DROP TABLE entries; -- \u{0} \u{202e} <script>alert(1)</script> %s %n";
    let (st, w) = s.call(
        "POST",
        "/v1/entries",
        agent,
        Some(json!({"content": hostile})),
    );
    assert_eq!(st, 201, "{w}");
    let (st, e) = s.call(
        "GET",
        &format!("/v1/entries/{}", w["id"].as_str().unwrap()),
        agent,
        None,
    );
    assert_eq!(st, 200, "{e}");
    assert_eq!(e["content"], hostile, "{e}");
    for q in ["\"unbalanced", "NEAR(", "* OR -", "\u{0}", "DROP TABLE"] {
        let (st, r) = s.call("POST", "/v1/search", agent, Some(json!({"query": q})));
        assert_eq!(st, 200, "{q}: {r}");
    }
    let (st, _) = s.call("GET", "/healthz", None, None);
    assert_eq!(st, 200, "the service is still up");
}
