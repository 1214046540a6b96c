"""Adapters for agent frameworks, each an optional extra of the package:

- :mod:`memlineage.integrations.langgraph` (``pip install "memlineage[langgraph]"``): a
  LangGraph ``BaseStore`` over the signed store.
- :mod:`memlineage.integrations.openai_agents` (``pip install "memlineage[openai-agents]"``):
  a tool guardrail and a ``FunctionTool`` wrapper that gate calls with a policy.
"""
