"""cuda_core/DESIGN.md's module map against the code (CPU): the generated table is what
tools/gen_design_map.py makes of the modules as they are, every module has its line of prose in
the hand-written table, and that table names no file that is gone."""

import importlib.util
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location(
    "gen_design_map", os.path.join(ROOT, "tools", "gen_design_map.py"))
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

pytestmark = pytest.mark.skipif(not os.path.isdir(os.path.join(ROOT, "cuda_core")),
                                reason="needs the source tree (cuda_core/ beside tests/)")


def _design():
    with open(gen.DESIGN, encoding="utf-8") as f:
        return f.read()


def _prose_rows():
    """The first cell of each row of the hand-written table (``| Module | Holds |``)."""
    lines = _design().splitlines()
    start = lines.index("| Module | Holds |")
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line[1:].split(" | ")[0])
    return rows


def _named_files(cell):
    """The package files a row's first cell names. A folder (``graph/``) is the folder of the
    bare names after it in the cell; ``x/`` followed by ``.py`` stands for every .py there."""
    tokens = re.findall(r"`([^`]+)`", cell)
    folder, out = "", []
    for i, tok in enumerate(tokens):
        if tok.startswith("benchmarks/"):
            continue  # outside the package
        if tok.endswith("/"):
            folder = tok
            if i + 1 < len(tokens) and tokens[i + 1] == ".py":
                out += [k + ".py" for k, files in gen.modules().items()
                        if k.startswith(folder) and "/" not in k[len(folder):] and "py" in files]
            continue
        if not re.fullmatch(r"[\w/]+\.(pyx|py|pxd|pxi|pth)", tok):
            continue  # a name in the prose (a module's import name, an option), not a file
        if "/" in tok:
            folder = tok.rsplit("/", 1)[0] + "/"
            out.append(tok)
        else:
            out.append(folder + tok)
    return out


def test_the_generated_table_is_up_to_date():
    assert gen.render(_design()) == _design(), \
        "the module map is out of date: run python tools/gen_design_map.py"


def test_every_module_has_its_prose_and_every_named_file_exists():
    named = set()
    for cell in _prose_rows():
        named.update(_named_files(cell))
    gone = sorted(f for f in named if not os.path.exists(os.path.join(gen.PKG, f)))
    assert not gone, f"DESIGN.md's module table names files that are gone: {gone}"
    missing = []
    for key, files in gen.modules().items():
        kinds = [k for k in ("pyx", "py", "pxd") if k in files]
        if not any(f"{key}.{k}" in named for k in kinds):
            missing.append(f"{key}.{kinds[0]}")
    assert not missing, f"modules without a line in DESIGN.md's module table: {missing}"


def test_the_generator_reads_what_a_module_says():
    # The columns of two modules whose declarations are known.
    rows = {r[0]: r for r in gen.rows()}
    launcher = rows["`_launcher.pyx`"]
    assert launcher[1] == "`launch`"
    assert "`_kernel_args`" in launcher[3] and "`_stream`" in launcher[3]
    atomic = rows["`_atomic.pxd`"]
    assert "`load_int`" in atomic[2] and "`store_ptr`" in atomic[2]
    bench = rows["`bench/__main__.py`"]
    assert bench[4] == "`bench._cases`, `bench._harness`, `bench._launch`, `bench._report`"
