//! Bad input to the MCP servers over stdio — not JSON, not JSON-RPC, oversized, unknown tools,
//! unexpected arguments — is answered with a clear JSON-RPC error and nothing is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod mcp_support;

use mcp_support::raw_stdio;
use serde_json::{Value, json};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

fn by_id(replies: &[Value], id: Value) -> &Value {
    replies
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no reply with id {id}: {replies:#?}"))
}

fn input(tail: &[String]) -> Vec<u8> {
    let mut lines = vec![
        "this is not json".to_string(),
        r#"{"jsonrpc":"2.0","id":7,"method":42}"#.to_string(),
        format!(
            r#"{{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
            "a".repeat(5000)
        ),
        INIT.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
    ];
    lines.extend_from_slice(tail);
    let mut out = lines.join("\n").into_bytes();
    out.push(b'\n');
    out
}

fn check_transport_errors(replies: &[Value]) {
    let parse = replies
        .iter()
        .find(|r| r["error"]["code"] == -32700)
        .unwrap_or_else(|| panic!("no parse error: {replies:#?}"));
    assert_eq!(parse["id"], Value::Null);
    assert!(
        parse["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
    let invalid = by_id(replies, json!(7));
    assert_eq!(invalid["error"]["code"], -32600, "{invalid:#}");
    let oversized = replies
        .iter()
        .find(|r| {
            r["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("over this server's limit"))
        })
        .unwrap_or_else(|| panic!("no size error: {replies:#?}"));
    assert_eq!(oversized["error"]["code"], -32600);
    assert!(
        replies.iter().all(|r| r["id"] != json!(8)),
        "the oversized request was not read"
    );
    assert!(
        by_id(replies, json!(1))["result"]["serverInfo"].is_object(),
        "{replies:#?}"
    );
}

#[test]
fn the_memory_server_answers_bad_input_and_writes_nothing() {
    let store = common::Store::init();
    let size = store.size();
    let tail = vec![
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_everything","arguments":{}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"remember","arguments":{"text":"x","writer":"operator"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"forget","arguments":{"id":"abc","reason":"r"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"recall","arguments":{"query":"x","limit":"many"}}}"#.to_string(),
    ];
    let replies = raw_stdio(
        store.cmd(&["mcp", "serve", "--max-message-bytes", "1000"]),
        &input(&tail),
    );
    check_transport_errors(&replies);
    let unknown = by_id(&replies, json!(2));
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown tool"),
        "{unknown:#}"
    );
    for (id, want) in [
        (3, "unexpected argument `writer`"),
        (4, "not an entry id"),
        (5, "must be an integer"),
    ] {
        let r = by_id(&replies, json!(id));
        assert_eq!(r["result"]["isError"], true, "{r:#}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(want), "{want:?} not in {text:?}");
    }
    assert_eq!(store.size(), size, "nothing was written");
}

#[test]
fn the_gateway_answers_bad_input_and_writes_nothing() {
    let store = common::Store::init();
    let config = store.dir.path().join("gw.toml");
    // The downstream is never started: bad input is answered before any call reaches it.
    std::fs::write(
        &config,
        "[servers.bank]\ncommand = \"/nonexistent/bank-server\"\nprincipal = \"web\"\n",
    )
    .unwrap();
    let size = store.size();
    let tail = vec![
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bank_send_money","arguments":{}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bank__send_money","arguments":{}}}"#.to_string(),
    ];
    let replies = raw_stdio(
        store.cmd(&[
            "mcp",
            "gateway",
            "--config",
            config.to_str().unwrap(),
            "--max-message-bytes",
            "1000",
        ]),
        &input(&tail),
    );
    check_transport_errors(&replies);
    let unknown = by_id(&replies, json!(2));
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown tool"),
        "{unknown:#}"
    );
    let failed = by_id(&replies, json!(3));
    assert_eq!(failed["result"]["isError"], true, "{failed:#}");
    assert!(
        failed["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("cannot start"),
        "{failed:#}"
    );
    assert_eq!(store.size(), size, "nothing was written");
}

#[test]
fn a_bad_gateway_configuration_is_refused_with_its_line() {
    let store = common::Store::init();
    let config = store.dir.path().join("gw.toml");
    std::fs::write(
        &config,
        "[servers.bank]\ncommand = \"x\"\nprincipal = \"web\"\ncolour = \"red\"\n",
    )
    .unwrap();
    let r = store.run(&["mcp", "gateway", "--config", config.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stderr.contains("line 4"), "{}", r.stderr);
    std::fs::write(
        &config,
        "[servers.bank]\ncommand = \"x\"\nprincipal = \"nobody\"\n",
    )
    .unwrap();
    let r = store.run(&["mcp", "gateway", "--config", config.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(
        r.stderr.contains("`nobody` is not registered"),
        "{}",
        r.stderr
    );
    let r = store.run(&["mcp", "serve", "--as", "nobody"]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(
        r.stderr.contains("`nobody` is not registered"),
        "{}",
        r.stderr
    );
}

/// One HTTP/1.1 POST to `/mcp` on `addr`; returns the status code and the body.
fn post(addr: &str, body: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn over_http_oversized_and_malformed_bodies_are_refused_and_nothing_written() {
    let store = common::Store::init();
    let size = store.size();
    let cmd = store.cmd(&[
        "mcp",
        "serve",
        "--http",
        "127.0.0.1:0",
        "--max-message-bytes",
        "1000",
    ]);
    let (_server, line) = mcp_support::start_and_wait(cmd, "Streamable HTTP at ");
    let url = line.rsplit("at ").next().unwrap().trim();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"pad":"{}"}}}}"#,
        "a".repeat(5000)
    );
    let (status, _) = post(&addr, big.as_bytes());
    assert_eq!(status, 413, "an oversized body is refused");
    let (status, body) = post(&addr, b"this is not json");
    assert!((400..500).contains(&status), "{status} {body}");
    let (status, body) = post(&addr, br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"text":"x"}}}"#);
    assert!(
        (400..500).contains(&status),
        "a call outside a session is refused: {status} {body}"
    );
    assert_eq!(store.size(), size, "nothing was written");
}
