"""Sphinx configuration for the cuda_core documentation.

Build locally (not part of CI); autodoc imports the installed package, which needs
``cuda-bindings`` but no GPU or driver::

    python3 -m pip install . sphinx
    sphinx-build -b html docs docs/_build/html
"""

import os
import re

_HERE = os.path.dirname(os.path.abspath(__file__))

# The version is read from the source tree so that it matches the checkout being documented.
with open(os.path.join(_HERE, os.pardir, "cuda_core", "_version.py")) as _f:
    release = re.search(r'__version__\s*=\s*"([^"]+)"', _f.read()).group(1)
version = ".".join(release.split(".")[:2])

project = "cuda_core"
author = "cuda_core contributors"
copyright = "cuda_core contributors"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

# Docstrings are numpydoc style (Parameters / Returns / Raises sections).
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

# Signatures of the Cython modules come from Cython's embedsignature (see CMakeLists.txt).
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
}

templates_path = []
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = []



def _keep_inline_summary(app, what, name, obj, options, lines):
    # Napoleon reads the first line of an attribute or property docstring as "type: text" and
    # moves the part before the colon into a ":type:" field. That mangles summaries such as
    # "Always False: a primary context lives as long as the process". Our docstrings never use
    # that convention (types come from the signatures and .pyi stubs), so put the line back
    # together. This runs after napoleon (priority 600 > 500).
    if what not in ("attribute", "property") or len(lines) < 2:
        return
    if not (lines[-1].startswith(":type: ") and lines[-2] == ""):
        return
    head = lines[-1][len(":type: "):]
    del lines[-2:]
    for i, line in enumerate(lines):
        if line.strip():
            lines[i] = f"{head}: {line}"
            return
    lines[:] = [head]


def _drop_embedded_signature(app, what, name, obj, options, lines):
    # Cython's embedsignature puts "Name(args)" on the first docstring line. autodoc reads it
    # as the signature and removes it, except where api.rst gives the signature explicitly
    # (LaunchConfig: Cython renders its keyword-only argument after a trailing "*"). Remove the
    # line there too, so that it is not rendered as text.
    if what != "class" or not lines:
        return
    short = name.rsplit(".", 1)[-1]
    if lines[0].startswith(short + "(") and lines[0].rstrip().endswith(")"):
        del lines[0]
        while lines and not lines[0].strip():
            del lines[0]


def setup(app):
    app.connect("autodoc-process-docstring", _keep_inline_summary, priority=600)
    app.connect("autodoc-process-docstring", _drop_embedded_signature, priority=400)
