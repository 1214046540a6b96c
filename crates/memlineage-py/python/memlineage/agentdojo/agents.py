"""The agents the bridge evaluates, and the attack aimed at them.

- ``scripted``: :class:`~memlineage.agentdojo.scripted.ScriptedAgent`, deterministic, no network.
- ``openai``: any model behind an OpenAI-compatible chat-completions endpoint with tool calls
  (OpenAI, or a local server: vLLM, llama.cpp's ``llama-server``, Ollama, …), through
  AgentDojo's own ``OpenAILLM`` pipeline element. Configured by :class:`OpenAIConfig`, or the
  environment: ``MEMLINEAGE_AGENTDOJO_MODEL``, ``MEMLINEAGE_AGENTDOJO_BASE_URL`` (else
  ``OPENAI_BASE_URL``, else OpenAI's), and the API key in ``OPENAI_API_KEY`` (or the variable
  ``api_key_env`` names).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.attacks.attack_registry import ATTACKS, load_attack
from agentdojo.attacks.base_attacks import DEFAULT_MODEL_NAME, BaseAttack
from agentdojo.task_suite.task_suite import TaskSuite

from ..errors import InputError


@dataclass(frozen=True)
class OpenAIConfig:
    """Where the model is and how to call it."""

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = 0.0
    #: Seconds before a request gives up, and how often the client retries.
    timeout: float = 120.0
    max_retries: int = 2

    @classmethod
    def from_env(
        cls, model: str | None = None, base_url: str | None = None, api_key_env: str | None = None
    ) -> OpenAIConfig:
        """The arguments given, else ``MEMLINEAGE_AGENTDOJO_MODEL`` /
        ``MEMLINEAGE_AGENTDOJO_BASE_URL`` (else ``OPENAI_BASE_URL``)."""
        m = model or os.environ.get("MEMLINEAGE_AGENTDOJO_MODEL")
        if not m:
            raise InputError(
                "the openai agent needs a model: --model NAME (or MEMLINEAGE_AGENTDOJO_MODEL)"
            )
        url = (
            base_url
            or os.environ.get("MEMLINEAGE_AGENTDOJO_BASE_URL")
            or os.environ.get("OPENAI_BASE_URL")
        )
        return cls(model=m, base_url=url, api_key_env=api_key_env or "OPENAI_API_KEY")


def openai_agent(config: OpenAIConfig) -> BasePipelineElement:
    """AgentDojo's ``OpenAILLM`` element for ``config`` (no request is made until it runs).
    A local server that needs no key gets the placeholder key ``EMPTY``, as AgentDojo's own
    local provider sends."""
    import openai
    from agentdojo.agent_pipeline.llms.openai_llm import OpenAILLM

    key = os.environ.get(config.api_key_env)
    if not key and config.base_url is None:
        raise InputError(
            f"the openai agent needs an API key in ${config.api_key_env}, or --base-url for a "
            "local OpenAI-compatible server"
        )
    client = openai.OpenAI(
        api_key=key or "EMPTY",
        base_url=config.base_url,
        timeout=config.timeout,
        max_retries=config.max_retries,
    )
    llm = OpenAILLM(client, config.model, temperature=config.temperature)
    llm.name = config.model
    return llm


class _Named(BasePipelineElement):
    """A stand-in that carries only a pipeline name, for attacks that read the victim model's
    name from it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def query(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never run
        raise NotImplementedError


def attack_for(name: str, suite: TaskSuite[Any], pipeline: BasePipelineElement) -> BaseAttack:
    """AgentDojo's attack ``name`` against ``pipeline``. Attacks such as
    ``important_instructions`` address the victim by its model's name, looked up from the
    pipeline's name; a pipeline whose model AgentDojo does not know (the scripted agent, a
    local model) is addressed as "the AI language model", as AgentDojo's ``…_no_model_name``
    variants do."""
    if name not in ATTACKS:
        raise InputError(f"unknown attack {name!r} (AgentDojo has: {', '.join(sorted(ATTACKS))})")
    try:
        return load_attack(name, suite, pipeline)
    except ValueError:
        attack = load_attack(name, suite, _Named("local"))
        if hasattr(attack, "model_name"):
            attack.model_name = DEFAULT_MODEL_NAME
        attack.target_pipeline = pipeline
        return attack


__all__ = ["OpenAIConfig", "attack_for", "openai_agent"]
