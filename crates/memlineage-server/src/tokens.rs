//! Bearer tokens: what a client presents, and the file of their hashes the service checks it
//! against.
//!
//! A token is `mlt_<id>_<secret>`: `id` is 16 hex digits that name the token (for listing and
//! revoking), `secret` 43 characters of base64url, 256 bits from the OS random source. Only the
//! SHA-256 of the whole token is stored: a token has the entropy of a key, so a fast hash is
//! enough (no password hashing), and a leaked file reveals no token. The file is
//! `tokens.json` beside the store (mode 0600), written atomically; `memlineage token create`,
//! `list` and `revoke` edit it, and a running service reloads it when it changes.
//!
//! Each token binds a client to one principal (the writer of everything it writes, the
//! recorder of every gate decision it asks for), a set of scopes (the namespaces it may read
//! and write), and optionally the operator role (registry changes, forget, distrust,
//! checkpoints, verify, the whole log).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use memlineage::PrincipalName;
use memlineage_core::entry::Scope;
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file name of the token hashes, beside the store.
pub const TOKENS_FILE: &str = "tokens.json";
/// Every token starts with this.
pub const TOKEN_PREFIX: &str = "mlt_";
const ID_HEX: usize = 16;
const SECRET_BYTES: usize = 32;
const FORMAT_VERSION: u32 = 1;

/// Errors of the token file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a token file of this version.
    #[error("{path}: not a MemLineage token file ({problem}); move it away or fix it")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// A request the caller can fix (no such token, bad scope…).
    #[error("{0}")]
    Invalid(String),
}

/// One token as stored: never the token itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// The token's public id (16 hex digits, also inside the token).
    pub id: String,
    /// The principal the token writes and gates as.
    pub principal: String,
    /// The scopes it may read and write (each with everything below it).
    pub scopes: Vec<String>,
    /// Whether it holds the operator role.
    pub operator: bool,
    /// When it was created (ms since the Unix epoch).
    pub created_at_ms: u64,
    /// A note for people (who holds it).
    #[serde(default)]
    pub note: String,
    /// SHA-256 of the whole token, hex.
    pub sha256: String,
    /// When it was revoked, if it was.
    #[serde(default)]
    pub revoked_at_ms: Option<u64>,
    /// When it stops being accepted (ms since the Unix epoch), if ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct TokenFile {
    version: u32,
    tokens: Vec<TokenRecord>,
}

/// A new token: the secret, shown once, and its record.
#[derive(Clone, Debug)]
pub struct NewToken {
    /// The bearer token to give the client (never stored).
    pub token: String,
    /// What is stored.
    pub record: TokenRecord,
}

/// What a token grants, once checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The token's id.
    pub token_id: String,
    /// The principal.
    pub principal: PrincipalName,
    /// The scopes.
    pub scopes: Vec<Scope>,
    /// The operator role.
    pub operator: bool,
}

impl Grant {
    /// Whether an entry of `scope` is within this token's scopes.
    pub fn covers(&self, scope: &Scope) -> bool {
        self.scopes.iter().any(|s| s.contains(scope))
    }

