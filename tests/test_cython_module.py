"""tools/cython_module.py, the build's Cython step: the .cpp is rewritten only when it changes,
and the depfile names the checkout's .pxd files the module read, nothing outside it."""
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


def test_rewrites_only_on_change_and_lists_in_tree_deps(tmp_path):
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_a.pxd").write_text("cdef int twice(int x)\n")
    (pkg / "_a.pyx").write_text("cdef int twice(int x):\n    return 2 * x\n")
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
