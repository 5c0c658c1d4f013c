"""`module:attr` names in suite files (a bot factory, a tool function) imported in one place, so every such
name fails the same way: one message naming the spec and what is wrong, never a traceback."""

from __future__ import annotations

__all__ = ["import_callable"]

import importlib
import sys
from collections.abc import Callable
from typing import Any


def import_callable(spec: str, form: str, example: str) -> Callable[..., Any]:
    """Import `module:attr` (attr may be dotted) and return it; ValueError naming `spec` when the name is
    malformed, the module cannot be imported (or raises while importing), the attribute is missing, or it
    is not callable. `form` and `example` show what is expected (`module:factory`, `examples.triage_bot:make_bot`)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"'{spec}' must look like {form} (e.g. {example})")
    if module_name not in sys.modules:
        # A module file written after this process first looked in its folder (a test, a notebook, the
        # pytest plugin's suites) is invisible to the finders' cached listings until they are refreshed.
        importlib.invalidate_caches()
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an ImportError, or the module raised while importing
        raise ValueError(
            f"cannot import module '{module_name}' of '{spec}' ({type(exc).__name__}: {exc}); run from the "
            "folder that contains it or install it"
        ) from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ValueError(f"module '{module_name}' has no attribute '{attr}' (from '{spec}')")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"'{spec}' is not callable; point it at a function or class")
    return target
