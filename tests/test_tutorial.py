"""docs/tutorial.rst runs: its Python blocks, in order, as one script.

The blocks that import CuPy or PyTorch run only in the variant for that package, which is
skipped, with the reason, where the package is missing. The CPU tests check what can be
checked without a GPU: every block parses, and every name imported from cuda_core exists.
"""

import ast
import importlib
import os
import re
import subprocess
import sys
import textwrap

import pytest

TUTORIAL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                        "tutorial.rst")
# A block that imports one of these runs only in that package's variant.
OPTIONAL = {"cupy": "CuPy", "torch": "PyTorch"}

_BLOCK = re.compile(r"^\.\. code-block:: python\n\n((?:(?:   .*)?\n)+)", re.MULTILINE)


def _blocks():
    if not os.path.isfile(TUTORIAL):
        pytest.skip(f"docs/tutorial.rst is not in this test tree ({TUTORIAL})")
    with open(TUTORIAL) as f:
        text = f.read()
    return [textwrap.dedent(m.group(1)) for m in _BLOCK.finditer(text)]


def _needs(block):
    """The optional package a block imports, or None."""
    for node in ast.walk(ast.parse(block)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        for name in names:
            if name.split(".")[0] in OPTIONAL:
                return name.split(".")[0]
    return None


def test_blocks_parse():
    blocks = _blocks()
    assert len(blocks) >= 9
    for block in blocks:
        ast.parse(block)
    assert {_needs(b) for b in blocks} == {None, *OPTIONAL}


def test_imported_names_exist():
    for block in _blocks():
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module.split(".")[0] == "cuda_core":
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{node.module}.{alias.name}"


@pytest.mark.gpu
@pytest.mark.parametrize("variant", [None, *OPTIONAL], ids=["core", *OPTIONAL])
def test_tutorial_runs(variant, tmp_path):
    if variant is not None:
        try:
            importlib.import_module(variant)
        except ImportError as exc:
            pytest.skip(f"the {OPTIONAL[variant]} part of the tutorial needs {variant}: {exc}")
    script = tmp_path / "tutorial.py"
    script.write_text("\n".join(b for b in _blocks() if _needs(b) in (None, variant)))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
