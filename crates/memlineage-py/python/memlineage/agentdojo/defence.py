"""The MemLineage defence for AgentDojo: its configuration, where each run's lineage is kept,
and the pipelines it goes into.

>>> from memlineage.agentdojo import Defence, load_config
>>> defence = Defence(load_config("banking"), repair=False)
>>> pipeline = defence.pipeline(llm)          # AgentDojo's pipeline, with the gated executor

Each run (one task) gets its own store: by default a fresh store in RAM, with the trust map's
principals registered; pass ``memory`` to keep every run in one store (each in its own scope)
for auditing afterwards (``memlineage verify``, ``memlineage log``).
"""

from __future__ import annotations

from collections.abc import Callable

from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline, load_system_message
from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.basic_elements import InitQuery, SystemMessage
from agentdojo.agent_pipeline.tool_execution import ToolsExecutionLoop

from ..memory import Memory
from .config import BridgeConfig
from .run_state import RunState


class Defence:
    """MemLineage in front of an AgentDojo agent's tools.

    - ``config``: the suite's trust map and gate policy (:func:`load_config`).
    - ``repair``: repair denied calls with values of trusted provenance (``docs/gate.md``).
    - ``memory``: one store for every run (each run in scope ``{scope}/run-N``); default a
      fresh store in RAM per run.
    - ``on_run``: called with each new run's state (the runner keeps it to report the run's
      gate decisions).
    """

    def __init__(
        self,
        config: BridgeConfig,
        *,
        repair: bool = False,
        memory: Memory | None = None,
        scope: str = "agentdojo",
        on_run: Callable[[RunState], None] | None = None,
    ) -> None:
        self.config = config
        self.repair = repair
        self.memory = memory
        self.scope = scope
        self.on_run = on_run
        self._runs = 0
        if memory is not None:
            config.trust.register(memory)

    def start_run(self) -> RunState:
        """A new run's state: a session over the store, nothing recorded yet."""
        self._runs += 1
        if self.memory is not None:
            memory, scope = self.memory, f"{self.scope}/run-{self._runs}"
        else:
            memory, scope = Memory.open("memory:"), self.scope
            self.config.trust.register(memory)
        state = RunState(self.config, memory, scope)
        if self.on_run is not None:
            self.on_run(state)
        return state

    def executor(self) -> BasePipelineElement:
        """The gated tools executor, for your own pipeline."""
        from .executor import GatedToolsExecutor

        return GatedToolsExecutor(self)

    def pipeline(
        self, llm: BasePipelineElement, *, system_message: str | None = None
    ) -> AgentPipeline:
        """AgentDojo's standard pipeline (system message, user query, model, tools loop) with
        the gated executor in place of ``ToolsExecutor``; the system message defaults to
        AgentDojo's own."""
        return undefended_pipeline(llm, system_message=system_message, executor=self.executor())


def undefended_pipeline(
    llm: BasePipelineElement,
    *,
    system_message: str | None = None,
    executor: BasePipelineElement | None = None,
) -> AgentPipeline:
    """AgentDojo's standard pipeline, as ``AgentPipeline.from_config`` builds it with no
    defence (or with ``executor`` in place of its ``ToolsExecutor``)."""
    from agentdojo.agent_pipeline.tool_execution import ToolsExecutor

    pipeline = AgentPipeline(
        [
            SystemMessage(system_message or load_system_message(None)),
            InitQuery(),
            llm,
            ToolsExecutionLoop([executor or ToolsExecutor(), llm]),
        ]
    )
    pipeline.name = llm.name
    return pipeline


__all__ = ["Defence", "undefended_pipeline"]
