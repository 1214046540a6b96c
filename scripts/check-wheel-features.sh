#!/usr/bin/env bash
# Checks that the Python wheel's build resolves every shared dependency with the same features as
# the workspace's test build (`cargo test --workspace --all-features`), so that maturin reuses
# the compiled crates (candle, tokenizers, serde, ...) instead of building them a second time.
# A crate whose features differ is rebuilt for the wheel together with everything above it; the
# fix is a `feature-unification-*` dependency in crates/memlineage-py/Cargo.toml (see there).
#
#   scripts/check-wheel-features.sh
#
# Only the project's own crates may differ (the wheel does not need `memlineage`'s server-side
# features). Reads the lock file; builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
tree() { cargo tree --locked -f '{p} [{f}]' --prefix none "$@" | sed 's/ (\*)$//' | sort -u; }
workspace="$(tree --workspace --all-features -e normal,build,dev)"
wheel="$(cd crates/memlineage-py && tree --features models -e normal,build)"
drift="$(comm -13 <(echo "$workspace") <(echo "$wheel") | grep -v "(/" || true)"
if [ -n "$drift" ]; then
    echo "error: the wheel's build resolves these crates with other features than the workspace's" >&2
    echo "tests, so maturin would compile them (and everything above them) a second time:" >&2
    echo "$drift" >&2
    echo "add or adjust a feature-unification-* dependency in crates/memlineage-py/Cargo.toml" >&2
    exit 1
fi
echo "the wheel's dependencies resolve as the workspace's"
