//! The value index of a store on disk (issue 19): a store made before the index existed is
//! refused by the gate until it is opened for writing, which fills the index from the stored
//! contents; `verify` reports an index that is not filled, and a row removed behind the
//! program's back.

mod common;

use common::{p, setup_with};
use memlineage::{
    ErrorKind, GateRequest, Memory, OpenMode, SqliteStore, StoreLocation, WriteRequest,
};
use memlineage_core::entry::EntryKind;
use memlineage_core::gate::{Decision, Policy, ToolCall};
use serde_json::json;

const ATTACKER: &str = "GB33 BUKB 2020 1555 5555 55";

fn pay() -> ToolCall {
    let serde_json::Value::Object(arguments) = json!({"iban": ATTACKER}) else {
        unreachable!()
    };
    ToolCall::new("pay", arguments)
}

fn policy() -> Policy {
    Policy::parse("[tools.pay.params]\niban = { type = \"iban\" }\n").unwrap()
}

fn raw(path: &std::path::Path, sql: &str) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(sql)
        .unwrap();
}

fn problems(location: &StoreLocation) -> Vec<String> {
    let mem = Memory::open_for_audit_at(location).unwrap();
    let report = mem.verify(&mut |_, _| {}).unwrap();
    report.problems.iter().map(|p| p.reason.clone()).collect()
}

#[test]
fn an_older_store_is_filled_on_open_and_refused_read_only_until_then() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let location = format!("sqlite:{}", file.display())
        .parse::<StoreLocation>()
        .unwrap();
    let memo = {
        let mem = setup_with(SqliteStore::open(&file).unwrap());
        mem.write(WriteRequest::new(
            &p("email"),
            EntryKind::ToolOutput,
            format!("New account: {ATTACKER}"),
        ))
        .unwrap();
        let memo = mem
            .write(WriteRequest::new(
                &p("agent"),
                EntryKind::Observation,
                format!("Rent: {ATTACKER}"),
            ))
            .unwrap()
            .id;
        mem.checkpoint().unwrap();
        memo
    };
    assert!(problems(&location).is_empty(), "{:?}", problems(&location));
    // As a store made before the index existed.
    raw(
        &file,
        "DELETE FROM value_keys; DELETE FROM value_keys_tail; \
         DELETE FROM settings WHERE key = 'value_index';",
    );
    refused_until_filled(&location, memo);
}

/// A store whose index is not marked complete: `verify` says so; read-only, the gate refuses
/// to decide (fail closed), naming why; opened for writing, the index is filled, the laundering
/// note `memo` is denied and the audit is clean.
fn refused_until_filled(location: &StoreLocation, memo: memlineage_core::EntryId) {
    let found = problems(location);
    assert!(
        found.iter().any(|m| m.contains("not marked complete")),
        "{found:?}"
    );
    let ro = Memory::open(location.open(OpenMode::ReadOnly).unwrap()).unwrap();
    let req = GateRequest::new(pay(), vec![memo], &p("agent"));
    let err = ro.gate_unrecorded(&policy(), &req).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Integrity, "{err}");
    assert!(err.to_string().contains("value index"), "{err}");
    drop(ro);
    let mem = Memory::open_at(location).unwrap();
    let out = mem.gate_unrecorded(&policy(), &req).unwrap();
    assert_eq!(out.decision.decision, Decision::Deny);
    drop(mem);
    assert!(problems(location).is_empty(), "{:?}", problems(location));
}

/// A store indexed under the first key version read an IBAN written in Arabic-Indic digits as
/// look-alike letters and left it out; its next writable open indexes it again.
#[test]
fn a_store_indexed_under_older_keys_is_filled_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let location = format!("sqlite:{}", file.display())
        .parse::<StoreLocation>()
        .unwrap();
    let (mail, memo) = {
        let mem = setup_with(SqliteStore::open(&file).unwrap());
        let mail = mem
            .write(WriteRequest::new(
                &p("email"),
                EntryKind::ToolOutput,
                "New account: GB33 BUKB \u{662}\u{660}\u{662}\u{660} \u{661}\u{665}\u{665}\u{665} \
             \u{665}\u{665}\u{665}\u{665} \u{665}\u{665}",
            ))
            .unwrap()
            .index;
        let memo = mem
            .write(WriteRequest::new(
                &p("agent"),
                EntryKind::Observation,
                format!("Rent: {ATTACKER}"),
            ))
            .unwrap()
            .id;
        mem.checkpoint().unwrap();
        (mail, memo)
    };
    // As version 1 left it: the e-mail indexed under nothing.
    raw(
        &file,
        &format!(
            "DELETE FROM value_keys WHERE idx = {mail}; \
             DELETE FROM value_keys_tail WHERE idx = {mail}; \
             UPDATE settings SET value = '1' WHERE key = 'value_index';"
        ),
    );
    refused_until_filled(&location, memo);
}

#[test]
fn verify_reports_an_index_row_removed_behind_the_programs_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let location = format!("sqlite:{}", file.display())
        .parse::<StoreLocation>()
        .unwrap();
    let mail = {
        let mem = setup_with(SqliteStore::open(&file).unwrap());
        mem.write(WriteRequest::new(
            &p("email"),
            EntryKind::ToolOutput,
            format!("New account: {ATTACKER}"),
        ))
        .unwrap()
    };
    raw(
        &file,
        &format!(
            "DELETE FROM value_keys WHERE idx = {0}; DELETE FROM value_keys_tail WHERE idx = {0};",
            mail.index
        ),
    );
    let found = problems(&location);
    assert!(
        found
            .iter()
            .any(|m| m.contains("value index lacks the key")),
        "{found:?}"
    );
}
