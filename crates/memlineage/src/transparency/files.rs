//! The small files of witnesses, clients and monitors: each written whole through a temporary
//! file, fsynced and renamed into place (a crash leaves the old or the new file, never half of
//! one), and a lock file that makes read-check-write one step between processes.

use crate::error::Error;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

pub(crate) fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Creates `dir` (and its parents) with mode 0700 when missing.
pub(crate) fn private_dir(dir: &Path) -> Result<(), Error> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir).map_err(|source| io_err(dir, source))
}

/// Replaces `path` with `bytes` atomically and durably.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "state".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut opts = OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(&tmp).map_err(|source| io_err(&tmp, source))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|source| io_err(&tmp, source))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|source| io_err(path, source))?;
    // The rename is durable once the directory is synced.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The text of `path`, `None` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, Error> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(io_err(path, source)),
    }
}

/// An exclusive lock on `dir/lock`, released when dropped.
pub(crate) struct DirLock(#[allow(dead_code)] File);

/// Takes the exclusive lock of `dir` (blocking until other processes release it).
pub(crate) fn lock(dir: &Path) -> Result<DirLock, Error> {
    let path = dir.join("lock");
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| io_err(&path, source))?;
    f.lock().map_err(|source| io_err(&path, source))?;
    Ok(DirLock(f))
}

/// The file name of a log's record in a state directory: the SHA-256 of its origin, in hex
/// (as C2SP tlog-witness names a log in its monitoring URLs), so any origin is a safe name.
pub(crate) fn origin_file(origin: &str) -> String {
    memlineage_core::Hash256::of(origin.as_bytes()).to_hex()
}
