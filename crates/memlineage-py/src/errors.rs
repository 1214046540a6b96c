//! The exception hierarchy of the `memlineage` package, and the one place where a Rust error
//! becomes a Python exception.
//!
//! Every exception is a subclass of `memlineage.Error`, and its message is the one the CLI
//! prints after `error: ` for the same failure (`docs/cli.md`, "Conventions"), so a message
//! found in a log can be looked up in either. The class says what kind of failure it was, in
//! the terms of the CLI's exit codes: refused or failed (exit 1: [`RefusedError`],
//! [`IntegrityError`], [`NotFoundError`], [`ConflictError`], [`StorageError`] and its
//! [`UnavailableError`]) or bad input (exit 2: [`InputError`] and its [`PolicyError`] and
//! [`GateError`]). The classes are those of `memlineage::ErrorKind` (`docs/errors.md`).

use pyo3::PyErr;
use pyo3::exceptions::PyException;

pyo3::create_exception!(
    memlineage,
    Error,
    PyException,
    "Base class of every error the memlineage package raises."
);
pyo3::create_exception!(
    memlineage,
    InputError,
    Error,
    "Bad input the caller can fix: a malformed id, weight, scope, name, kind, tool call or \
     empty content (the CLI's exit code 2)."
);
pyo3::create_exception!(
    memlineage,
    PolicyError,
    InputError,
    "A gate policy that cannot be used (TOML syntax, unknown key, type, label or mode); the \
     message names the line and column."
);
pyo3::create_exception!(
    memlineage,
    GateError,
    InputError,
    "The gate could not judge a tool call (a malformed call, a citation outside the context, a \
     parameter value that is not of its type): the call must not be dispatched."
);
pyo3::create_exception!(
    memlineage,
    RefusedError,
    Error,
    "The store refused the operation: an unregistered, revoked or key-less principal, a \
     rotated key, a label rule laxer than the store's, an existing principal or store."
);
pyo3::create_exception!(
    memlineage,
    IntegrityError,
    Error,
    "Stored data failed verification (tampering or corruption): a signature, a proof, a \
     label, a checkpoint. Never trust the entry; run `memlineage verify`."
);
pyo3::create_exception!(
    memlineage,
    NotFoundError,
    Error,
    "No entry (or parent) with this id is in the log."
);
pyo3::create_exception!(
    memlineage,
    StorageError,
    Error,
    "The store could not be used: a missing or uninitialised store, a file or SQLite error."
);
pyo3::create_exception!(
    memlineage,
    UnavailableError,
    StorageError,
    "The store cannot be reached, or this build cannot open it (a backend that was not built \
     in): retry later or rebuild."
);
pyo3::create_exception!(
    memlineage,
    ConflictError,
    Error,
    "A concurrent change (a distrust record committed meanwhile) made the write stale; nothing \
     was written: write it again."
);
pyo3::create_exception!(
    memlineage,
    ClosedError,
    Error,
    "The Memory was closed; open the store again."
);
pyo3::create_exception!(
    memlineage,
    InternalError,
    Error,
    "A bug in memlineage (a Rust panic, caught before it reached Python). Nothing was left \
     half-written; please report it with the message."
);

/// A failure of a native call, classified; [`From<Fail> for PyErr`] raises it.
#[derive(Debug)]
pub enum Fail {
    /// An error of the memory handle, classified by [`classify`].
    Mem(memlineage::Error),
    /// Bad input found by the binding itself.
    Input(String),
    /// A policy that cannot be used.
    Policy(String),
    /// A refused operation found by the binding itself.
    Refused(String),
    /// Failed verification found by the binding itself.
    Integrity(String),
    /// No such store (or entry) found by the binding itself.
    NotFound(String),
    /// A store that cannot be opened or created.
    Store(String),
    /// A store this build cannot open.
    Unavailable(String),
    /// The handle was closed.
    Closed,
    /// A Rust panic, caught.
    Panic(String),
}

impl From<memlineage::Error> for Fail {
    fn from(e: memlineage::Error) -> Fail {
        Fail::Mem(e)
    }
}

