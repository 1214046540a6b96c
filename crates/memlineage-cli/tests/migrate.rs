//! `memlineage migrate --from LOCATION --to LOCATION` (docs/cli.md, docs/store.md "Moving a log
//! between stores"): the copy holds the same log (size, root, signed checkpoint, forgotten and
//! erased entries, raised labels) and verifies; a damaged source or an occupied destination is
//! refused. SQLite to SQLite always; SQLite to PostgreSQL and back with the `postgres` feature
//! (a throwaway cluster, `memlineage-pgtest`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Run, Store, bin};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// A store with a varied log: notes by two writers, a derived entry, a forgotten and an erased
/// entry, a distrusted writer (raised labels), and a signed checkpoint.
fn varied_store() -> Store {
    let s = Store::init();
    s.json(&["principal", "add", "alice", "--class", "trusted"]);
    let a = s.write(&["--as", "alice", "the rent is due on the first"]);
    let w = s.write(&["--as", "web", "pay the rent to account 1234"]);
    s.write(&[
        "--as",
        "agent",
        "--parent",
        &format!("{w}:0.6"),
        "--parent",
        &format!("{a}:0.4"),
        "rent goes to account 1234",
    ]);
    let gone = s.write(&["--as", "alice", "a note to forget"]);
    let erased = s.write(&["--as", "alice", "a secret to erase"]);
    s.json(&["forget", &gone, "--reason", "obsolete"]);
    s.json(&["forget", &erased, "--erase", "--reason", "secret"]);
    s.json(&["distrust", "--principal", "web", "--reason", "compromised"]);
    s.json(&["checkpoint"]);
    s
}

/// `memlineage` with `--store location --keys keys` and `args`.
fn run_at(location: &str, keys: &Path, args: &[&str]) -> Run {
    let out = Command::new(bin())
        .args(["--store", location, "--keys"])
        .arg(keys)
        .args(args)
        .env_remove("MEMLINEAGE_STORE")
        .env_remove("MEMLINEAGE_KEYS")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Run::from_output(out)
}

fn json_at(location: &str, keys: &Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    run_at(location, keys, &a).ok().json()
}

/// What must be equal in two stores holding the same log.
fn fingerprint(location: &str, keys: &Path) -> (Value, Value, Value) {
    let verify = json_at(location, keys, &["verify"]);
    assert_eq!(verify["ok"], true, "{verify:#}");
    let log = json_at(location, keys, &["log", "--limit", "1000"]);
    let hits = json_at(location, keys, &["search", "rent account"]);
    (
        serde_json::json!([verify["entries"], verify["root"], verify["checkpoint_size"]]),
        log["entries"].clone(),
        hits["entries"].clone(),
    )
}

/// Migrates `from` to `to` and checks the report.
fn migrate(from: &str, to: &str, keys: &Path, entries: u64) {
    let report = json_at(from, keys, &["migrate", "--to", to]);
    assert_eq!(report["entries"], entries, "{report:#}");
    assert!(report["signatures_verified"].as_u64().unwrap() >= 2 * entries);
}

#[test]
fn sqlite_to_sqlite_keeps_the_same_log() {
    let s = varied_store();
    let from = format!("sqlite:{}", s.db().display());
    let to = format!("sqlite:{}", s.dir.path().join("copy/store.db").display());
    let size = s.size();
    migrate(&from, &to, &s.keys(), size);
    assert_eq!(fingerprint(&from, &s.keys()), fingerprint(&to, &s.keys()));
    // The copy takes new writes.
    json_at(
        &to,
        &s.keys(),
        &["write", "--as", "alice", "after the move"],
    );
}

#[test]
fn an_occupied_destination_or_a_damaged_source_is_refused() {
    let s = varied_store();
    let from = format!("sqlite:{}", s.db().display());
    let other = Store::init();
    let occupied = format!("sqlite:{}", other.db().display());
    let r = run_at(&from, &s.keys(), &["migrate", "--to", &occupied]).code(1);
    assert!(r.stderr.contains("already"), "{r:#?}");
    assert_eq!(
        other.size(),
        json_at(&occupied, &other.keys(), &["verify"])["entries"]
    );

    // Content edited behind the program's back: the source does not verify, nothing is copied.
    let log = s.json(&["log", "--limit", "1000"]);
    let rent = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["preview"]
                .as_str()
                .unwrap()
                .starts_with("the rent is due")
        })
        .unwrap()["index"]
        .as_i64()
        .unwrap();
    s.sqlite()
        .execute(
            "UPDATE content SET bytes = CAST('forged' AS BLOB) WHERE idx = ?1",
            [rent],
        )
        .unwrap();
    let to = s.dir.path().join("never.db");
    let r = run_at(
        &from,
        &s.keys(),
        &["migrate", "--to", &format!("sqlite:{}", to.display())],
    )
    .code(1);
    assert!(r.stderr.contains("does not verify"), "{r:#?}");
}

#[cfg(feature = "postgres")]
#[test]
fn sqlite_to_postgres_and_back() {
    let Some(cluster) = memlineage_pgtest::shared() else {
        return;
    };
    let s = varied_store();
    let keys = s.keys();
    let from = format!("sqlite:{}", s.db().display());
    let size = s.size();
    let pg = cluster.database();
    migrate(&from, &pg, &keys, size);
    let original = fingerprint(&from, &keys);
    assert_eq!(original, fingerprint(&pg, &keys));
    // The PostgreSQL store takes writes, and the log comes back to a file intact.
    json_at(
        &pg,
        &keys,
        &["write", "--as", "alice", "written in PostgreSQL"],
    );
    json_at(&pg, &keys, &["checkpoint"]);
    let back = format!("sqlite:{}", s.dir.path().join("back.db").display());
    migrate(&pg, &back, &keys, size + 1);
    assert_eq!(fingerprint(&pg, &keys), fingerprint(&back, &keys));
    // A database that already holds a store is refused.
    let r = run_at(&from, &keys, &["migrate", "--to", &pg]).code(1);
    assert!(r.stderr.contains("already"), "{r:#?}");
}
