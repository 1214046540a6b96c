"""MemLineage inside AgentDojo's own pipeline (``pip install "memlineage[agentdojo]"``).

AgentDojo (Debenedetti et al., NeurIPS 2024 Datasets and Benchmarks; the ``agentdojo`` package,
MIT licence) is the benchmark the prompt-injection defences report on. This module plugs
MemLineage into it as a defence — a tools executor that records what the model saw as signed,
labelled entries and gates every sensitive call on that lineage — and evaluates it on AgentDojo's
own suites, environments, attacks and checks:

>>> from memlineage.agentdojo import Defence, load_config
>>> defence = Defence(load_config("banking"), repair=False)
>>> pipeline = defence.pipeline(llm)          # llm: any AgentDojo LLM element

or from a shell: ``python -m memlineage.agentdojo run --suite banking --defence deny``.
See ``docs/agentdojo.md``.
"""

from __future__ import annotations

from .agents import OpenAIConfig, attack_for, openai_agent
from .config import (
    AGENTDOJO_VERSION,
    DEFAULT_BENCHMARK_VERSION,
    BridgeConfig,
    load_config,
    shipped_suites,
)
from .defence import Defence, undefended_pipeline
from .executor import GatedToolsExecutor
from .run import DEFENCES, results_json, results_path, run_suite
from .run_state import STATE_KEY, CallRecord, ContextItem, RunState
from .scripted import ScriptedAgent

__all__ = [
    "AGENTDOJO_VERSION",
    "DEFAULT_BENCHMARK_VERSION",
    "DEFENCES",
    "STATE_KEY",
    "BridgeConfig",
    "CallRecord",
    "ContextItem",
    "Defence",
    "GatedToolsExecutor",
    "OpenAIConfig",
    "RunState",
    "ScriptedAgent",
    "attack_for",
    "load_config",
    "openai_agent",
    "results_json",
    "results_path",
    "run_suite",
    "shipped_suites",
    "undefended_pipeline",
]
