"""autotile: auto-tuning and design-space exploration of tensor programs.

Layers, in data-flow order: ``lang`` and ``te`` (kernels and compute
definitions) -> ``space`` (knobs, spaces, templates) -> ``kernels`` (the
library, one ``KernelSpec`` per kernel, and its registry) -> ``measure``
(interpreter runs, simulators, hardware profiles) -> ``cost_model`` ->
``search`` (searchers, studies, reports) -> ``tuner`` (``@autotune``).
"""

from __future__ import annotations

from typing import Any

from autotile import errors

__all__ = ["errors", "__version__", "create_study", "tune", "autotune", "Config", "perf_model"]

_LAZY = {"create_study": "autotile.search", "tune": "autotile.search",
         "autotune": "autotile.tuner", "Config": "autotile.tuner",
         "perf_model": "autotile.tuner"}


def __getattr__(name: str) -> Any:
    """Import the lazily exported names (``_LAZY``) on first use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'autotile' has no attribute {name!r}")

__version__ = "0.1.0"
