"""tools/cython_module.py, the build's Cython step: the .cpp is rewritten only when it changes,
and the depfile names the checkout's .pxd files the module read, nothing outside it; with
``--modules``, only the stale modules of a list run, and one depfile names every input."""
import os
import subprocess
import sys

import pytest

_TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools",
                     "cython_module.py")

pytest.importorskip("Cython", reason="needs Cython (a build requirement, not a test one)")


def _run(root, pyx, cpp):
    return subprocess.run([sys.executable, _TOOL, str(root), str(pyx), str(cpp)],
                          capture_output=True, text=True)


def _package(tmp_path):
    """``tmp_path/src/pkg`` with a module ``_a`` whose ``.pxd`` declares ``twice``."""
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_a.pxd").write_text("cdef int twice(int x)\n")
    (pkg / "_a.pyx").write_text("cdef int twice(int x):\n    return 2 * x\n")
    return pkg


def test_rewrites_only_on_change_and_lists_in_tree_deps(tmp_path):
    pkg = _package(tmp_path)
    (pkg / "_b.pyx").write_text("from libc.stdlib cimport abs\nfrom pkg._a cimport twice\n\n"
                                "def f(int x):\n    return twice(abs(x))\n")
    cpp = tmp_path / "out" / "_b.cpp"
    cpp.parent.mkdir()

    r = _run(tmp_path / "src", pkg / "_b.pyx", cpp)
    assert r.returncode == 0, r.stderr
    first = cpp.stat().st_mtime_ns
    dep = (tmp_path / "out" / "_b.cpp.dep").read_text()
    target, _, deps = dep.partition(": ")
    assert target == str(cpp)
    names = deps.replace("\\\n", " ").split()
    assert sorted(names) == sorted([str(pkg / "_a.pxd"), str(pkg / "_b.pyx")])  # no libc/

    os.utime(cpp, ns=(first - 10**9, first - 10**9))
    kept = cpp.stat().st_mtime_ns
    assert _run(tmp_path / "src", pkg / "_b.pyx", cpp).returncode == 0
    assert cpp.stat().st_mtime_ns == kept  # same output: not rewritten
    assert not (tmp_path / "out" / "_b.cpp.new").exists()

    (pkg / "_b.pyx").write_text((pkg / "_b.pyx").read_text() + "\ndef g():\n    return 1\n")
    assert _run(tmp_path / "src", pkg / "_b.pyx", cpp).returncode == 0
    assert cpp.stat().st_mtime_ns != kept


def test_a_cython_error_fails_and_keeps_the_old_output(tmp_path):
    (tmp_path / "_x.pyx").write_text("def f(:\n    pass\n")
    cpp = tmp_path / "_x.cpp"
    cpp.write_text("old")
    r = _run(tmp_path, tmp_path / "_x.pyx", cpp)
    assert r.returncode == 1
    assert "Expected" in r.stderr + r.stdout
    assert cpp.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_x.cpp", "_x.pyx"]


def _run_list(root, modules, build):
    listing = build / "cython-modules.txt"
    listing.write_text("".join(f"{pyx}\t{cpp}\t\n" for pyx, cpp in modules))
    return subprocess.run([sys.executable, _TOOL, "--modules", str(listing), str(root),
                           str(build / "cython.dep")], capture_output=True, text=True)


def _age(seconds, *paths):
    """Set the files' times back, so that a later write is newer at any clock tick."""
    for p in paths:
        t = p.stat().st_mtime_ns - seconds * 10**9
        os.utime(p, ns=(t, t))


def test_a_list_runs_only_the_stale_modules(tmp_path):
    pkg = _package(tmp_path)
    (pkg / "_b.pyx").write_text("from pkg._a cimport twice\n\ndef f(int x):\n    return twice(x)\n")
    (pkg / "_c.pyx").write_text("def g():\n    return 3\n")
    build = tmp_path / "build"
    build.mkdir()
    cpps = {n: build / f"{n}.cpp" for n in ("_a", "_b", "_c")}
    modules = [(pkg / f"{n}.pyx", cpp) for n, cpp in cpps.items()]

    r = _run_list(tmp_path / "src", modules, build)
    assert r.returncode == 0, r.stderr
    assert all(cpp.exists() for cpp in cpps.values())
    target, _, deps = (build / "cython.dep").read_text().partition(": ")
    assert target == str(cpps["_a"])  # Ninja applies a step's depfile to all its outputs
    assert sorted(deps.replace("\\\n", " ").split()) == sorted(
        str(p) for p in [pkg / "_a.pxd", pkg / "_a.pyx", pkg / "_b.pyx", pkg / "_c.pyx"])

    # Nothing changed: nothing runs (no .dep is rewritten).
    records = [build / f"{n}.cpp.dep" for n in cpps]
    _age(120, *pkg.iterdir())
    _age(60, *records, *cpps.values())
    before = {p: p.stat().st_mtime_ns for p in records}
    assert _run_list(tmp_path / "src", modules, build).returncode == 0
    assert {p: p.stat().st_mtime_ns for p in records} == before

    # A changed .pxd runs the modules that read it (_a, _b), not _c; _b's C++ is the same
    # and keeps its time.
    (pkg / "_a.pxd").write_text("cdef int twice(int x)\n\n")
    cpp_b = cpps["_b"].stat().st_mtime_ns
    assert _run_list(tmp_path / "src", modules, build).returncode == 0
    after = {p: p.stat().st_mtime_ns for p in records}
    assert after[build / "_a.cpp.dep"] != before[build / "_a.cpp.dep"]
    assert after[build / "_b.cpp.dep"] != before[build / "_b.cpp.dep"]
    assert after[build / "_c.cpp.dep"] == before[build / "_c.cpp.dep"]
    assert cpps["_b"].stat().st_mtime_ns == cpp_b

    # A missing .cpp runs its module again.
    cpps["_c"].unlink()
    assert _run_list(tmp_path / "src", modules, build).returncode == 0
    assert cpps["_c"].exists()


def test_a_list_with_an_error_fails_naming_the_module(tmp_path):
    (tmp_path / "_ok.pyx").write_text("def f():\n    return 1\n")
    (tmp_path / "_bad.pyx").write_text("def f(:\n    pass\n")
    build = tmp_path / "build"
    build.mkdir()
    r = _run_list(tmp_path, [(tmp_path / "_ok.pyx", build / "_ok.cpp"),
                             (tmp_path / "_bad.pyx", build / "_bad.cpp")], build)
    assert r.returncode == 1
    assert "Cython failed for: _bad.pyx" in r.stderr
    assert (build / "_ok.cpp").exists() and not (build / "_bad.cpp").exists()
    assert not (build / "cython.dep").exists()  # the step failed: Ninja runs it again


def test_modules_declare_free_threading_compatible(tmp_path):
    # freethreading_compatible=True: unless CYTHON_FREETHREADING_COMPATIBLE says otherwise at C
    # compile time, the module slot is Py_MOD_GIL_NOT_USED (a free-threaded interpreter keeps
    # the GIL off on import; without the directive the default is Py_MOD_GIL_USED).
    pkg = _package(tmp_path)
    cpp = tmp_path / "_a.cpp"
    r = _run(tmp_path / "src", pkg / "_a.pyx", cpp)
    assert r.returncode == 0, r.stderr
    text = cpp.read_text()
    assert ("#else\n#define __Pyx_FREETHREADING_COMPATIBLE Py_MOD_GIL_NOT_USED\n#endif"
            in text)
