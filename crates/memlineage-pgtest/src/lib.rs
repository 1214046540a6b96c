//! A throwaway PostgreSQL cluster for tests: `initdb` into a temporary directory, `pg_ctl
//! start` on a free loopback port (TCP only, trust authentication, no Unix socket), and a fresh
//! database per test ([`Cluster::database`]).
//!
//! - [`shared`] starts one cluster per test binary, on first use, and every test of the binary
//!   gets its own database in it: a cluster starts in about a second, a database in a fraction
//!   of that. A watchdog process stops the cluster and removes its directory when the test
//!   binary exits (statics are never dropped), however it exits.
//! - [`Cluster::start`] starts a private one, for tests that stop or restart the server.
//!
//! The server binaries are found in `$MEMLINEAGE_PG_BIN`, then in `pg_config --bindir`, then
//! in Debian's `/usr/lib/postgresql/VERSION/bin` (the newest), then on `PATH`. PostgreSQL
//! refuses to run as root: as root, the cluster runs as the `postgres` user (which Debian's
//! package creates) or else `nobody`, through `runuser`, with the directory owned by it.
//!
//! When no server binaries are found, [`shared`] and [`Cluster::start`] return `None` after
//! printing why (the tests then pass without running), except when the environment variable
//! `CI` is set: then they panic, so that CI never passes a PostgreSQL test it did not run.
#![forbid(unsafe_code)]

use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A running cluster.
pub struct Cluster {
    bin: PathBuf,
    /// The temporary directory holding the data directory and the server log.
    root: PathBuf,
    port: u16,
    /// The user the server runs as, when this process is root.
    run_as: Option<String>,
    databases: AtomicU32,
    /// Removes the directory when a private cluster is dropped (`None` for the shared one,
    /// whose watchdog removes it).
    _dir: Option<tempfile::TempDir>,
}

/// The cluster shared by the tests of this binary, started on first use; `None` (with a
/// message on stderr) when PostgreSQL is not installed and `CI` is not set.
pub fn shared() -> Option<&'static Cluster> {
    static SHARED: OnceLock<Option<Cluster>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let cluster = Cluster::start_with(true)?;
            cluster.watch_parent();
            Some(cluster)
        })
        .as_ref()
}

/// Whether PostgreSQL tests must run (the environment variable `CI` is set).
pub fn required() -> bool {
    std::env::var_os("CI").is_some()
}

impl Cluster {
    /// A private cluster, stopped and removed when dropped; `None` (with a message) when
    /// PostgreSQL is not installed and `CI` is not set.
    pub fn start() -> Option<Cluster> {
        Cluster::start_with(false)
    }

    fn start_with(shared: bool) -> Option<Cluster> {
        let Some(bin) = find_bin() else {
            let why = "PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian's \
                       `postgresql` package or set MEMLINEAGE_PG_BIN";
            if required() {
                panic!("{why} (CI is set, so the PostgreSQL tests must run)");
            }
            eprintln!("skipping the PostgreSQL tests: {why}");
            return None;
        };
        match Cluster::init(bin, shared) {
            Ok(c) => Some(c),
            Err(e) => panic!("cannot start a throwaway PostgreSQL cluster: {e}"),
        }
    }

    fn init(bin: PathBuf, shared: bool) -> Result<Cluster, String> {
        let dir = tempfile::Builder::new()
            .prefix("memlineage-pg-")
            .tempdir()
            .map_err(|e| format!("temporary directory: {e}"))?;
        let run_as = if running_as_root() {
            Some(unprivileged_user()?)
        } else {
            None
        };
        if let Some(user) = &run_as {
            let (uid, gid) = (id_of(user, "-u")?, id_of(user, "-g")?);
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .map_err(|e| format!("chown {}: {e}", dir.path().display()))?;
        }
        let root = dir.path().to_path_buf();
        let mut cluster = Cluster {
            bin,
            root,
            port: 0,
            run_as,
            databases: AtomicU32::new(0),
            _dir: None,
        };
        cluster.run(
            "initdb",
            &[
                "-D",
                &cluster.data().display().to_string(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
        )?;
        // Durable commits, as the store requires; then the settings `docs/store.md` recommends
        // for appends ("Server settings"): fewer checkpoints, compressed full-page images, and
        // new WAL segments not zero-filled by the backend that needs one.
        let conf = "\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n\
                    max_connections = 300\nfsync = on\nsynchronous_commit = on\n\
                    max_wal_size = '4GB'\ncheckpoint_timeout = '15min'\n\
                    wal_compression = on\nwal_init_zero = off\nlog_min_messages = warning\n";
        let conf_path = cluster.data().join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_path)
            .map_err(|e| format!("{}: {e}", conf_path.display()))?;
        text.push_str(conf);
        std::fs::write(&conf_path, text).map_err(|e| format!("{}: {e}", conf_path.display()))?;
        let mut last = String::new();
        for _ in 0..5 {
            cluster.port = free_port()?;
            match cluster.pg_ctl(&["start", "-w", "-t", "60"]) {
                Ok(()) => {
                    cluster.prefer_lz4();
                    if !shared {
                        cluster._dir = Some(dir);
                    } else {
                        // The watchdog removes it.
                        let _ = dir.keep();
                    }
                    return Ok(cluster);
                }
                Err(e) => last = e,
            }
        }
        Err(format!("pg_ctl start failed: {last}"))
    }

    /// Compresses full-page images with LZ4 when the server was built with it (Debian's is;
    /// `wal_compression = on` means the slower built-in pglz).
    fn prefer_lz4(&self) {
        let mut admin = self.admin();
        let lz4 = admin
            .query_one(
                "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'wal_compression'",
                &[],
            )
            .and_then(|r| r.try_get::<_, Option<bool>>(0))
            .ok()
            .flatten()
            .unwrap_or(false);
        if lz4 {
            let _ = admin
                .batch_execute("ALTER SYSTEM SET wal_compression = 'lz4'")
                .and_then(|()| admin.batch_execute("SELECT pg_reload_conf()"));
        }
    }

    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    /// The server's log file.
    pub fn log_file(&self) -> PathBuf {
        self.root.join("server.log")
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `db`.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/{db}?connect_timeout=10",
            self.port
        )
    }

