"""The exceptions of memlineage: every one a subclass of :class:`Error`.

Messages are the ones the ``memlineage`` CLI prints after ``error:`` for the same failure. The
classes follow the CLI's exit codes: bad input (exit 2) is :class:`InputError` and its
subclasses; a refused or failed operation (exit 1) is :class:`RefusedError`,
:class:`IntegrityError`, :class:`NotFoundError`, :class:`ConflictError` or
:class:`StorageError`. A Rust panic never
reaches Python as such: it is raised as :class:`InternalError`.

::

    Error
    ├── InputError          malformed id, weight, scope, name, kind, content, tool call …
    │   ├── PolicyError     a gate policy that cannot be used (line and column)
    │   └── GateError       a call the gate cannot judge: never dispatch it
    ├── RefusedError        unregistered / revoked / key-less principal, laxer label rule …
    ├── IntegrityError      stored data failed verification: never trust it
    ├── NotFoundError       no entry with this id
    ├── ConflictError       a concurrent distrust made a write stale: write it again
    ├── StorageError        the store cannot be used (missing, SQLite, I/O)
    │   └── UnavailableError  cannot be reached, or not built in: retry or rebuild
    ├── ClosedError         the Memory was closed
    └── InternalError       a bug (a caught Rust panic)
"""

from __future__ import annotations

from ._native import (
    ClosedError,
    ConflictError,
    Error,
    GateError,
    InputError,
    IntegrityError,
    InternalError,
    NotFoundError,
    PolicyError,
    RefusedError,
    StorageError,
    UnavailableError,
)

__all__ = [
    "ClosedError",
    "ConflictError",
    "Error",
    "GateError",
    "InputError",
    "IntegrityError",
    "InternalError",
    "NotFoundError",
    "PolicyError",
    "RefusedError",
    "StorageError",
    "UnavailableError",
]
