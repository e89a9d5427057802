"""Fixtures of the ``@autotune`` tests: tiny problems, no GPU."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own disk cache and no autotuning print-out by default."""
    monkeypatch.setenv("AUTOTILE_CACHE_DIR", str(tmp_path / "autotune-cache"))
    monkeypatch.delenv("AUTOTILE_PRINT_AUTOTUNING", raising=False)
    return tmp_path / "autotune-cache"
