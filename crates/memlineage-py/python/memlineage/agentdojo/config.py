"""What the bridge is configured with: the suite, the trust map and the gate policy.

Nothing in the bridge knows a suite: the suite's name and benchmark version select AgentDojo's
own task suite, and two files written from the suite's *tool documentation* say everything
MemLineage needs — who authored each tool's results (a trust map, ``docs/python.md``, "Trust
map files") and which calls are sensitive and how each parameter must be justified (a gate
policy, ``docs/gate.md``). The package ships the files for the suites it was tried on
(``configs/<suite>/trust.toml`` and ``policy.toml``); pass your own for any other suite, or to
replace them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import InputError
from ..gate import Policy
from ..trust import TrustMap

#: The AgentDojo release the bridge is built and tested against (the ``agentdojo`` extra).
AGENTDOJO_VERSION = "0.1.35"
#: The benchmark version it runs by default (AgentDojo 0.1.35's default).
DEFAULT_BENCHMARK_VERSION = "v1.2.2"


@dataclass(frozen=True)
class BridgeConfig:
    """A suite and the two files that configure MemLineage for it."""

    suite: str
    benchmark_version: str
    trust: TrustMap
    policy: Policy
    #: Where the trust map and the policy were read from (for reports), and the SHA-256 of
    #: their text, so a result says exactly which configuration produced it.
    trust_source: str
    policy_source: str
    trust_sha256: str
    policy_sha256: str


def shipped_suites() -> list[str]:
    """The suites the package ships a configuration for."""
    root = resources.files(__package__).joinpath("configs")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("_"))


def _shipped(suite: str, name: str) -> tuple[str, str]:
    f = resources.files(__package__).joinpath("configs").joinpath(suite).joinpath(name)
    if not f.is_file():
        raise InputError(
            f"no shipped {name} for the suite {suite!r} (shipped: "
            f"{', '.join(shipped_suites()) or 'none'}): pass --trust and --policy files written "
            "from the suite's tool documentation"
        )
    return f"memlineage.agentdojo:configs/{suite}/{name}", f.read_text(encoding="utf-8")


def _read(path: str | os.PathLike[str], what: str) -> tuple[str, str]:
    p = Path(path)
    try:
        return str(p), p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read the {what} {p}: {e}") from e


def load_config(
    suite: str,
    *,
    trust: str | os.PathLike[str] | None = None,
    policy: str | os.PathLike[str] | None = None,
    benchmark_version: str = DEFAULT_BENCHMARK_VERSION,
) -> BridgeConfig:
    """The configuration for ``suite``: the given trust map and policy files, else the ones the
    package ships for that suite."""
    trust_source, trust_text = (
        _read(trust, "trust map") if trust is not None else _shipped(suite, "trust.toml")
    )
    policy_source, policy_text = (
        _read(policy, "policy") if policy is not None else _shipped(suite, "policy.toml")
    )
    try:
        trust_map = TrustMap.from_toml(trust_text)
    except InputError as e:
        raise InputError(f"{trust_source}: {e}") from e
    pol = Policy.from_text(policy_text, policy_source)
    return BridgeConfig(
        suite=suite,
        benchmark_version=benchmark_version,
        trust=trust_map,
        policy=pol,
        trust_source=trust_source,
        policy_source=policy_source,
        trust_sha256=hashlib.sha256(trust_text.encode("utf-8")).hexdigest(),
        policy_sha256=hashlib.sha256(policy_text.encode("utf-8")).hexdigest(),
    )


__all__ = [
    "AGENTDOJO_VERSION",
    "DEFAULT_BENCHMARK_VERSION",
    "BridgeConfig",
    "load_config",
    "shipped_suites",
]
