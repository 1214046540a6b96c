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
if [ -z "${MEMLINEAGE_OPENAPI_VALIDATOR:-}" ] && python3 -c 'import venv' 2>/dev/null; then
    echo "== openapi-spec-validator for the service's OpenAPI test (scripts/openapi-validator.sh)"
    MEMLINEAGE_OPENAPI_VALIDATOR="$(scripts/openapi-validator.sh)"
    export MEMLINEAGE_OPENAPI_VALIDATOR
fi

# Every feature includes `postgres`: the PostgreSQL store's tests (store_suite's `postgres::`,
# pg_writers, store_faults, the CLI's migrate) start throwaway clusters with Debian's server
# binaries (crates/memlineage-pgtest), in parallel with the rest.
echo "== cargo tests (workspace, every feature)"
cargo test --workspace --release --all-features

# Optimised, integer overflow wraps silently. The core (the decoders and the gate, which read
# hostile input) is tested again with overflow checks on, in a debug build of that one crate
# (≈ 1 minute), so that an overflow fails a test instead of wrapping: one did, in the gate's
# hidden-text scan (2026-12-05, docs/status.md).
echo "== memlineage-core's tests with overflow checks (debug build)"
cargo test -p memlineage-core

echo "== python package tests (wheel, pytest, mypy --strict, ruff)"
scripts/python-test.sh
