"""Cython one ``.pyx`` into C++ for the build; CMakeLists.txt runs it once per extension module.

    python tools/cython_module.py SOURCE_ROOT PYX CPP [MODULE_NAME]

Cython 3 in C++ mode, language level 3, signatures embedded in the docstrings, ``SOURCE_ROOT`` on
the include path (``cimport cuda_core._errors``). ``MODULE_NAME`` (dotted) names a module whose
``.pyx`` lies outside its package (``benchmarks/_bench_floor.pyx``, ``cuda_core._bench_floor``).

Two things keep a rebuild to what changed:

* ``CPP`` is replaced only when the new C++ differs from it; otherwise it keeps its time, and
  Ninja (``restat``) does not recompile it;
* ``CPP.dep`` (the custom command's DEPFILE) names the ``.pyx`` and every ``.pxd``/``.pxi``
  under ``SOURCE_ROOT`` that Cython read, so that a changed ``.pxd`` re-runs only the modules
  that cimport it. Files outside ``SOURCE_ROOT`` (Cython's own ``.pxd``, ``cuda.bindings``') are
  left out: in pip's isolated build they live under a new ``/tmp/pip-build-env-*`` path on
  every install, and a missing path in a depfile makes Ninja rebuild. CMakeLists.txt stands for
  them with a stamp file that changes only when their content or the Cython version does.
"""
from __future__ import annotations

import os
import sys


def _depfile_paths(text: str) -> list:
    """The prerequisites of a one-rule Makefile depfile as Cython writes it."""
    _, _, rest = text.partition(": ")
    rest = rest.replace("\\\n", " ").replace("\\ ", "\0")
    return [p.replace("\0", " ") for p in rest.split()]


def main(argv: list) -> int:
    if len(argv) not in (4, 5):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root, pyx, cpp = (os.path.abspath(a) for a in argv[1:4])
    module_name = argv[4] if len(argv) == 5 else None

    from Cython.Compiler.Main import compile as cython_compile

    new = cpp + ".new"
    result = cython_compile(
        pyx, output_file=new, cplus=True, language_level=3, include_path=[root],
        compiler_directives={"embedsignature": True}, depfile=True,
        full_module_name=module_name)
    if result.num_errors:
        for path in (new, new + ".dep"):
            if os.path.exists(path):
                os.remove(path)
        return 1

    with open(new + ".dep", encoding="utf-8") as f:
        deps = [os.path.abspath(p) for p in _depfile_paths(f.read())]
    os.remove(new + ".dep")
    inside = root + os.sep
    deps = sorted({p for p in deps if p.startswith(inside)} | {pyx})

    with open(new, "rb") as f:
        fresh = f.read()
    try:
        with open(cpp, "rb") as f:
            same = f.read() == fresh
    except OSError:
        same = False
    if same:
        os.remove(new)
    else:
        os.replace(new, cpp)

    def esc(p: str) -> str:
        return p.replace(" ", "\\ ")

    with open(cpp + ".dep", "w", encoding="utf-8") as f:
        f.write(esc(cpp) + ": " + " \\\n  ".join(esc(p) for p in deps) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
