"""The examples run, end to end, and do what their docstrings say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(name: str, *args: str, cwd: Path | None = None) -> str:
    p = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        check=False,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_quickstart(tmp_path: Path) -> None:
    out = run("quickstart.py")
    assert out.startswith("DERIVED_UNTRUSTED") and "audit: ok" in out
    # Kept on disk, twice on the same store.
    store = str(tmp_path / "qs" / "store.db")
    run("quickstart.py", store)
    assert "audit: ok" in run("quickstart.py", store)


def test_laundering_demo_reproduces_the_cli_demo(tmp_path: Path) -> None:
    out = run("laundering_demo.py", cwd=tmp_path)  # the CLI's default store, created
    assert (tmp_path / ".memlineage" / "store.db").is_file()
    assert "agent summary" in out and "DERIVED_UNTRUSTED" in out
    assert "Gate (deny mode):\n  decision: deny" in out
    assert 'repaired recipient: "UK12345678901234567890" -> "GB29NWBK60161331926819"' in out
    assert "lineage to the untrusted root" in out and "every signature" in out
    again = run("laundering_demo.py", cwd=tmp_path)  # repeatable on the same store
    assert "scope demo/py-run-" in again


def test_semantic_search(embedder: None, tmp_path: Path) -> None:
    out = run("semantic_search.py")
    lexical, semantic, hybrid = out.splitlines()[:3]
    assert lexical.startswith(" lexical:") and "Kowalski" not in lexical
    assert "TRUSTED Dr. Kowalski" in semantic.split(",")[0]
    assert "Kowalski" in hybrid and "EXTERNAL" in out
    # Kept on disk: the second run loads the saved index.
    store = str(tmp_path / "sem" / "store.db")
    run("semantic_search.py", store)
    assert "loaded: " in run("semantic_search.py", store)


@pytest.mark.parametrize(
    ("name", "module", "extra"),
    [
        ("langgraph_store.py", "langgraph", "langgraph"),
        ("openai_agents_gate.py", "agents", "openai-agents"),
    ],
)
def test_adapter_examples(name: str, module: str, extra: str) -> None:
    from .conftest import import_or_skip

    import_or_skip(module, extra)
    out = run(name)
    assert out.strip()
