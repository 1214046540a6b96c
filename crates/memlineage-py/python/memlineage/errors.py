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

#: The kind of each class: the library's ``ErrorKind`` name (``docs/errors.md``), or the
#: binding's own for the two the library has no kind for.
_KINDS: dict[type[Error], str] = {
    Error: "error",
    InputError: "invalid_input",
    PolicyError: "invalid_input",
    GateError: "invalid_input",
    RefusedError: "refused",
    IntegrityError: "integrity",
    NotFoundError: "not_found",
    ConflictError: "conflict",
    StorageError: "storage",
    UnavailableError: "unavailable",
    ClosedError: "closed",
    InternalError: "internal",
}


def _to_dict(self: Error) -> dict[str, str]:
    """The error as data: its class, its kind and its message (as the CLI prints it)."""
    return {"error": type(self).__name__, "kind": type(self).kind, "message": str(self)}


def _eq(self: Error, other: object) -> bool:
    """Errors are equal when they are of one class with the same message."""
    if not isinstance(other, Error):
        return False
    return type(self) is type(other) and bool(self.args == other.args)


def _hash(self: Error) -> int:
    return hash((type(self), self.args))


for _cls, _kind in _KINDS.items():
    _cls.kind = _kind
Error.to_dict = _to_dict  # type: ignore[method-assign]
Error.__eq__ = _eq  # type: ignore[assignment,method-assign]
Error.__hash__ = _hash  # type: ignore[assignment,method-assign]

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
