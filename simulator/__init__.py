"""simulator: test LLM chatbots with simulated users, per-criterion judges and defensible error rates.

The public API (docs/python-api.md)::

    import simulator

    suite = simulator.load_suite("scenarios/triage/suite.yaml")
    result = simulator.run(suite, bot=my_bot)        # or: await simulator.arun(...)
    result.overall, result.under_triage              # rates with counts and Wilson intervals
    result.print(); html = result.to_html()
    board = simulator.compare(suite, models=["openai:gpt-4.1-mini", "anthropic:claude-haiku-4-5"])

Names load on first use (module `__getattr__`), so `import simulator` and `simulator --help` stay fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Public name -> the module that defines it, imported when the name is first read.
_LAZY: dict[str, str] = {
    "run": "simulator.api.running",
    "arun": "simulator.api.running",
    "resume": "simulator.api.running",
    "aresume": "simulator.api.running",
    "compare": "simulator.api.comparing",
    "acompare": "simulator.api.comparing",
    "load_suite": "simulator.api.plan",
    "Result": "simulator.api.result",
    "Comparison": "simulator.api.result",
    "Suite": "simulator.config.suite",
    "Scenario": "simulator.config.scenario",
    "Reply": "simulator.bots.base",
    "RunOptions": "simulator.engine.runner",
    "UserError": "simulator.errors",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'simulator' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
