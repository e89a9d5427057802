"""Sphinx configuration of autotile's documentation (``python -m sphinx -W docs docs/_build``)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "autotile"
author = "the autotile developers"
copyright = "2026, the autotile developers"  # noqa: A001 - Sphinx's name
release = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # the numpydoc sections give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
html_theme = "alabaster"
html_static_path = ["_static"]
html_theme_options = {"description": "auto-tuning of tensor programs on the CPU",
                      "fixed_sidebar": True}
