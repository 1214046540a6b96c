//! # memlineage-py
//!
//! The native module `memlineage._native` of the Python package `memlineage` (PyO3, one abi3
//! wheel for CPython ≥ 3.10, built with maturin). It is deliberately thin: one handle wrapping
//! `memlineage::Memory` (`handle.rs`), one place mapping errors to exceptions (`errors.rs`),
//! plain Python values out (`convert.rs`). The typed objects, the `Session`, the asyncio
//! wrapper and the framework adapters are Python, in `python/memlineage/` (`docs/python.md`).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod bench;
mod convert;
mod errors;
mod guard;
mod handle;
mod location;
mod open;
mod parse;
mod policy;
mod principals;
mod semantic;

use pyo3::prelude::*;

/// Panics inside the same guard every method runs under, so the tests can check that a Rust
/// panic reaches Python as `memlineage.InternalError` (and that the process survives).
#[pyfunction]
fn _panic_for_test(py: Python<'_>, message: String) -> PyResult<()> {
    guard::guard(|| guard::detached(py, || -> Result<(), errors::Fail> { panic!("{message}") }))
}

/// The version of the Rust crates this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The module `memlineage._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<handle::Handle>()?;
    m.add_class::<policy::NativePolicy>()?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(bench::bench_write, m)?)?;
    m.add_function(wrap_pyfunction!(bench::bench_search, m)?)?;
    m.add_function(wrap_pyfunction!(bench::bench_gate, m)?)?;
    Ok(())
}
