"""autotile: auto-tuning and design-space exploration of tensor programs.

Layers, in data-flow order: ``lang`` and ``te`` (kernels and compute
definitions) -> ``space`` (knobs, spaces, templates) -> ``measure``
(interpreter runs, simulators, hardware profiles) -> ``cost_model`` ->
``search`` (searchers, studies, reports).
"""

from __future__ import annotations

from autotile import errors

__all__ = ["errors", "__version__"]

__version__ = "0.1.0"
