//! Shared helpers for the MCP tests: the Python interpreter with the official MCP SDK, the peer
//! scripts in `tests/mcp/`, a store with the banking principals, and gateway configurations.
//!
//! The tests that need Python and the PyPI package `mcp` skip (with a message) when they are
//! missing, and fail when `CI=1`: `.ci/run` installs them in a virtual environment and points
//! `MEMLINEAGE_TEST_PYTHON` at its interpreter.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use crate::common::Store;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Python interpreter that has the MCP SDK, or `None` (the test then skips; under `CI=1`
/// it fails).
pub fn python() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os("MEMLINEAGE_TEST_PYTHON") {
        Some(p) if !p.is_empty() => vec![PathBuf::from(p)],
        _ => vec![PathBuf::from("python3")],
    };
    for py in candidates {
        let ok = Command::new(&py)
            .args(["-c", "import mcp, mcp.server.mcpserver, mcp.client.stdio"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(py);
        }
    }
    let msg = "Python with the MCP SDK (PyPI `mcp`) is not available: set MEMLINEAGE_TEST_PYTHON to an interpreter that has it (see .ci/run)";
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false") {
        panic!("{msg}");
    }
    eprintln!("skipped: {msg}");
    None
}

/// A peer script in `tests/mcp/`.
pub fn peer(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(name)
}

/// A store with the banking principals: `user` and `bank` trusted, `senders` external.
pub fn bank_store() -> Store {
    let s = Store::init();
    for (name, class) in [
        ("user", "trusted"),
        ("bank", "trusted"),
        ("senders", "external"),
    ] {
        s.run(&["principal", "add", name, "--class", class]).ok();
    }
    s
}

/// The gate policy of the banking tests (as docs/gate.md's worked example).
pub const POLICY: &str = r#"
[tools.send_money.params]
recipient = { type = "iban",   require = "DERIVED_TRUSTED", unjustified = "deny" }
amount    = { type = "amount", require = "DERIVED_TRUSTED", unjustified = "allow" }
"#;

/// Writes the policy and a gateway configuration for the bank server into the store's
/// directory; returns the configuration's path. `extra` is appended to the `[servers.bank]`
/// table.
pub fn bank_config(store: &Store, py: &Path, file: &str, extra: &str) -> PathBuf {
    bank_config_with(store, py, file, POLICY, extra, "")
}

/// [`bank_config`] with `policy` as the bank's gate policy and `tools` (more
/// `[servers.bank.tools.TOOL]` tables) at the end of the configuration.
pub fn bank_config_with(
    store: &Store,
    py: &Path,
    file: &str,
    policy: &str,
    extra: &str,
    tools: &str,
) -> PathBuf {
    let dir = store.dir.path();
    std::fs::write(dir.join("policy.toml"), policy).unwrap();
    let config = format!(
        r#"
[gateway]
user = "user"

[servers.bank]
command = {py:?}
args = [{script:?}]
env = {{ BANK_LOG = {log:?} }}
principal = "bank"
policy = "policy.toml"
{extra}

[servers.bank.tools.get_most_recent_transactions]
fields = {{ "transactions[].subject" = "senders", "transactions[].sender" = "senders" }}

{tools}
"#,
        py = py.display().to_string(),
        script = peer("bank_server.py").display().to_string(),
        log = bank_log(store).display().to_string(),
    );
    let path = dir.join(file);
    std::fs::write(&path, config).unwrap();
    path
}

/// The file the bank server appends its events to.
pub fn bank_log(store: &Store) -> PathBuf {
    store.dir.path().join("bank-events.jsonl")
}

/// The bank's events so far.
pub fn bank_events(store: &Store) -> Vec<Value> {
    std::fs::read_to_string(bank_log(store))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The command line of `memlineage` against `store`.
pub fn memlineage_args(store: &Store, args: &[&str]) -> Vec<String> {
    let mut v = vec![
        crate::common::bin().to_string(),
        "--store".to_string(),
        store.db().display().to_string(),
    ];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

/// Runs the SDK client `client.py` with `plan` (its server is `server`: a `command` list or a
/// `url`); returns one JSON value per step.
pub fn run_client(py: &Path, store: &Store, server: Value, steps: Value) -> Vec<Value> {
    let mut plan = server;
    plan["steps"] = steps;
    let path = store.dir.path().join(format!(
        "plan-{}.json",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::write(&path, plan.to_string()).unwrap();
    let out = Command::new(py)
        .arg(peer("client.py"))
        .arg(&path)
        .env("MEMLINEAGE_STORE", store.db())
        .env_remove("RUST_LOG")
        .current_dir(store.dir.path())
        .output()
        .expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the client failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(
        !stderr.contains("panicked"),
        "a process panicked:\n{stderr}"
    );
    let results: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        results.len(),
        plan["steps"].as_array().unwrap().len(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    results
}

/// The gateway over stdio, as `client.py` starts it.
pub fn gateway_server(store: &Store, config: &Path, session: Option<&str>) -> Value {
    let mut args = vec!["mcp", "gateway", "--config"];
    let c = config.display().to_string();
    args.push(&c);
    if let Some(s) = session {
        args.push("--session");
        args.push(s);
    }
    serde_json::json!({ "command": memlineage_args(store, &args) })
}

/// The log's entries (`log --json`), in order.
pub fn entries(store: &Store) -> Vec<Value> {
    store.json(&["log", "--limit", "100000"])["entries"]
        .as_array()
        .unwrap()
        .clone()
}

/// One entry in full (`get --json`).
pub fn entry(store: &Store, id: &str) -> Value {
    store.json(&["get", id])
}

/// A child process that is killed when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` with stderr piped and waits for a stderr line containing `marker`; returns the
/// process and that line.
pub fn start_and_wait(mut cmd: Command, marker: &str) -> (Guard, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let wanted = marker.to_string();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !sent && line.contains(&wanted) {
                let _ = tx.send(line);
                sent = true;
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("the process did not print {marker:?} within 60 s"));
    (Guard(child), line)
}

/// A free TCP port on the loopback interface.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts connections on `port`.
pub fn wait_for_port(port: u16) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "nothing listens on port {port} after 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Sends `input` to a stdio server started by `cmd`, closes its stdin, and returns its stdout
/// lines parsed as JSON.
pub fn raw_stdio(mut cmd: Command, input: &[u8]) -> Vec<Value> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}\n{stderr}"))
        })
        .collect()
}