/// The message the CLI prints for this error (after `error: `).
fn message(e: &memlineage::Error) -> String {
    use memlineage::error::Refusal;
    match e {
        // `memlineage gate` says the call cannot be judged (commands/gate.rs).
        memlineage::Error::Gate(g) => format!("cannot judge the call: {g}"),
        // The CLI says how to register the principal (output.rs).
        memlineage::Error::Refused(Refusal::NotRegistered { name }) => format!(
            "principal `{name}` is not registered: add it with `memlineage principal add {name} \
             --class trusted|external` (see `memlineage principal list`)"
        ),
        other => other.to_string(),
    }
}

/// An error of a write as the CLI words it (`commands/mod.rs`, `refused`): a missing or stale
/// key names the key file in the store's key directory (the library knows principals, not
/// files). Other errors are passed on.
pub fn with_key_files(e: memlineage::Error, keys: Option<&std::path::Path>) -> Fail {
    use memlineage::error::Refusal;
    let Some(dir) = keys else {
        return Fail::Mem(e);
    };
    match &e {
        memlineage::Error::NoKey(name) => Fail::Refused(format!(
            "no secret key for `{name}`: expected {} (is this the right store?)",
            memlineage::keyring::key_path(dir, name).display()
        )),
        memlineage::Error::Refused(Refusal::KeyNotCurrent { name, current }) => {
            let file = name
                .parse::<memlineage::PrincipalName>()
                .map(|n| memlineage::keyring::key_path(dir, &n).display().to_string())
                .unwrap_or_else(|_| name.clone());
            Fail::Refused(format!(
                "refused: {file} is not the current key of `{name}` (it was rotated; the current \
                 key id is {})",
                current.map_or_else(String::new, |k| k.to_hex())
            ))
        }
        _ => Fail::Mem(e),
    }
}

/// The exception of an error of the handle: its class follows `Error::kind()`
/// (`docs/errors.md`), except a call the gate cannot judge, which is a `GateError`.
fn exception(e: &memlineage::Error) -> PyErr {
    use memlineage::ErrorKind as K;
    let m = message(e);
    if matches!(e, memlineage::Error::Gate(_)) {
        return GateError::new_err(m);
    }
    match e.kind() {
        K::InvalidInput => InputError::new_err(m),
        K::NotFound => NotFoundError::new_err(m),
        K::Refused => RefusedError::new_err(m),
        K::Integrity => IntegrityError::new_err(m),
        K::Conflict => ConflictError::new_err(m),
        K::Storage | K::Io => StorageError::new_err(m),
        K::Unavailable => UnavailableError::new_err(m),
        K::Internal => InternalError::new_err(m),
        _ => Error::new_err(m),
    }
}

impl From<Fail> for PyErr {
    fn from(f: Fail) -> PyErr {
        match f {
            Fail::Mem(e) => exception(&e),
            Fail::Input(m) => InputError::new_err(m),
            Fail::Policy(m) => PolicyError::new_err(m),
            Fail::Refused(m) => RefusedError::new_err(m),
            Fail::Integrity(m) => IntegrityError::new_err(m),
            Fail::NotFound(m) => NotFoundError::new_err(m),
            Fail::Store(m) => StorageError::new_err(m),
            Fail::Unavailable(m) => UnavailableError::new_err(m),
            Fail::Closed => ClosedError::new_err(
                "this Memory is closed (open the store again with Memory.open)",
            ),
            Fail::Panic(m) => InternalError::new_err(format!(
                "internal error (a bug in memlineage, please report it): {m}"
            )),
        }
    }
}

/// Registers the exception classes on the module.
pub fn register(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    use pyo3::prelude::*;
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("PolicyError", py.get_type::<PolicyError>())?;
    m.add("GateError", py.get_type::<GateError>())?;
    m.add("RefusedError", py.get_type::<RefusedError>())?;
    m.add("IntegrityError", py.get_type::<IntegrityError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("StorageError", py.get_type::<StorageError>())?;
    m.add("UnavailableError", py.get_type::<UnavailableError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}
