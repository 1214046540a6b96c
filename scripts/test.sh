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

# Every feature includes `postgres`: the PostgreSQL store's tests (store_suite's `postgres::`,
# pg_writers, store_faults, the CLI's migrate) start throwaway clusters with Debian's server
# binaries (crates/memlineage-pgtest), in parallel with the rest.
echo "== cargo tests (workspace, every feature)"
cargo test --workspace --release --all-features
