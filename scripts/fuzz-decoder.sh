#!/usr/bin/env bash
# Fuzz the strict decoders of crates/memlineage-core, each for a bounded time:
#
#   decode           canonical CBOR (src/canonical): never panics; accepts only canonical bytes
#   entry_leaf       log leaves (SignedEntry::from_leaf, docs/formats.md "Log leaf")
#   control_records  registry, tombstone and distrust contents (docs/formats.md)
#   checkpoint_note  C2SP signed notes and tlog checkpoints (src/checkpoint)
#
# The targets are in crates/memlineage-core/fuzz/fuzz_targets/; the last three run the checks
# of memlineage_core::fuzz_checks, which tests/decoder_props.rs also runs in the normal test
# suite (deterministically, with a fixed seed).
#
# With a nightly toolchain: runs every target (or those named on the command line) with
# cargo-fuzz for FUZZ_SECONDS each, installing cargo-fuzz if missing.
# Without nightly (cargo-fuzz needs -Zsanitizer): runs the proptest properties that feed
# random and damaged bytes to the same decoders (tests/canonical_props.rs and
# tests/decoder_props.rs), with many more cases.
#
# Environment:
#   FUZZ_SECONDS    how long libFuzzer runs each target (default 60)
#   PROPTEST_CASES  cases per property in the fallback (default 200000)
#   FUZZ_JOBS       parallel libFuzzer jobs per target (default 1)
#   FUZZ_FALLBACK=1 skip cargo-fuzz and run the proptest fallback even if nightly exists
#
# Usage: scripts/fuzz-decoder.sh [TARGET...]        e.g. scripts/fuzz-decoder.sh entry_leaf
# The whole run is bounded: at most FUZZ_SECONDS per target (plus the build).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${FUZZ_SECONDS:-60}"
cases="${PROPTEST_CASES:-200000}"
jobs="${FUZZ_JOBS:-1}"
all_targets=(decode entry_leaf control_records checkpoint_note)
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=("${all_targets[@]}")
fi
for t in "${targets[@]}"; do
    case " ${all_targets[*]} " in
    *" $t "*) ;;
    *)
        echo "fuzz-decoder: unknown target \`$t\` (expected one of: ${all_targets[*]})" >&2
        exit 2
        ;;
    esac
done

fallback() {
    echo "fuzz-decoder: $1" >&2
    echo "fuzz-decoder: falling back to the proptest byte-level properties with PROPTEST_CASES=${cases}" >&2
    cd "$root"
    PROPTEST_CASES="$cases" cargo test --release -p memlineage-core --test canonical_props -- \
        canonical_decode_never_panics canonical_decode_accepts_exactly
    PROPTEST_CASES="$cases" cargo test --release -p memlineage-core --test decoder_props
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

# Writes the bytes given as hex to a seed file of a target's corpus.
seed() {
    local target="$1" name="$2" hex="$3"
    mkdir -p "fuzz/corpus/$target"
    printf '%b' "$(printf '%s' "$hex" | sed 's/../\\x&/g')" >"fuzz/corpus/$target/seed-$name"
}

# decode: a few canonical encodings (RFC 8949 Appendix A items of our subset).
for s in 00 1818 1bffffffffffffffff 6449455446 4401020304 8301820203820405 \
    a26161016162820203 826161a161626163 f4 f5 f6; do
    seed decode "$s" "$s"
done
# entry_leaf: the known-answer leaf, {"sig": …, "body": …} (tests/kat).
kat="tests/kat"
seed entry_leaf kat "a2637369675840$(tr -d '\n' <"$kat/entry_sig.hex")64626f6479$(tr -d '\n' <"$kat/entry_body.hex")"
# control_records: a principal distrust and an erasing tombstone.
seed control_records distrust "a266726561736f6e60697072696e636970616c63776562"
seed control_records tombstone "a3656572617365f566726561736f6e60667461726765745820$(printf '07%.0s' $(seq 32))"
# checkpoint_note: a checkpoint note with a (wrong) signature line.
mkdir -p fuzz/corpus/checkpoint_note
printf 'example.org/log\n42\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\xe2\x80\x94 example.org/log AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n' \
    >fuzz/corpus/checkpoint_note/seed-note

parallel=()
if [ "$jobs" -gt 1 ]; then
    parallel=(-jobs="$jobs" -workers="$jobs")
fi

for t in "${targets[@]}"; do
    echo "fuzz-decoder: running cargo +nightly fuzz run $t for ${seconds}s" >&2
    cargo +nightly fuzz run "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$seconds" "${parallel[@]}"
done
echo "fuzz-decoder: ${#targets[@]} target(s) ran ${seconds}s each without a failure" >&2
