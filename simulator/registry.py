"""Kinds registered by name (bot kinds, report sections, documents): the core looks a kind up instead of
switching on its name, so a new kind is its own module plus one registration.

A registry knows the modules of its built-in kinds by name and imports them on the first lookup, so
importing the registry (or running `simulator --help`) imports none of them; each module registers its
kinds when imported. An installed package adds kinds the same way: its module, named by an entry point in
the registry's group, is imported on the first lookup too. Looking up a name that is not registered is a
UserError with a did-you-mean and the names there are.
"""

from __future__ import annotations

__all__ = ["Registry"]

import importlib
import importlib.metadata
from collections.abc import Iterator
from typing import Generic, TypeVar

from simulator.errors import UserError, did_you_mean, hint_then

K = TypeVar("K")


class Registry(Generic[K]):
    """Named kinds of one sort. `what` names a kind in messages ("bot type"); `builtins` are the modules
    that register the built-in kinds and `group` the entry-point group of packages that add kinds, all
    imported on first use."""

    def __init__(
        self, what: str, builtins: tuple[str, ...] = (), group: str | None = None, *, by_name: bool = False
    ) -> None:
        self.what = what
        # `by_name`: a lookup imports the built-in modules only until the name is registered (see `find`).
        self._by_name = by_name
        self._builtins = builtins
        self._group = group
        self._kinds: dict[str, K] = {}
        self._sources: dict[str, str] = {}
        self._loaded = False
        self._imported = 0  # how many of `builtins` are imported

    def register(self, name: str, kind: K, source: str) -> K:
        """Add `kind` under `name`, from the module `source`. The same module registering again replaces its
        kind (a module imported anew); another module taking a registered name is a programming error."""
        if self._by_name and source not in self._builtins and self._imported < len(self._builtins):
            self._import_builtins()  # the built-ins first, as if the first lookup had imported them all
        if name in self._kinds and self._sources[name] != source:
            raise ValueError(
                f"{self.what} '{name}' is registered already by {self._sources[name]}; choose another name"
            )
        self._kinds[name] = kind
        self._sources[name] = source
        return kind

    def unregister(self, name: str) -> None:
        """Remove a kind (a test that registered its own)."""
        self._kinds.pop(name, None)
        self._sources.pop(name, None)

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True  # first: a built-in module that looks a kind up while importing must not loop
            self._import_builtins()
            if self._group is not None:
                for entry in importlib.metadata.entry_points(group=self._group):
                    try:
                        entry.load()  # its module registers its kinds
                    except Exception as exc:  # a broken plugin is the user's to fix, never a traceback
                        raise UserError(
                            f"the {self.what} plugin '{entry.name}' ({entry.value}) failed to load: "
                            f"{type(exc).__name__}: {exc}; fix or uninstall the package that provides it"
                        ) from None

    def _import_builtins(self, until: str | None = None) -> None:
        """Import the built-in modules in their order, stopping once `until` is registered: a run looks up
        one bot type, and importing every kind's module (the phone line's, WhatsApp's) cost a twentieth
        of its start-up (with `by_name`). Every other question (the names, the kinds, a name not found)
        imports them all, and so does a kind registered from elsewhere (a plugin, a test) into a `by_name`
        registry, so that the built-ins stay first."""
        while self._imported < len(self._builtins) and (until is None or until not in self._kinds):
            self._imported += 1  # first, as in _load: a module that looks a kind up while importing
            importlib.import_module(self._builtins[self._imported - 1])

    def find(self, name: str) -> K | None:
        """The kind named `name`, or None."""
        if self._by_name and name not in self._kinds:
            self._import_builtins(until=name)
        if name not in self._kinds:
            self._load()
        return self._kinds.get(name)

    def get(self, name: str) -> K:
        """The kind named `name`; a UserError naming the closest names and every name otherwise."""
        kind = self.find(name)
        if kind is None:
            raise UserError(self.unknown(name))
        return kind

    def unknown(self, name: object) -> str:
        """The message for a name that is not registered: the closest match, then every name."""
        names = self.names()
        hint = hint_then(did_you_mean(name, names)) if isinstance(name, str) else ""
        return f"unknown {self.what} {name!r}; {hint}{self.what}s: {', '.join(names)}"

    def names(self) -> list[str]:
        """Every registered name, in registration order (built-ins first)."""
        self._load()
        return list(self._kinds)

    def kinds(self) -> list[K]:
        """Every registered kind, in registration order."""
        self._load()
        return list(self._kinds.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
