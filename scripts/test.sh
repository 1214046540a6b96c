#!/usr/bin/env bash
# Every test of the project, in one command (the README's test command; `.ci/run` calls it):
# the cargo tests of the whole workspace with every feature, then the Python package's tests
# when the package is part of the tree.
#
#   scripts/test.sh            # all of them
#
# Tests that need an external program (a model file, PostgreSQL, Go, a Python package) say why
# and pass when it is missing, except under CI=1, where a missing program fails them.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${MEMLINEAGE_TEST_PYTHON:-}" ] && python3 -c 'import venv' 2>/dev/null; then
    echo "== the official MCP Python SDK for the MCP tests (scripts/mcp-sdk.sh)"
    MEMLINEAGE_TEST_PYTHON="$(scripts/mcp-sdk.sh)"
    export MEMLINEAGE_TEST_PYTHON
fi

echo "== cargo tests (workspace, every feature)"
cargo test --workspace --release --all-features

echo "== python package tests (wheel, pytest, mypy --strict, ruff)"
scripts/python-test.sh
