"""Errors: one hierarchy under memlineage.Error, the CLI's messages, and no panic crossing
into Python."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import memlineage
import pytest
from memlineage import (
    ClosedError,
    ConflictError,
    Error,
    GateError,
    InputError,
    IntegrityError,
    InternalError,
    Memory,
    NotFoundError,
    Policy,
    PolicyError,
    RefusedError,
    StorageError,
    UnavailableError,
    _native,
)

from .conftest import ATTACKER_IBAN, BANKING_POLICY


def test_every_error_is_a_memlineage_error() -> None:
    classes = [
        ClosedError,
        ConflictError,
        GateError,
        InputError,
        IntegrityError,
        InternalError,
        NotFoundError,
        PolicyError,
        RefusedError,
        StorageError,
        UnavailableError,
    ]
    assert all(issubclass(c, Error) for c in classes)
    assert issubclass(Error, Exception)
    assert issubclass(PolicyError, InputError) and issubclass(GateError, InputError)
    assert issubclass(UnavailableError, StorageError)
    assert memlineage.errors.Error is Error
    for c in classes:
        assert c.__module__ == "memlineage" and c.__doc__


def test_errors_are_values_with_a_kind(mem: Memory) -> None:
    with pytest.raises(RefusedError) as e:
        mem.add("x", principal="ghost")
    d = e.value.to_dict()
    assert d == {"error": "RefusedError", "kind": "refused", "message": str(e.value)}
    other: Error = InputError(str(e.value))
    assert e.value == RefusedError(str(e.value)) and e.value != other
    assert hash(e.value) == hash(RefusedError(str(e.value)))
    assert repr(e.value).startswith("RefusedError(")
    assert [c.kind for c in (InputError, NotFoundError, StorageError, UnavailableError)] == [
        "invalid_input",
        "not_found",
        "storage",
        "unavailable",
    ]


def test_a_rust_panic_becomes_an_internal_error(mem: Memory) -> None:
    with pytest.raises(InternalError, match=r"internal error.*a panic for the test"):
        _native._panic_for_test("a panic for the test")
    with pytest.raises(Error):
        _native._panic_for_test("again")
    # The process and the store are fine afterwards.
    assert mem.add("still working").label.name == "TRUSTED"
    assert mem.verify().ok


def cli_error(cli: Path, store: Path, *args: str) -> str:
    """The message the CLI prints after `error: ` (it must fail)."""
    p = subprocess.run(
        [str(cli), "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.returncode != 0, p.stdout
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error: ")]
    assert lines, p.stderr
    return lines[-1].removeprefix("error: ")


def py_error(call: Callable[[], object]) -> tuple[type[BaseException], str]:
    with pytest.raises(Error) as e:
        call()
    return type(e.value), str(e.value)


def test_messages_are_the_clis(cli: Path, disk: Memory, store_path: Path, tmp_path: Path) -> None:
    disk.principals.add("gone", "trusted")
    disk.principals.revoke("gone", "stolen laptop")
    e = disk.add("an entry")
    disk.close()
    missing = "ab" * 32
    bad_policy = tmp_path / "policy.toml"
    bad_policy.write_text('[tools.t.params]\nx = { type = "iban", require = "trusted" }\n')
    good_policy = tmp_path / "good.toml"
    good_policy.write_text(BANKING_POLICY)
    call = {"name": "send_money", "arguments": {"recipient": "hello"}}
    cases: list[tuple[type[Error], Callable[[Memory], object], list[str]]] = [
        (RefusedError, lambda m: m.add("x", principal="ghost"), ["write", "--as", "ghost", "x"]),
        (RefusedError, lambda m: m.add("x", principal="gone"), ["write", "--as", "gone", "x"]),
        (InputError, lambda m: m.add(""), ["write", ""]),
        (
            InputError,
            lambda m: m.add("x", parents=[missing]),
            ["write", "--parent", missing, "x"],
        ),
        (NotFoundError, lambda m: m.get(missing), ["get", missing]),
        (
            RefusedError,
            lambda m: m.principals.add("gone", "trusted"),
            ["principal", "add", "gone", "--class", "trusted"],
        ),
        (
            RefusedError,
            lambda m: m.principals.revoke("ghost", "x"),
            ["principal", "revoke", "ghost", "--reason", "x"],
        ),
        (
            RefusedError,
            lambda m: m.distrust(principal="ghost"),
            ["distrust", "--principal", "ghost"],
        ),
        (
            PolicyError,
            lambda m: Policy.from_toml(str(bad_policy)),
            ["gate", "--policy", str(bad_policy), "--call", "{}", "--context", e.id],
        ),
        (
            GateError,
            lambda m: m.gate(Policy.from_toml(good_policy), call, [e]),
            ["gate", "--policy", str(good_policy), "--call", json.dumps(call), "--context", e.id],
        ),
    ]
    for cls, case, args in cases:
        with Memory.open(store_path) as m:
            got_cls, got = py_error(lambda: case(m))  # noqa: B023 - called at once
        assert got_cls is cls, (args, got)
        assert got == cli_error(cli, store_path, *args), args


def test_verification_failure_message_is_the_clis(
    cli: Path, disk: Memory, store_path: Path
) -> None:
    import sqlite3

    e = disk.add(f"pay {ATTACKER_IBAN}")
    disk.close()
    with sqlite3.connect(store_path) as db:
        db.execute("UPDATE content SET bytes = ? WHERE idx = ?", (b"pay nobody", e.index))
    with Memory.open(store_path) as m:
        _, got = py_error(lambda: m.verify().raise_for_problems())
        assert got == cli_error(cli, store_path, "verify")
        _, got = py_error(lambda: m.get(e.id))
        assert got == cli_error(cli, store_path, "get", e.id)
