"""What the README, CI and the docs' requirements promise each other."""

import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(*parts):
    path = os.path.join(ROOT, *parts)
    if not os.path.isfile(path):
        # The GPU harness copies only part of the checkout; CI has all of it.
        pytest.skip(f"{os.path.join(*parts)} is not in this test tree ({ROOT})")
    with open(path) as f:
        return f.read()


def test_ci_runs_the_readme_test_command():
    readme = _read("README.md")
    commands = [line for line in readme.splitlines()
                if line.startswith("python3 -m pip install \".[test]\"")]
    assert len(commands) == 1, commands
    ci_lines = _read(".ci", "run").splitlines()
    assert commands[0] in ci_lines


def test_ci_builds_the_docs_nitpicky():
    ci = _read(".ci", "run")
    assert re.search(r"^sphinx-build -n -W .*-b html docs ", ci, re.MULTILINE), ci


def test_docs_requirements_match_the_docs_extra():
    if sys.version_info < (3, 11):
        pytest.skip("tomllib needs Python 3.11")
    import tomllib

    # The extras are dynamic (their lists go to tools/backend/cuda_core_backend.py, which passes
    # "docs" through unchanged).
    pyproject = tomllib.loads(_read("pyproject.toml"))
    extra = pyproject["tool"]["scikit-build"]["metadata"]["optional-dependencies"]["docs"]
    listed = [line.strip() for line in _read("docs", "requirements.txt").splitlines()
              if line.strip() and not line.lstrip().startswith("#")]
    assert listed == extra