    /// The scopes as text, for messages.
    pub fn scopes_text(&self) -> String {
        self.scopes
            .iter()
            .map(Scope::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The SHA-256 of a token, hex.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The id inside a token, when it has the token format.
pub fn token_id(token: &str) -> Option<&str> {
    let rest = token.strip_prefix(TOKEN_PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let well_formed = id.len() == ID_HEX
        && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && !secret.is_empty();
    well_formed.then_some(id)
}

/// Compares two equal-length strings in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The token file at a path.
#[derive(Clone, Debug)]
pub struct TokenFileAt {
    path: PathBuf,
}

impl TokenFileAt {
    /// The token file at `path` (it need not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> TokenFileAt {
        TokenFileAt { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every record (none when the file does not exist).
    pub fn load(&self) -> Result<Vec<TokenRecord>, TokenError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(self.io(source)),
        };
        let file: TokenFile = serde_json::from_str(&text).map_err(|e| TokenError::Malformed {
            path: self.path.display().to_string(),
            problem: e.to_string(),
        })?;
        if file.version != FORMAT_VERSION {
            return Err(TokenError::Malformed {
                path: self.path.display().to_string(),
                problem: format!(
                    "version {} (this build reads {FORMAT_VERSION})",
                    file.version
                ),
            });
        }
        for r in &file.tokens {
            for s in &r.scopes {
                Scope::new(s).map_err(|e| TokenError::Malformed {
                    path: self.path.display().to_string(),
                    problem: format!("token {}: {e}", r.id),
                })?;
            }
        }
        Ok(file.tokens)
    }

    /// Creates a token for `principal` with `scopes`, stores its hash, and returns it.
    pub fn create(
        &self,
        principal: &str,
        scopes: &[Scope],
        operator: bool,
        note: &str,
        now_ms: u64,
    ) -> Result<NewToken, TokenError> {
        self.create_expiring(principal, scopes, operator, note, now_ms, None)
    }

    /// [`TokenFileAt::create`] for a token that is refused from `expires_at_ms` on.
    pub fn create_expiring(
        &self,
        principal: &str,
        scopes: &[Scope],
        operator: bool,
        note: &str,
        now_ms: u64,
        expires_at_ms: Option<u64>,
    ) -> Result<NewToken, TokenError> {
        if scopes.is_empty() {
            return Err(TokenError::Invalid(
                "a token needs at least one scope (--scope)".into(),
            ));
        }
        let mut records = self.load()?;
        let mut id_bytes = [0u8; ID_HEX / 2];
        OsRng.fill_bytes(&mut id_bytes);
        let mut secret = [0u8; SECRET_BYTES];
        OsRng.fill_bytes(&mut secret);
        let id = hex::encode(id_bytes);
        let token = format!("{TOKEN_PREFIX}{id}_{}", URL_SAFE_NO_PAD.encode(secret));
        let mut scope_names: Vec<String> = scopes.iter().map(|s| s.as_str().to_string()).collect();
        scope_names.sort();
        scope_names.dedup();
        let record = TokenRecord {
            id,
            principal: principal.to_string(),
            scopes: scope_names,
            operator,
            created_at_ms: now_ms,
            note: note.to_string(),
            sha256: token_hash(&token),
            revoked_at_ms: None,
            expires_at_ms,
        };
        records.push(record.clone());
        self.save(&records)?;
        Ok(NewToken { token, record })
    }

    /// Marks a token revoked (kept in the file, so its id is never reused).
    pub fn revoke(&self, id: &str, now_ms: u64) -> Result<TokenRecord, TokenError> {
        let mut records = self.load()?;
        let Some(r) = records.iter_mut().find(|r| r.id == id) else {
            return Err(TokenError::Invalid(format!(
                "no token with id `{id}` in {} (see `memlineage token list`)",
                self.path.display()
            )));
        };
        if r.revoked_at_ms.is_none() {
            r.revoked_at_ms = Some(now_ms);
        }
        let out = r.clone();
        self.save(&records)?;
        Ok(out)
    }

    /// Writes the records atomically (temporary file, fsync, rename), readable only by the
    /// owner.
    fn save(&self, records: &[TokenRecord]) -> Result<(), TokenError> {
        let file = TokenFile {
            version: FORMAT_VERSION,
            tokens: records.to_vec(),
        };
        let text = serde_json::to_string_pretty(&file)
            .map_err(|e| TokenError::Invalid(format!("encoding the token file: {e}")))?;
        let tmp = self.path.with_extension("json.tmp");
        let _ = fs::remove_file(&tmp);
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&tmp).map_err(|e| self.io_at(&tmp, e))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.write_all(b"\n"))
            .and_then(|()| f.sync_all())
            .map_err(|e| self.io_at(&tmp, e))?;
        fs::rename(&tmp, &self.path).map_err(|e| self.io(e))?;
        Ok(())
    }

    fn io(&self, source: std::io::Error) -> TokenError {
        self.io_at(&self.path, source)
    }

    fn io_at(&self, path: &Path, source: std::io::Error) -> TokenError {
        TokenError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// Checks a presented token against the records at time `now_ms`: the grant, or why not (for
/// the client).
pub fn check(records: &[TokenRecord], token: &str, now_ms: u64) -> Result<Grant, &'static str> {
    let id = token_id(token).ok_or(
        "the bearer token is malformed (expected `mlt_<16 hex>_<secret>`, as `memlineage token create` prints it)",
    )?;
    let record = records
        .iter()
        .find(|r| r.id == id)
        .ok_or("the bearer token is not known to this service")?;
    if !same(&record.sha256, &token_hash(token)) {
        return Err("the bearer token is not known to this service");
    }
    if record.revoked_at_ms.is_some() {
        return Err("the bearer token was revoked");
    }
    if record.expires_at_ms.is_some_and(|at| now_ms >= at) {
        return Err("the bearer token has expired");
    }
    let scopes = record
        .scopes
        .iter()
        .map(|s| Scope::new(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| "the token's record has an invalid scope")?;
    Ok(Grant {
        token_id: record.id.clone(),
        principal: record
            .principal
            .parse::<PrincipalName>()
            .map_err(|_| "the token's record names an invalid principal")?,
        scopes,
        operator: record.operator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(s: &str) -> Scope {
        Scope::new(s).unwrap()
    }

    #[test]
    fn create_check_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let file = TokenFileAt::new(dir.path().join(TOKENS_FILE));
        let t = file
            .create("web", &[scope("acme/b"), scope("acme/a")], false, "", 1)
            .unwrap();
        assert!(t.token.starts_with("mlt_"));
        let text = fs::read_to_string(file.path()).unwrap();
        assert!(!text.contains(&t.token), "the token itself is never stored");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(file.path()).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let records = file.load().unwrap();
        let g = check(&records, &t.token, 1).unwrap();
        assert_eq!(g.principal.as_str(), "web");
        assert_eq!(g.scopes, vec![scope("acme/a"), scope("acme/b")]);
        assert!(g.covers(&scope("acme/a/x")));
        assert!(!g.covers(&scope("acme")));
        assert!(!g.covers(&scope("acme/ab")));
        file.revoke(&t.record.id, 2).unwrap();
        assert_eq!(
            check(&file.load().unwrap(), &t.token, 2),
            Err("the bearer token was revoked")
        );
    }

    #[test]
    fn forged_tokens_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = TokenFileAt::new(dir.path().join(TOKENS_FILE));
        let t = file
            .create("agent", &[scope("default")], true, "", 1)
            .unwrap();
        let records = file.load().unwrap();
        // Same id, another secret.
        let forged = format!("mlt_{}_{}", t.record.id, "A".repeat(43));
        assert!(check(&records, &forged, 1).is_err());
        for bad in [
            "",
            "mlt_",
            "Bearer x",
            "mlt_zz_x",
            &t.token[..t.token.len() - 1],
        ] {
            assert!(check(&records, bad, 1).is_err(), "{bad}");
        }
        assert!(file.create("agent", &[], false, "", 1).is_err());
    }

    #[test]
    fn expired_tokens_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = TokenFileAt::new(dir.path().join(TOKENS_FILE));
        let t = file
            .create_expiring("agent", &[scope("default")], false, "", 1, Some(100))
            .unwrap();
        let records = file.load().unwrap();
        assert!(check(&records, &t.token, 99).is_ok());
        assert_eq!(
            check(&records, &t.token, 100),
            Err("the bearer token has expired")
        );
        // A record without the field (an older file) never expires.
        let text = fs::read_to_string(file.path()).unwrap();
        assert!(text.contains("expires_at_ms"));
        let plain = file
            .create("agent", &[scope("default")], false, "", 1)
            .unwrap();
        assert!(check(&file.load().unwrap(), &plain.token, u64::MAX).is_ok());
    }
}
