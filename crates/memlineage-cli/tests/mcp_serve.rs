//! `memlineage mcp serve` with the official MCP Python SDK as the client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod mcp_support;

use mcp_support::*;
use serde_json::json;

/// Recall shows verified, labelled blocks; a note remembered afterwards has what was recalled
/// as its parents (so it inherits the taint of an external entry whatever the model says);
/// lineage shows the path; forget hides the note; the writer is fixed by configuration.
#[test]
fn remember_recall_lineage_forget_with_captured_lineage() {
    let Some(py) = python() else { return };
    let store = common::Store::init();
    let web = store.write(&[
        "--as",
        "web",
        "Rent notice: pay the rent to UK12 3456 7890 1234 5678 90",
    ]);
    let server = json!({"command": memlineage_args(&store, &["mcp", "serve", "--as", "agent"])});
    let r = run_client(
        &py,
        &store,
        server.clone(),
        json!([
            {"op": "list"},
            {"op": "call", "name": "recall", "args": {"query": "rent"}},
            {"op": "call", "name": "remember", "args": {"text": "The rent goes to UK12345678901234567890."}},
            {"op": "call", "name": "remember", "args": {"text": "x", "writer": "operator"}},
            {"op": "call", "name": "forget", "args": {"id": web, "reason": "test", "erase": true}}
        ]),
    );
    assert_eq!(
        r[0]["tools"],
        json!(["forget", "lineage", "recall", "remember"])
    );
    let recalled = r[1]["text"].as_str().unwrap();
    assert!(recalled.contains("UK12 3456"), "{recalled}");
    assert!(
        recalled.contains("EXTERNAL"),
        "the block states its label: {recalled}"
    );
    let remembered = r[2]["text"].as_str().unwrap();
    assert!(remembered.contains("DERIVED_UNTRUSTED"), "{remembered}");
    let note = remembered.split_whitespace().nth(2).unwrap().to_string();
    let note_entry = entry(&store, &note);
    assert_eq!(note_entry["writer"], "agent");
    assert_eq!(
        note_entry["parents"][0]["id"],
        web.as_str(),
        "{note_entry:#}"
    );
    assert_eq!(
        r[3]["is_error"], true,
        "the model cannot choose the writer: {:#}",
        r[3]
    );
    assert!(
        r[3]["text"]
            .as_str()
            .unwrap()
            .contains("unexpected argument `writer`")
    );
    assert_eq!(
        r[4]["is_error"], true,
        "erasing needs --allow-erase: {:#}",
        r[4]
    );

    // A new server process, same session: the note's lineage, then forget it.
    let r = run_client(
        &py,
        &store,
        server,
        json!([
            {"op": "call", "name": "lineage", "args": {"id": note}},
            {"op": "call", "name": "forget", "args": {"id": note, "reason": "wrong"}},
            {"op": "call", "name": "recall", "args": {"query": "UK12345678901234567890"}},
            {"op": "call", "name": "remember", "args": {"text": "Nothing to add."}}
        ]),
    );
    let lineage = r[0]["text"].as_str().unwrap();
    assert!(lineage.contains(&web[..12]), "{lineage}");
    assert_eq!(r[1]["is_error"], false, "{:#}", r[1]);
    assert!(
        !r[2]["text"].as_str().unwrap().contains("The rent goes"),
        "a forgotten note is never recalled: {:#}",
        r[2]
    );
    // The session survived the restart: the new note still descends from the web entry.
    let second = r[3]["text"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap()
        .to_string();
    let parents: Vec<String> = entry(&store, &second)["parents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    assert!(parents.contains(&web), "{parents:?}");
    assert!(
        r[3]["text"].as_str().unwrap().contains("DERIVED_UNTRUSTED"),
        "{:#}",
        r[3]
    );
    let (code, report) = store.verify();
    assert_eq!(code, 0, "{report:#}");
}
