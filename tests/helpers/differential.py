"""Differential scenarios: one user-level action run on NVIDIA's cuda.core and on ours, compared
by what a user observes (issue 27, part 6).

A scenario is a function of the package (``cuda.core`` or ``cuda_core``, as a module) that does
one thing and returns a plain value (ints, strs, bools, tuples): what the user would read
back. Its outcome is that value, or the exception it raised. Two outcomes agree when

* both returned equal values, or
* both raised, and ours is an instance of the class cuda.core raised (a subclass keeps the
  contract of ``except TheirClass``), looked up by name among the builtins and, for the
  package's own classes (``CUDAError``), in ours;

and, either way, ours gave every ``DeprecationWarning`` (or other warning class) that
cuda.core gave.

Where the packages differ by design, the scenario says so with ``differs=``: the title of the
``docs/migrating.rst`` section that names the harm our rule prevents, and the test then checks
that the outcomes differ exactly as declared (``ours`` raises that class) and that the section
exists. The scenarios are written from cuda.core's documentation and observed behaviour.
"""

from __future__ import annotations

import builtins
import dataclasses
import warnings
import enum
import importlib
import pathlib
from typing import Any, Callable

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "migrating.rst"


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[Any], Any]
    # A declared difference: the migrating.rst section that names it, and the exception class
    # ours raises (None: ours returns, where cuda.core raises or returns another value).
    differs: str | None = None
    ours_raises: type[BaseException] | None = None
    # The cuda.core release whose behaviour the scenario checks, where an older one differs (the
    # GPU machine's cuda.core may predate 1.2.2; CI compares against 1.2.2 itself).
    since: tuple[int, ...] | None = None


@dataclasses.dataclass(frozen=True)
class Outcome:
    value: Any = None
    error: BaseException | None = None
    warned: frozenset[str] = frozenset()  # the names of the warning classes given

    def __str__(self) -> str:
        if self.error is not None:
            said = f"raises {type(self.error).__name__}: {self.error}"
        else:
            said = f"returns {self.value!r}"
        return said + (f", warning {sorted(self.warned)}" if self.warned else "")


def observe(value: Any) -> Any:
    """``value`` as a user compares it: enum members by value, sequences as tuples."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return tuple(observe(v) for v in value)
    return value


class Raised:
    """An exception caught inside a scenario, as a value: cuda.core's (on the left of ``==``,
    as ``agree`` compares) equals ours where ours is an instance of the class cuda.core's
    stands for (``their_class``), the contract of ``except TheirClass``."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Raised):
            return NotImplemented
        cls = their_class(self.exc)
        if cls is None:
            return type(self.exc).__name__ == type(other.exc).__name__
        return isinstance(other.exc, cls)

    def __hash__(self) -> int:
        return 0  # equal across classes (by subclass): only the class compares

    def __repr__(self) -> str:
        return type(self.exc).__name__


def outcome(scenario: Scenario, package: str) -> Outcome:
    module = importlib.import_module(package)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value, error = observe(scenario.run(module)), None
        except Exception as exc:  # the outcome under test, whatever it is
            value, error = None, exc
    return Outcome(value=value, error=error,
                   warned=frozenset(w.category.__name__ for w in caught))


# What cuda.core's CUDA 12 half says of a feature it has only with CUDA 13 bindings.
LACKS_CUDA_13 = "requires CUDA 13.0 or later"


def skip_where_reference_lacks_cuda_13(message: str):
    """Skip where cuda.core refused for want of CUDA 13 bindings (its CUDA 12 half, beside a
    CUDA 12 build of ours): it has no such feature to compare with."""
    import pytest

    if LACKS_CUDA_13 in message:
        pytest.skip(f"cuda.core's CUDA 12 half lacks it ({message}): nothing to compare")


def their_class(exc: BaseException) -> type[BaseException] | None:
    """The class ours must raise (or subclass) where cuda.core raised ``exc``: a builtin, one of
    a package both use (``cuda.bindings``' ``nvJitLinkError``, ``cuda.pathfinder``'s
    ``DynamicLibNotFoundError``), or ours of the same name; None where ours has none (then only
    the name is compared)."""
    name = type(exc).__name__
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, BaseException) and \
            type(exc).__module__ == "builtins":
        return builtin
    if type(exc).__module__.startswith(("cuda.bindings.", "cuda.pathfinder")):
        return type(exc)
    import cuda_core

    ours = getattr(cuda_core, name, None)
    return ours if isinstance(ours, type) and issubclass(ours, BaseException) else None


def missed_warnings(theirs, ours) -> list[str]:
    """The names of the warning classes cuda.core gave where ours gave neither that class (or
    one of ours of its name) nor a subclass of it."""
    return sorted(c.__name__ for c in theirs
                  if not any(issubclass(o, c) or o.__name__ == c.__name__ for o in ours))


def agree(theirs: Outcome, ours: Outcome) -> bool:
    if not theirs.warned <= ours.warned:
        return False
    if theirs.error is None and ours.error is None:
        return bool(theirs.value == ours.value)
    if theirs.error is not None and ours.error is not None:
        cls = their_class(theirs.error)
        if cls is None:
            return type(theirs.error).__name__ == type(ours.error).__name__
        return isinstance(ours.error, cls)
    return False


def migrating_sections() -> set[str]:
    """The section titles of docs/migrating.rst."""
    lines = DOCS.read_text().splitlines()
    return {lines[i - 1].strip() for i in range(1, len(lines))
            if lines[i] and set(lines[i]) == {"-"} and len(lines[i]) >= len(lines[i - 1].strip())
            and lines[i - 1].strip()}


def require_reference(release: str):
    """Skip the calling test module unless the cuda.core installed is ``release`` (its
    comparisons were read off that release, which the test extra installs: CI)."""
    import pytest

    reference = pytest.importorskip("cuda.core", reason=f"NVIDIA's cuda-core {release} (the "
                                                        f"test extra installs it) is the reference")
    if not reference.__version__.startswith(release):
        pytest.skip(f"the cuda.core here is {reference.__version__}; these cases compare "
                    f"against {release}, which the test extra installs (CI)",
                    allow_module_level=True)