    /// A new, empty database; returns its URL.
    pub fn database(&self) -> String {
        let n = self.databases.fetch_add(1, Ordering::SeqCst);
        let name = format!("t{}_{n}", std::process::id());
        let mut admin = self.admin();
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        self.url(&name)
    }

    /// A connection to the `postgres` database, as the superuser.
    pub fn admin(&self) -> postgres::Client {
        let url = self.url("postgres");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match postgres::Client::connect(&url, postgres::NoTls) {
                Ok(c) => return c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("cannot connect to the test cluster at {url}: {e}"),
            }
        }
    }

    /// Stops the server: `mode` is `smart`, `fast` or `immediate` (a crash: no shutdown
    /// checkpoint; the next start replays the WAL).
    pub fn stop(&self, mode: &str) {
        self.pg_ctl(&["stop", "-w", "-m", mode])
            .unwrap_or_else(|e| panic!("pg_ctl stop -m {mode}: {e}"));
    }

    /// Starts the stopped server again on the same port.
    pub fn start_again(&self) {
        self.pg_ctl(&["start", "-w", "-t", "60"])
            .unwrap_or_else(|e| panic!("pg_ctl start: {e}"));
    }

    /// `pg_ctl restart -m mode`.
    pub fn restart(&self, mode: &str) {
        self.pg_ctl(&["restart", "-w", "-t", "60", "-m", mode])
            .unwrap_or_else(|e| panic!("pg_ctl restart -m {mode}: {e}"));
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        let data = self.data().display().to_string();
        let log = self.log_file().display().to_string();
        let opts = format!("-p {}", self.port);
        let mut all: Vec<&str> = vec!["-D", &data, "-l", &log, "-o", &opts];
        all.extend_from_slice(args);
        self.run("pg_ctl", &all)
    }

    /// Runs a server binary (as the unprivileged user when this process is root).
    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bin.join(program);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let out = cmd
            .args(args)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            let log = std::fs::read_to_string(self.log_file()).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(10).collect();
            Err(format!(
                "{program} {}: {}\n{}\n{}\nserver log (last lines, newest first):\n{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                tail.join("\n")
            ))
        }
    }

    /// Starts a watchdog that stops the server and removes the directory once this process
    /// has exited.
    fn watch_parent(&self) {
        let pid = std::process::id();
        let pg_ctl = self.bin.join("pg_ctl").display().to_string();
        let stop = match &self.run_as {
            Some(user) => format!("runuser -u {user} -- '{pg_ctl}'"),
            None => format!("'{pg_ctl}'"),
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
             {stop} -D '{}' stop -m immediate -w >/dev/null 2>&1; rm -rf '{}'",
            self.data().display(),
            self.root.display()
        );
        let _ = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self._dir.is_some() {
            let _ = self.pg_ctl(&["stop", "-w", "-m", "immediate"]);
        }
    }
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The user a root process runs the server as.
fn unprivileged_user() -> Result<String, String> {
    for user in ["postgres", "nobody"] {
        if id_of(user, "-u").is_ok() {
            return Ok(user.to_string());
        }
    }
    Err("running as root, and neither the `postgres` nor the `nobody` user exists".into())
}

fn id_of(user: &str, flag: &str) -> Result<u32, String> {
    let out = Command::new("id")
        .args([flag, user])
        .output()
        .map_err(|e| format!("id: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("no user `{user}`"))
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("local_addr: {e}"))
}

/// The directory of `initdb` and `pg_ctl`.
fn find_bin() -> Option<PathBuf> {
    let has = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("MEMLINEAGE_PG_BIN") {
        let dir = PathBuf::from(dir);
        return has(&dir).then_some(dir);
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has(&dir) {
            return Some(dir);
        }
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has(d))
        .collect();
    debian.sort();
    if let Some((_, dir)) = debian.pop() {
        return Some(dir);
    }
    std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).find(|d| has(d)))
}
