#!/usr/bin/env bash
# openapi-spec-validator (PyPI, pinned; a validator this project did not write) in a virtual
# environment under the cargo target directory, for the service's OpenAPI test
# (crates/memlineage-server/tests/openapi.rs finds it through MEMLINEAGE_OPENAPI_VALIDATOR).
# Prints the validator's path; installs only when it is missing.
#
#   export MEMLINEAGE_OPENAPI_VALIDATOR="$(scripts/openapi-validator.sh)"
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
venv="$target/openapi-venv"
if ! "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("openapi-spec-validator") == "0.9.0"' 2>/dev/null; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'openapi-spec-validator==0.9.0' >&2
fi
echo "$venv/bin/openapi-spec-validator"
