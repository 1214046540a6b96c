#!/usr/bin/env bash
# The Python package's tests (crates/memlineage-py, docs/python.md): build the abi3 wheel with
# maturin (reusing the cargo target directory), install it into a fresh venv with the pinned
# test dependencies (crates/memlineage-py/requirements-dev.txt: maturin, pytest, mypy, ruff,
# and the real LangGraph, OpenAI Agents SDK and Anthropic packages the adapters are tested
# against), then run pytest, `mypy --strict` on the package, its examples and tests, and ruff.
#
# The wheel has the cargo feature `models` (pyproject.toml asks for it), so semantic and hybrid
# search are tested against the real embedding model, which scripts/fetch-embedding-model.sh
# installs; without its files those tests skip with the reason, except under CI=1.
#
#   scripts/python-test.sh [PYTEST ARGS...]
#
# Needs python3 (>= 3.10) with the venv module and a PyPI mirror or index; CI installs them
# (.ci/run). Without python3 it says so and passes, except under CI=1, where it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
python="${PYTHON:-python3}"
if ! "$python" -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    if [ -n "${CI:-}" ] && [ "${CI}" != "0" ] && [ "${CI}" != "false" ]; then
        echo "error: $python (>= 3.10, with venv) is needed for the Python tests" >&2
        exit 1
    fi
    echo "skipping the Python tests: $python (>= 3.10, with the venv module) is missing"
    exit 0
fi
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
venv="$target/python-test-venv"
wheels="$target/python-wheels"

echo "== python: a fresh venv with the test dependencies ($venv)"
rm -rf "$venv" "$wheels"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check \
    -r crates/memlineage-py/requirements-dev.txt

echo "== python: the wheel (maturin, release, abi3, feature models)"
CARGO_TARGET_DIR="$target" "$venv/bin/maturin" build --quiet --release \
    -m crates/memlineage-py/Cargo.toml --out "$wheels" --interpreter "$venv/bin/python"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$wheels"/memlineage-*.whl

cd crates/memlineage-py
echo "== python: pytest (against the installed wheel)"
CARGO_TARGET_DIR="$target" "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" tests
echo "== python: mypy --strict (package, examples, tests, benchmark)"
"$venv/bin/mypy" --strict --cache-dir "$target/mypy-cache" python/memlineage examples tests bench
echo "== python: ruff"
"$venv/bin/ruff" check --no-cache python examples tests bench
"$venv/bin/ruff" format --no-cache --check python examples tests bench
