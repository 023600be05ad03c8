"""Sphinx configuration of the pyg_sar documentation (``sphinx-build -W -b html docs OUT``)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # autodoc imports the package from this checkout
sys.path.insert(0, str(ROOT / "docs" / "_ext"))  # portdiff: the port-diff directive

import pyg_sar  # noqa: E402

project = "pyg_sar"
author = "the pyg_sar authors"
copyright = "the pyg_sar authors"
release = pyg_sar.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "portdiff",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "porting", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# Types named in signatures that Sphinx cannot resolve without intersphinx (no network in CI).
nitpicky = False

html_theme = "alabaster"
html_title = f"pyg_sar {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
