//! Rust values as the plain Python values the package's typed objects are built from.
//!
//! The native module hands Python tuples, dicts, lists, strings and ints, never its own
//! classes: the frozen dataclasses of `memlineage` (`python/memlineage/_types.py`) are built
//! from them, so their shape is defined once, in Python, with docstrings and type stubs. The
//! tuple layouts here and the constructors there change together (`_types.py` names them).

use memlineage::EntryView;
use memlineage::memory::{Dropped, Retrieval};
use memlineage_core::label::TrustLabel;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

/// A label as the `memlineage.Label` IntEnum value: its rank in the lattice.
pub fn label_rank(l: TrustLabel) -> u8 {
    match l {
        TrustLabel::Trusted => 0,
        TrustLabel::DerivedTrusted => 1,
        TrustLabel::DerivedUntrusted => 2,
        TrustLabel::External => 3,
    }
}

/// The content as Python sees it: `str` when UTF-8, `bytes` otherwise, `None` once erased.
fn content<'py>(py: Python<'py>, c: Option<&[u8]>) -> Bound<'py, PyAny> {
    match c {
        None => py.None().into_bound(py),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => PyString::new(py, s).into_any(),
            Err(_) => PyBytes::new(py, b).into_any(),
        },
    }
}

/// An entry: `(id, index, kind, scope, writer, key_id, created_at_ms, content, content_hash,
/// content_len, source_hash, context_hash, parents, attribution, tau_bp, fallback, label,
/// effective_label, forgotten_by, metadata, signature)`, parents as `[(id, weight_bp)]`.
pub fn entry<'py>(py: Python<'py>, v: &EntryView) -> PyResult<Bound<'py, PyTuple>> {
    let b = v.entry.body();
    let parents = PyList::empty(py);
    for p in &b.parents {
        parents.append((p.id.to_hex(), p.weight.bp()))?;
    }
    let metadata = PyDict::new(py);
    for (k, val) in &b.metadata {
        metadata.set_item(k, val)?;
    }
    let items: [Bound<'py, PyAny>; 21] = [
        v.entry.id().to_hex().into_pyobject(py)?.into_any(),
        v.index.into_pyobject(py)?.into_any(),
        b.kind.as_str().into_pyobject(py)?.into_any(),
        b.scope.as_str().into_pyobject(py)?.into_any(),
        b.writer.as_str().into_pyobject(py)?.into_any(),
        b.key_id.to_hex().into_pyobject(py)?.into_any(),
        b.created_at_ms.into_pyobject(py)?.into_any(),
        content(py, v.content.as_deref()),
        b.content_hash.to_hex().into_pyobject(py)?.into_any(),
        b.content_len.into_pyobject(py)?.into_any(),
        b.source_hash.map(|h| h.to_hex()).into_pyobject(py)?,
        b.context_hash.map(|h| h.to_hex()).into_pyobject(py)?,
        parents.into_any(),
        b.attribution.as_str().into_pyobject(py)?.into_any(),
        b.tau.bp().into_pyobject(py)?.into_any(),
        b.fallback.as_str().into_pyobject(py)?.into_any(),
        label_rank(v.label).into_pyobject(py)?.into_any(),
        label_rank(v.effective_label).into_pyobject(py)?.into_any(),
        v.forgotten_by.map(|t| t.to_hex()).into_pyobject(py)?,
        metadata.into_any(),
        hex::encode(v.entry.signature().to_bytes())
            .into_pyobject(py)?
            .into_any(),
    ];
    PyTuple::new(py, items)
}

/// A retrieval: `(entries, dropped, rendered, context_hash, checkpoint_size)`, entries as
/// [`entry`] tuples, dropped as `[(id, index, reason)]`.
pub fn retrieval<'py>(py: Python<'py>, r: &Retrieval) -> PyResult<Bound<'py, PyTuple>> {
    let entries = PyList::empty(py);
    for v in &r.entries {
        entries.append(entry(py, v)?)?;
    }
    let dropped = PyList::empty(py);
    for Dropped { id, index, reason } in &r.dropped {
        dropped.append((id.to_hex(), *index, reason.as_str()))?;
    }
    (
        entries,
        dropped,
        r.rendered.as_str(),
        r.context_hash.to_hex(),
        r.checkpoint.as_ref().map(|c| c.size),
    )
        .into_pyobject(py)
}

/// A JSON value as Python: objects as dicts (in their order), arrays as lists, integers as
/// ints, other numbers as floats.
pub fn json<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for x in a {
                list.append(json(py, x)?)?;
            }
            list.into_any()
        }
        Value::Object(o) => {
            let dict = PyDict::new(py);
            for (k, x) in o {
                dict.set_item(k, json(py, x)?)?;
            }
            dict.into_any()
        }
    })
}
