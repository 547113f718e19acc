"""The build's Cython step: ``.pyx`` into C++ (Cython 3, C++ mode, language level 3, signatures
embedded in the docstrings, ``SOURCE_ROOT`` on the include path for ``cimport cuda_core._errors``,
and ``cuda_core/_cuda_compat_cu<major>/`` for the CUDA major of the installed cuda-bindings).

    python tools/cython_module.py SOURCE_ROOT PYX CPP [MODULE_NAME]
    python tools/cython_module.py --modules LIST SOURCE_ROOT DEPFILE

The first form runs one module. ``MODULE_NAME`` (dotted) names a module whose ``.pyx`` lies outside
its package (``benchmarks/_bench_floor.pyx``, ``cuda_core._bench_floor``).

The second form is what CMakeLists.txt runs: every module of ``LIST`` (one per line, ``PYX CPP
[MODULE_NAME]``, tab-separated) whose output is out of date, in worker processes that each
compile many modules (one per CPU, or ``CMAKE_BUILD_PARALLEL_LEVEL``). A fresh interpreter per
module spent most of its time starting Cython: about 2.7 s a module against 1.1 s in a warm
worker. It writes ``DEPFILE``, naming every input of every module, for Ninja.

Three things keep a rebuild to what changed:

* ``CPP`` is replaced only when the new C++ differs from it; otherwise it keeps its time, and
  Ninja (``restat``) does not recompile it;
* ``CPP.dep`` names the ``.pyx`` and every ``.pxd``/``.pxi`` under ``SOURCE_ROOT`` that Cython
  read. It is rewritten after every run, so its time says when the module was last made: the
  second form runs a module again only when one of those files, this tool or the stamp file
  (below) is newer than it, or the ``.cpp`` is missing;
* files outside ``SOURCE_ROOT`` (Cython's own ``.pxd``, ``cuda.bindings``') are left out of the
  depfiles: in pip's isolated build they live under a new ``/tmp/pip-build-env-*`` path on
  every install, and a missing path in a depfile makes Ninja rebuild. CMakeLists.txt stands for
  them with a stamp file (``env/cython-inputs.txt`` beside the list) that changes only when
  their content or the Cython version does.
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor


def _depfile_paths(text: str) -> list:
    """The prerequisites of a one-rule Makefile depfile as Cython writes it."""
    _, _, rest = text.partition(": ")
    rest = rest.replace("\\\n", " ").replace("\\ ", "\0")
    return [p.replace("\0", " ") for p in rest.split()]


def _esc(p: str) -> str:
    return p.replace(" ", "\\ ")


def _write_depfile(path: str, target: str, deps) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(_esc(target) + ": " + " \\\n  ".join(_esc(p) for p in deps) + "\n")


def cuda_major() -> int:
    """The CUDA major of the cuda-bindings that Cython compiles against (that of the
    cydriver.pxd it reads): it picks the definitions of ``cuda_core/_cuda_compat.pxd``."""
    from importlib import metadata

    return int(metadata.version("cuda-bindings").split(".")[0])


def include_path(root: str) -> list:
    """``SOURCE_ROOT``, and the directory of the ``_cuda_compat.pxd`` definitions for the
    CUDA major of the cuda-bindings installed (DESIGN.md, "One build per CUDA major")."""
    return [root, os.path.join(root, "cuda_core", f"_cuda_compat_cu{cuda_major()}")]


def compile_module(root: str, pyx: str, cpp: str, module_name: str | None = None) -> bool:
    """Cython ``pyx`` into ``cpp`` and write ``cpp.dep``; False (outputs untouched) on an error,
    which Cython has reported on stderr."""
    from Cython.Compiler.Main import compile as cython_compile

    new = cpp + ".new"
    result = cython_compile(
        pyx, output_file=new, cplus=True, language_level=3, include_path=include_path(root),
        # freethreading_compatible (Cython 3.1+): the modules declare Py_mod_gil_not_used, so
        # a free-threaded interpreter keeps the GIL off when it imports them; the package
        # relies on no GIL for its own state (docs/threads.rst).
        compiler_directives={"embedsignature": True, "freethreading_compatible": True},
        depfile=True,
        full_module_name=module_name)
    if result.num_errors:
        for path in (new, new + ".dep"):
            if os.path.exists(path):
                os.remove(path)
        return False

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
    _write_depfile(cpp + ".dep", cpp, deps)
    return True


def _recorded_deps(cpp: str):
    """The inputs ``cpp.dep`` names, or None when there is no ``.dep`` (never made)."""
    try:
        with open(cpp + ".dep", encoding="utf-8") as f:
            return _depfile_paths(f.read())
    except OSError:
        return None


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1  # gone: counts as changed


def is_stale(pyx: str, cpp: str, always: list) -> bool:
    """Whether ``pyx`` needs Cython again: no ``cpp``, no ``cpp.dep``, or an input newer than
    the ``.dep`` (or gone). ``always`` are inputs of every module (this tool, the stamp)."""
    deps = _recorded_deps(cpp)
    if deps is None or not os.path.exists(cpp):
        return True
    made = _mtime(cpp + ".dep")
    return any(_mtime(p) < 0 or _mtime(p) > made for p in [pyx, *deps, *always])


def _read_list(path: str) -> list:
    modules = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                fields = line.rstrip("\n").split("\t")
                modules.append((os.path.abspath(fields[0]), os.path.abspath(fields[1]),
                                fields[2] if len(fields) > 2 and fields[2] else None))
    return modules


def _jobs() -> int:
    value = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "")
    return int(value) if value.isdigit() and int(value) > 0 else (os.cpu_count() or 1)


def _warm_up() -> None:
    import Cython.Compiler.Main  # noqa: F401  (each worker imports Cython once)


def compile_modules(list_path: str, root: str, depfile: str) -> int:
    modules = _read_list(list_path)
    stamp = os.path.join(os.path.dirname(os.path.abspath(list_path)), "env", "cython-inputs.txt")
    always = [os.path.abspath(__file__)] + ([stamp] if os.path.exists(stamp) else [])
    stale = [m for m in modules if is_stale(m[0], m[1], always)]
    # The largest first: the workers finish at about the same time.
    stale.sort(key=lambda m: -os.path.getsize(m[0]))
    failed = []
    if len(stale) == 1:
        if not compile_module(root, *stale[0]):
            failed.append(stale[0][0])
    elif stale:
        with ProcessPoolExecutor(max_workers=min(_jobs(), len(stale)),
                                 initializer=_warm_up) as pool:
            futures = [(m, pool.submit(compile_module, root, *m)) for m in stale]
            failed = [m[0] for m, fut in futures if not fut.result()]
    if failed:
        print("Cython failed for: " + ", ".join(os.path.relpath(p, root) for p in failed),
              file=sys.stderr)
        return 1
    # Ninja's view: every module's inputs are inputs of this one step (it applies them to all
    # of the step's outputs; naming the first is enough).
    deps = set()
    for pyx, cpp, _ in modules:
        deps.add(pyx)
        deps.update(_recorded_deps(cpp) or ())
    _write_depfile(depfile, modules[0][1], sorted(deps))
    return 0


def main(argv: list) -> int:
    usage = __doc__.split("\n\n")[1]
    if len(argv) == 5 and argv[1] == "--modules":
        list_path, root, depfile = (os.path.abspath(a) for a in argv[2:5])
        return compile_modules(list_path, root, depfile)
    if len(argv) not in (4, 5) or argv[1].startswith("--"):
        print(usage, file=sys.stderr)
        return 2
    root, pyx, cpp = (os.path.abspath(a) for a in argv[1:4])
    return 0 if compile_module(root, pyx, cpp, argv[4] if len(argv) == 5 else None) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
