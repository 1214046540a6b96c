//! `memlineage bench --service`: the service's throughput and latency (writes and gate
//! decisions per second over HTTP, from the loopback load generator) beside the same
//! operations in process, on one prepared store, in one run (`docs/performance.md`,
//! "Service"). The service is this binary's `serve`, run as a child process and stopped with
//! SIGTERM at the end.

use crate::output::{CliError, Outcome};
use memlineage_server::bench::{
    Prepared, ServiceRow, capacity_rows, copy_store, in_process, over_http_blocking, prepare,
};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Runs the service benchmark, the load generator keeping each of `levels` connections open
/// in turn (both operations at each level; each operation's capacity row is its fastest level
/// within the p99 bound).
pub fn run(
    quick: bool,
    levels: &[usize],
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome, CliError> {
    let dir = tempfile::tempdir()
        .map_err(|e| CliError::failed(format!("cannot make a temporary directory: {e}")))?;
    progress("preparing the store");
    let p = prepare(dir.path()).map_err(CliError::failed)?;
    let seconds = if quick { 1.0 } else { 3.0 };
    progress("in process: durable writes and gate decisions");
    let mut rows = in_process(&p, seconds, 2).map_err(CliError::failed)?;
    let requests = if quick { 30_000 } else { 150_000 };
    let mut measured = Vec::new();
    for &connections in levels {
        // Every level on a fresh copy of the store as the in-process rows left it.
        let level_dir = dir.path().join(format!("level-{connections}"));
        let level = copy_store(&p, &level_dir).map_err(CliError::failed)?;
        progress(&format!(
            "over HTTP at {connections} connections: starting `memlineage serve`"
        ));
        let mut child = Server::start(&level, &level_dir)?;
        progress(&format!(
            "over HTTP at {connections} connections: writes, then gate decisions"
        ));
        let http = over_http_blocking(
            &level,
            child.addr,
            connections,
            requests,
            Duration::from_secs(if quick { 10 } else { 30 }),
        );
        let shutdown = child.stop();
        let mut http = http.map_err(CliError::failed)?;
        // A graceful shutdown indexes the text the load left pending (docs/service.md).
        for row in &mut http {
            row.note.push_str(&format!(
                "; the service's graceful shutdown after this level took {:.2} s; {}",
                shutdown.as_secs_f64(),
                built_with()
            ));
        }
        measured.extend(http);
        // Each copy takes as much disk as the store; the next level needs none of it.
        let _ = std::fs::remove_dir_all(&level_dir);
    }
    rows.extend(measured.iter().cloned());
    rows.extend(capacity_rows(&measured));
    let json = serde_json::to_value(&rows)
        .map_err(|e| CliError::failed(format!("encoding the rows: {e}")))?;
    Ok(Outcome::ok(json, render(&rows)))
}

/// The child `memlineage serve`.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(p: &Prepared, dir: &std::path::Path) -> Result<Server, CliError> {
        let exe = std::env::current_exe()
            .map_err(|e| CliError::failed(format!("cannot find this program: {e}")))?;
        let log = std::fs::File::create(dir.join("serve.log"))
            .map_err(|e| CliError::failed(format!("cannot create the service log: {e}")))?;
        let mut child = Command::new(exe)
            .arg("--store")
            .arg(&p.db)
            .args(["--json", "serve", "--listen", "127.0.0.1:0", "--policy"])
            .arg(format!("bench={}", p.policy_file.display()))
            .arg("--tokens")
            .arg(&p.tokens_file)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| CliError::failed(format!("cannot start `memlineage serve`: {e}")))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| CliError::failed("no stdout from `memlineage serve`"))?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| CliError::failed(format!("reading `memlineage serve`: {e}")))?;
        let addr = serde_json::from_str::<serde_json::Value>(&line)
            .ok()
            .and_then(|v| v["listening"].as_str().and_then(|a| a.parse().ok()));
        match addr {
            Some(addr) => Ok(Server { child, addr }),
            None => {
                let _ = child.kill();
                Err(CliError::failed(format!(
                    "`memlineage serve` did not start (it said {line:?}; see {})",
                    dir.join("serve.log").display()
                )))
            }
        }
    }

    /// SIGTERM, then wait (the service shuts down gracefully); how long that took.
    fn stop(&mut self) -> Duration {
        let started = std::time::Instant::now();
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let _ = self.child.wait();
        started.elapsed()
    }
}

/// The Cargo profile this binary was built with (`build.rs`).
const BUILD_PROFILE: &str = env!("MEMLINEAGE_BUILD_PROFILE");

/// The profile the service's figures in docs/performance.md are measured with.
const MEASURED_PROFILE: &str = "dist";

/// Which build served the load, in words.
fn built_with() -> String {
    format!("the service binary built with the `{BUILD_PROFILE}` profile")
}

/// A line saying the figures of another build are not those of docs/performance.md, or none.
fn build_hint(profile: &str) -> Option<String> {
    (profile != MEASURED_PROFILE).then(|| {
        format!(
            "note: this binary is a `{profile}` build; the service's figures in docs/performance.md are for the `{MEASURED_PROFILE}` profile (fat LTO, ≈ 8 % less CPU per request): cargo build --profile {MEASURED_PROFILE} -p memlineage-cli"
        )
    })
}

fn render(rows: &[ServiceRow]) -> String {
    let mut t = format!("{}; {}\n", memlineage_bench::sys::machine(), built_with());
    if let Some(hint) = build_hint(BUILD_PROFILE) {
        t.push_str(&hint);
        t.push('\n');
    }
    let _ = writeln!(
        t,
        "{:<22} {:>6} {:>12} {:>10} {:>10} {:>9} {:>7}  {:<28} met",
        "row", "conns", "per second", "p50", "p99", "ok", "failed", "target"
    );
    for r in rows {
        let _ = writeln!(
            t,
            "{:<22} {:>6} {:>12.0} {:>8.2}ms {:>8.2}ms {:>9} {:>7}  {:<28} {}",
            r.name,
            r.connections.map(|c| c.to_string()).unwrap_or_default(),
            r.per_second,
            r.p50_ns as f64 / 1e6,
            r.p99_ns as f64 / 1e6,
            r.ok,
            r.failed,
            r.target.as_deref().unwrap_or(""),
            match r.meets_target {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "",
            }
        );
    }
    for r in rows {
        let _ = writeln!(t, "{}: {}", r.name, r.note);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_build_other_than_the_measured_one_gets_the_hint() {
        assert!(build_hint(MEASURED_PROFILE).is_none());
        let hint = build_hint("release").expect("a hint");
        assert!(hint.contains("`release` build") && hint.contains("--profile dist"));
        // build.rs found the profile in Cargo's layout of this very build.
        assert_ne!(BUILD_PROFILE, "unknown");
    }
}
