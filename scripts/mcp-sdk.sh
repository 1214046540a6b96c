#!/usr/bin/env bash
# The official MCP Python SDK (PyPI `mcp`, pinned) in a virtual environment under the cargo
# target directory, for the MCP gateway's tests (docs/mcp.md): they find it through
# MEMLINEAGE_TEST_PYTHON. Prints the interpreter's path; installs only when it is missing.
#
#   export MEMLINEAGE_TEST_PYTHON="$(scripts/mcp-sdk.sh)"
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
venv="$target/mcp-venv"
if ! "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("mcp") == "2.3.0"' 2>/dev/null; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'mcp==2.3.0' >&2
fi
echo "$venv/bin/python"
