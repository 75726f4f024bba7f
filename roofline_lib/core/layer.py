"""How a layer of the package gathers its modules' public names: every module, no hand-kept list."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, MutableMapping
from types import ModuleType

__all__: list[str] = []  # the package's machinery, not part of the course's API


def module_names(path: Iterable[str]) -> list[str]:
    """The public modules in a layer's folder (``path``, its ``__path__``), in file-name order."""
    return sorted(info.name for info in pkgutil.iter_modules(list(path)) if not info.name.startswith("_"))


def gather(
    package: str, path: Iterable[str], namespace: MutableMapping[str, object], on_demand: Iterable[str] = ()
) -> list[str]:
    """Import each module of ``package`` and copy the names in its ``__all__`` into ``namespace``.

    ``on_demand`` names the modules left out (they need torch, say): they are imported by name.

    Returns the names copied (the layer's ``__all__``). Two modules that export one name for two
    different objects are refused: the name would otherwise mean whichever module came last.
    """
    modules = [importlib.import_module(f"{package}.{name}") for name in module_names(path) if name not in on_demand]
    return export(modules, namespace)


def export(modules: Iterable[ModuleType], namespace: MutableMapping[str, object]) -> list[str]:
    """Copy the names in each module's ``__all__`` into ``namespace``; a name two of them mean differently is refused."""
    exported: dict[str, str] = {}
    for module in modules:
        for public in getattr(module, "__all__", ()):
            value = getattr(module, public)
            if public in exported and namespace[public] is not value:
                raise ImportError(
                    f"{module.__name__} and {exported[public]} both export {public!r}: "
                    "a layer's public names must be unique"
                )
            exported[public] = module.__name__
            namespace[public] = value
    return list(exported)
