//! The Rust side of the Python benchmark (`bench/python_vs_rust.py`, `docs/performance.md`):
//! the same library calls that `Memory.add`, `Memory.search` and `Memory.gate` make, timed in
//! a loop in Rust, on the same store and in the same process, so that the ratio of the two
//! says what the binding costs and nothing else. Each returns the time of every call in ns.

use crate::errors::Fail;
use crate::guard::{detached, guard};
use crate::handle::Handle;
use crate::parse;
use crate::policy::NativePolicy;
use memlineage::{AttributionName, GateRequest, WriteRequest};
use memlineage_core::entry::{EntryKind, Parent};
use memlineage_core::gate::ToolCall;
use memlineage_core::label::Weight;
use pyo3::prelude::*;
use std::sync::Arc;
use std::time::Instant;

fn time_each(n: usize, mut f: impl FnMut() -> Result<(), Fail>) -> Result<Vec<u64>, Fail> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f()?;
        out.push(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    Ok(out)
}

/// `Memory::write` of a derived entry by `writer` with `parents` (weight 1, coarse), `n` times;
/// the content gets the call's number appended so every entry is new.
#[pyfunction]
pub fn bench_write(
    py: Python<'_>,
    handle: &Handle,
    n: usize,
    content: String,
    writer: String,
    parents: Vec<String>,
) -> PyResult<Vec<u64>> {
    guard(|| {
        let writer = parse::name(&writer)?;
        let parents: Vec<Parent> = parse::ids(&parents)?
            .into_iter()
            .map(|id| Parent {
                id,
                weight: Weight::ONE,
            })
            .collect();
        let mem = handle.mem()?;
        let mut i = 0u64;
        detached(py, || {
            time_each(n, || {
                i += 1;
                let req = WriteRequest::new(&writer, EntryKind::Derived, format!("{content} {i}"))
                    .with_parents(parents.clone(), AttributionName::COARSE);
                mem.write(req)?;
                Ok(())
            })
        })
    })
}

/// `Memory::search` of `query` in `scope` with `limit`, `n` times.
#[pyfunction]
pub fn bench_search(
    py: Python<'_>,
    handle: &Handle,
    n: usize,
    query: String,
    scope: String,
    limit: usize,
) -> PyResult<Vec<u64>> {
    guard(|| {
        let scope = parse::scope(&scope)?;
        let mem = handle.mem()?;
        detached(py, || {
            time_each(n, || {
                mem.search(&query, &scope, limit)?;
                Ok(())
            })
        })
    })
}

/// `Memory::gate` of `calls[i]` against `context` (recorded by `recorder`), for each call in
/// turn (distinct calls make distinct decision records).
#[pyfunction]
pub fn bench_gate(
    py: Python<'_>,
    handle: &Handle,
    policy: &NativePolicy,
    calls: Vec<String>,
    context: Vec<String>,
    recorder: String,
) -> PyResult<Vec<u64>> {
    guard(|| {
        let context = parse::ids(&context)?;
        let recorder = parse::name(&recorder)?;
        let policy = Arc::clone(&policy.policy);
        let mem = handle.mem()?;
        let mut calls = calls.iter();
        detached(py, || {
            time_each(calls.len(), || {
                let call = ToolCall::from_openai_json(calls.next().map_or("", String::as_str))
                    .map_err(|e| Fail::Mem(memlineage::Error::Gate(e)))?;
                mem.gate(&policy, &GateRequest::new(call, context.clone(), &recorder))?;
                Ok(())
            })
        })
    })
}
