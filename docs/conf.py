"""Sphinx configuration for the cuda_core documentation.

autodoc imports the installed package, which needs ``cuda-bindings`` but no GPU or driver. CI
builds it nitpicky, with warnings as errors (.ci/run)::

    python3 -m pip install ".[docs]"
    sphinx-build -n -W -b html docs docs/_build/html
"""

import os
import re
import sys

from sphinx.util.nodes import make_refnode

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)

# autodoc documents the installed package. Run from the repository root (python -m sphinx),
# the root would be on sys.path, and its cuda_core/ holds sources without compiled modules.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

# The version is read from the source tree so that it matches the checkout being documented.
with open(os.path.join(_ROOT, "cuda_core", "_version.py")) as _f:
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

# The build is nitpicky in CI (sphinx-build -n -W). It uses no intersphinx, so that it needs no
# network; names from outside the package are listed here instead of linked.
nitpick_ignore = [
    ("py:class", "os.PathLike"),
    ("py:class", "abc.ABC"),
    ("py:class", "collections.abc.Callable"),
    ("py:class", "collections.abc.Iterable"),
    ("py:class", "collections.abc.Iterator"),
    ("py:class", "collections.abc.Mapping"),
    ("py:class", "collections.abc.MutableSet"),
    ("py:class", "collections.abc.Sequence"),
    ("py:class", "enum.IntEnum"),
    ("py:class", "numpy.dtype"),
    ("py:class", "numpy.ndarray"),
    ("py:class", "numpy.typing.ArrayLike"),
    ("py:func", "sys.unraisablehook"),
    ("py:mod", "pickle"),
    ("py:mod", "multiprocessing"),
    ("py:class", "uuid.UUID"),
    # Private base classes that show-inheritance names.
    ("py:class", "cuda_core._device_properties._DeviceAttributes"),
    ("py:class", "cuda_core._closable.Closable"),
    ("py:class", "cuda_core._stream.StreamHolder"),
    ("py:class", "cuda_core._green._DeviceResource"),
    ("py:class", "cuda_core._memory._mempool._MemPool"),
    ("py:class", "cuda_core._memory._memory_resource._DeviceOnlyMemoryResource"),
    ("py:class", "cuda_core._resource.Resource"),
    ("py:class", "cuda_core._resource.HandleKeyedResource"),
    ("py:class", "cuda_core._live_set._LiveSet"),
    ("py:class", "cuda_core._memory._pool_attributes._MemoryCounters"),
    ("py:class", "cuda_core.utils._program_cache._ProgramCache"),
    ("py:class", "cuda_core.graph._node_types._EventNode"),
    ("py:class", "cuda_core.graph._exec_nodes._Switchable"),
    ("py:class", "cuda_core.texture._texture._ViewObject"),
    ("py:class", "cuda_core.texture._array._ArrayBase"),
]
nitpick_ignore_regex = [
    ("py:class", r"cuda\.bindings\..*"),
    # Words of numpydoc type fields that are prose, not types: "int, optional",
    # "sequence of str", "1-3 ints", '{"device", "host"}', "ctypes function pointer".
    ("py:class", r"optional|sequence|callable|iterable|checked|source|them|array_like|mapping"),
    ("py:class", r".*[^\w.].*"),
]

# Annotations of the pure Python modules (read as strings: they import annotations from
# __future__) shown as the names a reader knows, not as what NumPy's aliases expand to.
autodoc_type_aliases = {
    "npt.ArrayLike": "numpy.typing.ArrayLike",
    "_FloatArray": "numpy.ndarray",
    "_FloatArrays": "tuple[numpy.ndarray, numpy.ndarray]",
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


def _resolve_short_name(app, env, node, contnode):
    # Docstrings name the package's own classes as readers see them (``Stream``,
    # ``KernelAttributes``, ``Device.create_graph_builder``), but autodoc renders a docstring
    # under the module that defines the object (``cuda_core._kernel``, ``cuda_core.graph``),
    # where such a short name does not resolve. Resolve it to the one documented cuda_core
    # object whose full name ends with it; leave it unresolved (a warning) when none or
    # several match.
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    domain = env.get_domain("py")
    objtypes = set(domain.objtypes_for_role(node["reftype"]) or ())
    matches = [(name, entry) for name, entry in domain.objects.items()
               if name.startswith("cuda_core.") and name.endswith("." + target)
               and not entry.aliased and (not objtypes or entry.objtype in objtypes)]
    if len(matches) != 1:
        return None
    name, entry = matches[0]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode,
                        name)


def setup(app):
    app.connect("missing-reference", _resolve_short_name)
    app.connect("autodoc-process-docstring", _keep_inline_summary, priority=600)
    app.connect("autodoc-process-docstring", _drop_embedded_signature, priority=400)
