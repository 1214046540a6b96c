//! Running native work for Python: without the GIL, and with no panic crossing into Python.
//!
//! PyO3 turns a panic into `pyo3_runtime.PanicException`, a `BaseException` that `except
//! Exception` does not catch and that is no `memlineage.Error`. Every method of the module runs
//! its body under [`guard`], which catches the panic first and raises
//! `memlineage.InternalError` instead. Nothing is left half-written by a panic: the store's
//! appends are transactions that commit only at their end.

use crate::errors::Fail;
use pyo3::prelude::*;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `f`, turning a panic into `memlineage.InternalError`.
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(Fail::Panic(panic_message(payload.as_ref())).into()),
    }
}

/// Runs `f` with the GIL released (other Python threads run meanwhile), as every signing,
/// verification, search and gate decision does. A panic inside unwinds through PyO3's
/// `detach`, which takes the GIL back, to the enclosing [`guard`].
pub fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, Fail> + Send,
) -> PyResult<T> {
    py.detach(f).map_err(PyErr::from)
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with no message".to_string()
    }
}

/// Runs a write again when the store refused it because an identical entry (same writer,
/// content and millisecond: the same id) was appended first by another thread or process.
/// Two calls are two events, so the second is signed again one millisecond later and gets its
/// own entry. (The handle itself reports the collision as a store error today.)
pub fn distinct<T>(mut f: impl FnMut() -> Result<T, Fail>) -> Result<T, Fail> {
    let mut tries = 0;
    loop {
        match f() {
            Err(Fail::Mem(e)) if tries < 5 && same_id_appended(&e.to_string()) => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            other => return other,
        }
    }
}

fn same_id_appended(m: &str) -> bool {
    m.contains("UNIQUE constraint failed: entries.id") || m.contains("is already in the log")
}
