//! The token file as the running service sees it: loaded at start, reloaded when it changes
//! (a `memlineage token create` or `revoke` takes effect within a second), checked on every
//! request without touching the disk.

use crate::tokens::{Grant, TokenFileAt, TokenRecord, check};
use std::path::Path;
use std::sync::RwLock;
use std::time::{Duration, Instant, SystemTime};

/// How often the file's modification time is looked at.
const RELOAD_EVERY: Duration = Duration::from_secs(1);

struct Loaded {
    records: Vec<TokenRecord>,
    stamp: Option<(SystemTime, u64)>,
    checked: Instant,
}

/// The tokens, reloaded on change.
pub struct TokenCache {
    file: TokenFileAt,
    loaded: RwLock<Loaded>,
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

impl TokenCache {
    /// Loads the token file (none yet is fine: every request is then refused until tokens
    /// are created).
    pub fn open(path: &Path) -> Result<TokenCache, String> {
        let file = TokenFileAt::new(path);
        let records = file.load().map_err(|e| e.to_string())?;
        Ok(TokenCache {
            loaded: RwLock::new(Loaded {
                records,
                stamp: stamp(path),
                checked: Instant::now(),
            }),
            file,
        })
    }

    /// Checks a presented token.
    pub fn check(&self, token: &str) -> Result<Grant, &'static str> {
        self.refresh();
        let loaded = self
            .loaded
            .read()
            .map_err(|_| "the token table is unavailable")?;
        let now_ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        check(&loaded.records, token, now_ms)
    }

    /// Reloads the file when its time or size changed (at most once per [`RELOAD_EVERY`]).
    /// A file that fails to load keeps the previous tokens and is logged.
    fn refresh(&self) {
        let due = self
            .loaded
            .read()
            .is_ok_and(|l| l.checked.elapsed() >= RELOAD_EVERY);
        if !due {
            return;
        }
        let Ok(mut loaded) = self.loaded.write() else {
            return;
        };
        if loaded.checked.elapsed() < RELOAD_EVERY {
            return;
        }
        loaded.checked = Instant::now();
        let now = stamp(self.file.path());
        if now == loaded.stamp {
            return;
        }
        match self.file.load() {
            Ok(records) => {
                tracing::info!(tokens = records.len(), "reloaded the token file");
                loaded.records = records;
                loaded.stamp = now;
            }
            Err(e) => tracing::error!("keeping the previous tokens: {e}"),
        }
    }
}
