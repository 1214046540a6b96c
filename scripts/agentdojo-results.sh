#!/usr/bin/env bash
# The AgentDojo results (results/agentdojo/, docs/agentdojo.md): AgentDojo's banking and slack
# suites run by the scripted vulnerable agent under every defence (none, deny, repair), each
# with the configuration the package ships for it. Deterministic and offline; checked in CI
# like results/.
#
#   scripts/agentdojo-results.sh           # regenerate results/agentdojo/
#   scripts/agentdojo-results.sh --check   # regenerate into a temporary directory and diff
#
# Uses the venv scripts/python-test.sh builds (the wheel and the pinned `agentdojo` extra), or
# the Python named by $AGENTDOJO_PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
python="${AGENTDOJO_PYTHON:-$target/python-test-venv/bin/python}"
if ! "$python" -c 'import memlineage.agentdojo' 2>/dev/null; then
    if [ -n "${CI:-}" ] && [ "${CI}" != "0" ] && [ "${CI}" != "false" ]; then
        echo "error: $python cannot import memlineage.agentdojo (run scripts/python-test.sh first)" >&2
        exit 1
    fi
    echo "skipping the AgentDojo results: $python cannot import memlineage.agentdojo (run scripts/python-test.sh first)"
    exit 0
fi
suites=(banking slack)
run() {
    for suite in "${suites[@]}"; do
        "$python" -m memlineage.agentdojo run --suite "$suite" --defence all --quiet --out "$1"
    done
}
if [ "${1:-}" = "--check" ]; then
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    run "$out"
    if ! diff -r results/agentdojo "$out"; then
        echo "error: results/agentdojo differs from a fresh run of \`python -m memlineage.agentdojo run --suite SUITE --defence all\` (scripts/agentdojo-results.sh)" >&2
        exit 1
    fi
    echo "AgentDojo results match"
else
    run results/agentdojo
fi
