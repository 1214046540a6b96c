#!/usr/bin/env bash
# Fuzz the strict canonical CBOR decoder (crates/memlineage-core/src/canonical).
#
# With a nightly toolchain: runs the cargo-fuzz target `decode`
# (crates/memlineage-core/fuzz/fuzz_targets/decode.rs), installing cargo-fuzz if missing.
# The target checks that `decode` never panics and that whatever it accepts re-encodes to
# exactly the input bytes.
#
# Without nightly (cargo-fuzz needs -Zsanitizer): runs the proptest properties that feed
# random and mutated bytes to `decode` (tests/canonical_props.rs), with many more cases.
#
# Environment:
#   FUZZ_SECONDS    how long libFuzzer runs (default 60)
#   PROPTEST_CASES  cases per property in the fallback (default 200000)
#   FUZZ_JOBS       parallel libFuzzer jobs (default 1)
#   FUZZ_FALLBACK=1 skip cargo-fuzz and run the proptest fallback even if nightly exists
#
# Usage: scripts/fuzz-decoder.sh [extra libFuzzer flags...]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${FUZZ_SECONDS:-60}"
cases="${PROPTEST_CASES:-200000}"
jobs="${FUZZ_JOBS:-1}"

fallback() {
    echo "fuzz-decoder: $1" >&2
    echo "fuzz-decoder: falling back to the proptest byte-level properties with PROPTEST_CASES=${cases}" >&2
    cd "$root"
    PROPTEST_CASES="$cases" cargo test -p memlineage-core --test canonical_props -- \
        canonical_decode_never_panics canonical_decode_accepts_exactly
}

if [ "${FUZZ_FALLBACK:-0}" = 1 ]; then
    fallback "FUZZ_FALLBACK=1 set."
    exit 0
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
    fallback "no nightly toolchain installed (cargo +nightly fails); cargo-fuzz needs nightly."
    exit 0
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-decoder: installing cargo-fuzz (cargo install cargo-fuzz --locked)" >&2
    if ! cargo install cargo-fuzz --locked; then
        fallback "could not install cargo-fuzz."
        exit 0
    fi
fi

cd "$root/crates/memlineage-core"
mkdir -p fuzz/corpus/decode
# Seed the corpus with a few canonical encodings (RFC 8949 Appendix A items of our subset).
for seed in 00 1818 1bffffffffffffffff 6449455446 4401020304 8301820203820405 \
    a26161016162820203 826161a161626163 f4 f5 f6; do
    printf '%b' "$(printf '%s' "$seed" | sed 's/../\\x&/g')" >"fuzz/corpus/decode/seed-$seed"
done

parallel=()
if [ "$jobs" -gt 1 ]; then
    parallel=(-jobs="$jobs" -workers="$jobs")
fi

echo "fuzz-decoder: running cargo +nightly fuzz run decode for ${seconds}s" >&2
exec cargo +nightly fuzz run decode fuzz/corpus/decode -- \
    -max_total_time="$seconds" "${parallel[@]}" "$@"
