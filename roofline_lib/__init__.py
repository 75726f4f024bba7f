"""roofline_lib: the shared package of The Roofline Course (``import roofline_lib as rl``).

One folder per layer; each imports only the layers below it (the import-linter contract in
pyproject.toml, checked by ``make lint``):

    present/    plots, widgets, prose values, the site's export, JupyterLab's contents manager
    evidence/   timing and measured roofs, GPU records, Triton kernels, traces, diagnosis, live runs
    workloads/  inference, training and its memory, communication, parallelism, serving, runs
    models/     a transformer's counts from its config, the FLOP audit against torch
    core/       roofs and the plausibility guard, op counts, GPU and link registries, tiling

and the faces nothing imports: ``cli`` (the ``roofline`` command), ``grading/`` (the grader)
and ``observer`` (what a graded notebook imports).

``rl.<name>`` is every public name of core, models and workloads. The modules of every layer are
reached by their own names as well (``rl.plots``, ``from roofline_lib import measure``), imported
only when asked, so that ``import roofline_lib`` stays light (numpy only).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from . import core, models, workloads
from .core.layer import export as _export
from .core.layer import module_names as _module_names

__version__ = "0.1.0"

_LAYERS = ("core", "models", "workloads", "evidence", "present")


def _module_index() -> dict[str, str]:
    """Every layer module's short name -> its full name; a short name in two layers is refused."""
    index: dict[str, str] = {}
    for layer in _LAYERS:
        for name in _module_names([str(Path(__file__).with_name(layer))]):
            if name in index:
                raise ImportError(f"roofline_lib has two modules named {name!r}: {index[name]} and {layer}.{name}")
            index[name] = f"{__name__}.{layer}.{name}"
    return index


_MODULES = _module_index()


__all__ = sorted(_export([core, models, workloads], globals()))  # a name two layers export is refused


def __getattr__(name: str):
    """A layer's module by its short name (``rl.plots``), imported on first use."""
    if name in _MODULES:
        module = importlib.import_module(_MODULES[name])
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULES})
