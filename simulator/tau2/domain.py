"""A tau2-bench domain as this engine runs it: tools named as tau2 names them, each a `module:function` over
the task's database; the same functions replay the gold actions at conversion time and serve the agent."""

from __future__ import annotations

__all__ = ["DomainTool", "domain_tools"]

import importlib
from typing import Any

from pydantic import Field

from simulator.errors import UserError
from simulator.models import StrictModel

# The domains this engine implements, by tau2's domain name: the module whose `TOOLS` maps names to tools.
BUILTIN = {"airline": "simulator.tau2.airline"}


class DomainTool(StrictModel):
    """One tool of a domain: its implementation (`module:function`, called as `function(state, **args)`)
    and what the bot is told about it."""

    function: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


def domain_tools(domain: str, module: str | None = None) -> dict[str, DomainTool]:
    """The tools of a domain: `module`'s `TOOLS` when given (a team's own implementation), else the
    built-in one; a UserError naming the fix when there is none."""
    name = module or BUILTIN.get(domain)
    if name is None:
        raise UserError(
            f"no tool implementations for tau2 domain '{domain}' in this engine (built in: "
            f"{', '.join(sorted(BUILTIN))}); write a module whose TOOLS maps tau2 tool names to "
            "DomainTool(function='module:function', ...) and pass it with --tools MODULE"
        )
    try:
        tools = importlib.import_module(name).TOOLS
    except (ImportError, AttributeError) as exc:
        raise UserError(
            f"--tools {name}: cannot read its TOOLS ({type(exc).__name__}: {exc}); "
            "run from the folder that contains it"
        ) from None
    if not isinstance(tools, dict) or not all(isinstance(t, DomainTool) for t in tools.values()):
        raise UserError(f"--tools {name}: TOOLS must map tool names to DomainTool objects")
    return tools
