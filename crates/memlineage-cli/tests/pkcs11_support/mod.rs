//! A real SoftHSM2 token for the PKCS#11 signer's tests: a token directory of its own
//! (`SOFTHSM2_CONF` points every process at it), initialised with `softhsm2-util` and given
//! Ed25519 keys generated inside it by OpenSC's `pkcs11-tool` (Debian packages `softhsm2`
//! and `opensc`; `.ci/run` installs them). Without them the tests say so and pass, except
//! under `CI`, where they fail.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub const PIN: &str = "1234";
pub const TOKEN: &str = "memlineage";

pub struct SoftHsm {
    pub dir: tempfile::TempDir,
    pub module: PathBuf,
}

/// The module, or why there is none.
fn module() -> Result<PathBuf, String> {
    let module = std::env::var("MEMLINEAGE_TEST_PKCS11_MODULE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("/usr/lib/softhsm/libsofthsm2.so"));
    if !module.exists() {
        return Err(format!("no SoftHSM2 module at {}", module.display()));
    }
    for tool in ["softhsm2-util", "pkcs11-tool"] {
        let found = Command::new(tool).arg("--help").output().is_ok();
        if !found {
            return Err(format!("`{tool}` is not installed"));
        }
    }
    Ok(module)
}

impl SoftHsm {
    /// A fresh token, or `None` (after saying why) when SoftHSM2 is not installed; under `CI`
    /// a missing SoftHSM2 fails the test.
    pub fn start() -> Option<SoftHsm> {
        let module = match module() {
            Ok(m) => m,
            Err(why) => {
                assert!(
                    std::env::var("CI").is_err(),
                    "{why}: CI must install softhsm2 and opensc (apt-get install softhsm2 opensc)"
                );
                eprintln!("skipped: {why} (apt-get install softhsm2 opensc)");
                return None;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tokens")).unwrap();
        std::fs::write(
            dir.path().join("softhsm2.conf"),
            format!(
                "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
                dir.path().join("tokens").display()
            ),
        )
        .unwrap();
        std::fs::write(dir.path().join("pin"), format!("{PIN}\n")).unwrap();
        let hsm = SoftHsm { dir, module };
        hsm.tool(
            "softhsm2-util",
            &[
                "--init-token",
                "--free",
                "--label",
                TOKEN,
                "--pin",
                PIN,
                "--so-pin",
                "5678",
            ],
        );
        Some(hsm)
    }

    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("softhsm2.conf")
    }

    /// Sets `SOFTHSM2_CONF` on a command.
    pub fn env<'a>(&self, c: &'a mut Command) -> &'a mut Command {
        c.env("SOFTHSM2_CONF", self.conf())
    }

    /// Runs a tool against the token; panics with its output when it fails.
    pub fn tool(&self, tool: &str, args: &[&str]) -> String {
        let out = self
            .env(&mut Command::new(tool))
            .args(args)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{tool} {args:?}: {text}");
        text
    }

    fn p11(&self, args: &[&str]) -> String {
        let module = self.module.display().to_string();
        let mut all = vec![
            "--module",
            module.as_str(),
            "--token-label",
            TOKEN,
            "--login",
            "--pin",
            PIN,
        ];
        all.extend_from_slice(args);
        self.tool("pkcs11-tool", &all)
    }

    /// Generates an Ed25519 key pair inside the token, labelled `label` (sensitive, never
    /// extractable: the secret never leaves the token).
    pub fn keygen(&self, label: &str, id: &str) {
        self.p11(&[
            "--keypairgen",
            "--key-type",
            "EC:edwards25519",
            "--label",
            label,
            "--id",
            id,
        ]);
    }

    /// Deletes the private key labelled `label`.
    pub fn delete_private_key(&self, label: &str, id: &str) {
        self.p11(&[
            "--delete-object",
            "--type",
            "privkey",
            "--label",
            label,
            "--id",
            id,
        ]);
    }

    /// Imports a PKCS#8 PEM private key (for the known-answer test).
    pub fn import(&self, pem: &Path, label: &str, id: &str) {
        self.tool(
            "softhsm2-util",
            &[
                "--import",
                pem.to_str().unwrap(),
                "--token",
                TOKEN,
                "--label",
                label,
                "--id",
                id,
                "--pin",
                PIN,
            ],
        );
    }

    /// The signer URI, the PIN read from a file.
    pub fn uri(&self) -> String {
        format!(
            "pkcs11:token={TOKEN}?module-path={}&pin-source={}",
            self.module.display(),
            self.dir.path().join("pin").display()
        )
    }
}

/// Makes the token hang for `secs` seconds: a python3 process takes POSIX (fcntl) locks on
/// every file of the token, which SoftHSM2 waits for before it reads an object. Returns once
/// the locks are held; `None` (after saying why) without python3, which fails under `CI`.
pub fn lock_token(hsm: &SoftHsm, secs: u32) -> Option<Child> {
    const LOCKER: &str = "import fcntl, glob, sys, time\n\
        held = []\n\
        for p in glob.glob(sys.argv[1]):\n    f = open(p, 'r+b'); fcntl.lockf(f, fcntl.LOCK_EX); held.append(f)\n\
        print('locked', len(held), flush=True)\n\
        time.sleep(float(sys.argv[2]))\n";
    let pattern = hsm.dir.path().join("tokens").join("*").join("*");
    let spawned = Command::new("python3")
        .args(["-c", LOCKER, pattern.to_str().unwrap(), &secs.to_string()])
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            assert!(
                std::env::var("CI").is_err(),
                "python3 is needed to hang the token: {e}"
            );
            eprintln!("skipped the hanging-token check: no python3 ({e})");
            return None;
        }
    };
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.starts_with("locked ") && line.trim() != "locked 0",
        "{line:?}"
    );
    Some(child)
}
