"""Compat mode: ``import cuda.core`` gives cuda_core, so that a program or library written for
NVIDIA's cuda.core runs on this package unchanged.

Three ways to turn it on:

* ``cuda_core.compat.install()`` in the running process, before anything imports ``cuda.core``;
* ``python -m cuda_core.compat SCRIPT [ARGS]`` or ``python -m cuda_core.compat -m MODULE [ARGS]``;
* ``CUDA_CORE_COMPAT=1`` in the environment: a start-up hook (``cuda_core_compat.pth``, which
  does nothing else) installs it when each interpreter starts, subprocesses included.

In this mode ``cuda.core`` is a module that holds cuda_core's public names, with ``__version__``
set to the cuda.core API version cuda_core implements (``API_VERSION``), so that version gates in
clients take the right paths; ``cuda.core.__cuda_core_cy_version__`` and
``cuda_core.__version__`` give this package's own version. ``cuda.core.<name>`` for a public
submodule is ``cuda_core.<name>`` itself. Of cuda.core's private modules only those that
released clients import are served, each with the names they use (``_paths.PRIVATE``:
``cuda.core._utils.cuda_utils``, ``_kernel_arg_handler``, ``_context``, ``_device_resources``,
``_device``); any other ``cuda.core._<name>`` is a ModuleNotFoundError. The pre-1.0 namespace
``cuda.core.experimental`` gives the public names with a ``DeprecationWarning``.
``ComputeCapability`` pickles under cuda.core's name for it in this mode, so that a pickle
made here loads under NVIDIA's cuda.core, and one made there loads here. NVIDIA's cuda.core,
where installed, is never imported in this mode. (An ObjectCode whose library handle a client
took never unloads it, in this mode or not: clients written for cuda.core unload the handle
themselves.)
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import types

from cuda_core.compat import _paths

__all__ = ["API_VERSION", "install", "is_installed"]

#: The cuda.core release whose public API cuda_core implements: ``cuda.core.__version__`` in
#: compat mode.
API_VERSION = "1.2.2"

_ROOT = "cuda.core"


def _missing(name, why):
    return ModuleNotFoundError(f"No module named {name!r}: {why} (compat mode: cuda.core is "
                               f"cuda_core)", name=name)


def _make_root():
    """The ``cuda.core`` module: cuda_core's public names, cuda.core's version."""
    import cuda_core

    module = types.ModuleType(_ROOT, cuda_core.__doc__)
    for name in cuda_core.__all__:
        setattr(module, name, getattr(cuda_core, name))
    module.__all__ = list(cuda_core.__all__)
    module.__version__ = API_VERSION
    module.__cuda_core_cy_version__ = cuda_core.__version__
    module.__path__ = []  # a package, so that its submodules are looked up here

    def __getattr__(name):
        # Names cuda_core adds later than this module was made; anything else is one cuda.core
        # has and cuda_core does not provide (yet).
        if not name.startswith("_") and hasattr(cuda_core, name):
            return getattr(cuda_core, name)
        raise AttributeError(f"module 'cuda.core' (compat mode: cuda_core "
                             f"{cuda_core.__version__}) has no attribute {name!r}")

    module.__getattr__ = __getattr__
    return module


def _make_private(name):
    module = types.ModuleType(name, f"The names of cuda.core's {name} that clients import, "
                                    f"from cuda_core.")
    for attr, target in _paths.PRIVATE[name].items():
        setattr(module, attr, _paths.resolve(target))
    if name in _paths.PACKAGES:
        module.__path__ = []
    return module


def _make_experimental():
    _paths.warn_experimental()
    module = _make_root()
    module.__name__ = _paths.EXPERIMENTAL
    module.__doc__ = "cuda.core's pre-1.0 namespace (deprecated): its public names, from cuda_core."
    return module


class _Loader(importlib.abc.Loader):
    """Gives each ``cuda.core`` module: made for the root and the private ones, cuda_core's
    own module object for a public submodule (whose own ``__spec__`` is kept)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._specs = {}  # cuda_core module name -> its own spec, while it is aliased

    def create_module(self, spec):
        name = spec.name
        if name == _ROOT:
            return _make_root()
        if name == _paths.EXPERIMENTAL:
            return _make_experimental()
        if name in _paths.PRIVATE:
            return _make_private(name)
        public = name.replace(_paths.EXPERIMENTAL, _ROOT, 1)  # experimental.utils is utils
        target = "cuda_core." + public[len(_ROOT) + 1:]
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if exc.name != target:
                raise
            raise _missing(name, "cuda_core does not provide it") from None
        with self._lock:
            self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        # The import system sets the alias's spec on the module it gets; cuda_core's own
        # module keeps its own, so that reloading it or finding its files still works.
        with self._lock:
            own = self._specs.pop(module.__name__, None)
        if own is not None:
            module.__spec__ = own


class _Finder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: answers every ``cuda.core`` import, so that NVIDIA's package,
    where installed, is never found."""

    def __init__(self):
        self.loader = _Loader()

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _ROOT and not fullname.startswith(_ROOT + "."):
            return None
        parts = fullname.split(".")
        if fullname not in _paths.PRIVATE and any(p.startswith("_") for p in parts[2:]):
            raise _missing(fullname, f"cuda.core's private modules are not provided, apart "
                                     f"from {', '.join(sorted(_paths.PRIVATE))}")
        is_package = fullname in (_ROOT, _paths.EXPERIMENTAL) or fullname in _paths.PACKAGES
        return importlib.machinery.ModuleSpec(fullname, self.loader, is_package=is_package)


_install_lock = threading.Lock()


def is_installed():
    """Whether compat mode is on in this process."""
    return any(isinstance(f, _Finder) for f in sys.meta_path)


def install():
    """Turn compat mode on in this process: from now on ``import cuda.core`` (and its public
    submodules) gives cuda_core. Idempotent.

    Raises
    ------
    RuntimeError
        If NVIDIA's cuda.core was imported already: objects of both packages would then be
        mixed. Install first, or start the program with ``CUDA_CORE_COMPAT=1``.
    """
    with _install_lock:
        if is_installed():
            return
        # A copy: an import on another thread may add a module while this looks.
        loaded = sorted(n for n, m in list(sys.modules.items())
                        if (n == _ROOT or n.startswith(_ROOT + ".")) and m is not None)
        if loaded:
            raise RuntimeError(f"cuda_core.compat.install(): NVIDIA's cuda.core is already "
                               f"imported ({', '.join(loaded[:3])}); turn compat mode on "
                               f"before anything imports cuda.core, or start the program with "
                               f"CUDA_CORE_COMPAT=1")
        sys.meta_path.insert(0, _Finder())
        # From now on a pickled ComputeCapability names cuda.core's module for it, as NVIDIA's
        # cuda.core's pickles do, so that either package reads it (numba-cuda's kernel cache
        # holds one); outside compat mode it keeps cuda_core._device's name.
        import cuda_core

        cuda_core.ComputeCapability.__module__ = "cuda.core._utils.cuda_utils"
