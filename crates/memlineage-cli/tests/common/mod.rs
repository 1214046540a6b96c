//! Shared helpers for the CLI integration tests: a store in a temporary directory and a way to
//! run the real `memlineage` binary against it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_memlineage")
}

/// The result of one run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The result of a finished process (asserting that it did not panic).
    pub fn from_output(out: Output) -> Run {
        let run = Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert!(
            !run.stderr.contains("panicked"),
            "the binary panicked: {}",
            run.stderr
        );
        run
    }

    /// Asserts exit 0 and returns self.
    pub fn ok(self) -> Run {
        assert_eq!(self.code, 0, "expected success, got {self:#?}");
        self
    }

    /// Asserts the exit code.
    pub fn code(self, code: i32) -> Run {
        assert_eq!(self.code, code, "expected exit {code}, got {self:#?}");
        self
    }

    /// Stdout parsed as exactly one JSON object.
    pub fn json(&self) -> Value {
        let v: Value = serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON value ({e}): {self:#?}"));
        assert!(v.is_object(), "stdout is not a JSON object: {v}");
        v
    }
}

/// A store in a fresh temporary directory.
pub struct Store {
    pub dir: tempfile::TempDir,
}

impl Store {
    /// An empty directory, no store yet.
    pub fn empty() -> Store {
        Store {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A freshly initialised store.
    pub fn init() -> Store {
        let s = Store::empty();
        s.run(&["init"]).ok();
        s
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("store.db")
    }

    pub fn keys(&self) -> PathBuf {
        self.dir.path().join("keys")
    }

    /// A command against this store (`--store` set, environment cleaned).
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.arg("--store").arg(self.db()).args(args);
        c.env_remove("MEMLINEAGE_STORE").env_remove("RUST_LOG");
        for var in [
            "MEMLINEAGE_CLIENT_STATE",
            "MEMLINEAGE_WITNESS_DIR",
            "MEMLINEAGE_MONITOR_STATE",
            "MEMLINEAGE_SIGNER",
            "MEMLINEAGE_PKCS11_PIN",
        ] {
            c.env_remove(var);
        }
        c.current_dir(self.dir.path());
        c
    }

    /// Runs the binary with `args` and empty stdin.
    pub fn run(&self, args: &[&str]) -> Run {
        let out = self
            .cmd(args)
            .stdin(Stdio::null())
            .output()
            .expect("run memlineage");
        Run::from_output(out)
    }

    /// Runs with `input` on stdin.
    pub fn run_stdin(&self, args: &[&str], input: &[u8]) -> Run {
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn memlineage");
        child.stdin.take().unwrap().write_all(input).unwrap();
        Run::from_output(child.wait_with_output().unwrap())
    }

    /// Runs with `--json` and returns the object (asserting success).
    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.push("--json");
        self.run(&a).ok().json()
    }

    /// Writes an entry and returns its id.
    pub fn write(&self, args: &[&str]) -> String {
        let mut a = vec!["write"];
        a.extend_from_slice(args);
        let v = self.json(&a);
        v["id"].as_str().unwrap().to_string()
    }

    /// The log size.
    pub fn size(&self) -> u64 {
        self.json(&["log", "--limit", "0"])["size"]
            .as_u64()
            .unwrap()
    }

    /// `verify --json`, with its exit code.
    pub fn verify(&self) -> (i32, Value) {
        let r = self.run(&["verify", "--json"]);
        let v = r.json();
        (r.code, v)
    }

    /// A direct connection to the database, for tampering.
    pub fn sqlite(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.db()).unwrap()
    }
}

/// Asserts that `verify` exits 1 and reports a problem at `index` (and `id`, when given) whose
/// reason contains one of `words`. Returns the report.
pub fn assert_problem(
    store: &Store,
    index: Option<u64>,
    id: Option<&str>,
    words: &[&str],
) -> Value {
    let (code, report) = store.verify();
    assert_eq!(code, 1, "verify must fail: {report:#}");
    assert_eq!(report["ok"], false);
    let problems = report["problems"].as_array().unwrap();
    let hit = problems.iter().any(|p| {
        let reason = p["reason"].as_str().unwrap_or("");
        (index.is_none() || p["index"].as_u64() == index)
            && (id.is_none() || p["id"].as_str() == id)
            && words.iter().any(|w| reason.contains(w))
    });
    assert!(
        hit,
        "no problem at index {index:?} id {id:?} mentioning {words:?}: {report:#}"
    );
    // The text form names the same thing.
    let text = store.run(&["verify"]).code(1);
    assert!(text.stderr.contains("verification failed"), "{text:#?}");
    if let Some(i) = index {
        assert!(
            text.stdout.contains(&format!("index {i}")),
            "{}",
            text.stdout
        );
    }
    report
}

/// Reads one file's mode bits (Unix).
#[cfg(unix)]
pub fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Whether the embedding model (all-MiniLM-L6-v2, `scripts/fetch-embedding-model.sh`) can be
/// loaded; without it a test prints why and passes, except under `CI`, where it fails.
#[cfg(feature = "models")]
pub fn model_present() -> bool {
    match memlineage::search::embedder::load_default_embedder() {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but the embedding model is missing: {e}"
            );
            eprintln!("skipping a test of the embedding model: {e}");
            false
        }
    }
}

/// A private CA's certificate (PEM file `ca`) and a certificate it issued for `localhost`
/// (`cert`, `key`), in `dir`.
pub fn private_ca(dir: &std::path::Path, org: &str) -> [String; 3] {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::OrganizationName, org);
    let ca_key = KeyPair::generate().unwrap();
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let files = ["ca", "cert", "key"].map(|f| dir.join(format!("{org}-{f}.pem")));
    std::fs::write(&files[0], ca_pem).unwrap();
    std::fs::write(&files[1], leaf.pem()).unwrap();
    std::fs::write(&files[2], leaf_key.serialize_pem()).unwrap();
    files.map(|f| f.display().to_string())
}
