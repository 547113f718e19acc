"""The report that ``python -m cuda_core`` prints: what cuda_core finds on this machine (its own
installation, Python, the packages it runs on, the CUDA driver, the compiler libraries, the
devices, and the environment variables that change what CUDA does), for bug reports and for
checking an installation.

Each section is one probe. A probe that fails adds one ``error:`` line to its section, never a
traceback, and the other sections still run. Nothing here runs at ``import cuda_core``.
"""

from __future__ import annotations

import os
import platform
import sys

from cuda_core import _compiler_libs as _libs

__all__ = ["report"]

# Set ones are printed with their values; the rest are named as unset.
ENV_VARS = (
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_PATH",
    "CUDA_CACHE_MAXSIZE",
    "CUDA_CORE_COMPAT",
    "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM",
    "CUDA_CORE_DONT_FIX_TAB_COMPLETION",
    "CUDA_PYTHON_DISABLE_MAJOR_VERSION_WARNING",
    "XDG_CACHE_HOME",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "PYTHONSAFEPATH",
)

# (label, name for cuda.pathfinder, the pip package that provides it), as cuda_core loads them
_COMPILERS = tuple((label, name, _libs.COMPILERS[name].package)
                   for label, name in (("NVRTC", "nvrtc"), ("nvJitLink", "nvJitLink"),
                                       ("NVVM", "nvvm")))

# (title, name of the probe function): looked up when the report runs, so a test can replace one.
_SECTIONS = (
    ("cuda_core", "_probe_cuda_core"),
    ("Python", "_probe_python"),
    ("Packages", "_probe_packages"),
    ("CUDA driver", "_probe_driver"),
    ("Devices", "_probe_devices"),
    ("Compiler libraries", "_probe_compilers"),
    ("Environment", "_probe_environment"),
)


def _error_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _dist_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None; imports nothing of it."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _build_info(folder: str) -> dict:
    """What the build wrote into ``_build_info.txt`` (CMakeLists.txt): the CUDA headers it
    compiled against and where from, the cuda-bindings version, and the headers' warning, if
    any; empty where the file is missing (a source tree)."""
    try:
        with open(os.path.join(folder, "_build_info.txt"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    return dict(line.split(": ", 1) for line in lines if ": " in line)


def _probe_cuda_core():
    import cuda_core

    folder = os.path.dirname(os.path.abspath(cuda_core.__file__))
    info = _build_info(folder)
    rows = [("version", cuda_core.__version__), ("location", folder)]
    if info:
        rows.append(("built", f"with the CUDA {info.get('cuda-headers', '?')} headers of "
                              f"{info.get('headers-from', 'an unknown origin')}, against "
                              f"cuda-bindings {info.get('cuda-bindings', '?')}"))
    else:
        rows.append(("built", "unknown (no _build_info.txt: not an installed build)"))
    if "warning" in info:
        rows.append(("warning", info["warning"]))
    return rows


def _probe_python():
    return [("version", sys.version.replace("\n", " ")),
            ("executable", sys.executable),
            ("platform", platform.platform())]


def _probe_packages():
    rows = []
    try:
        import cuda.bindings

        rows.append(("cuda-bindings", f"{cuda.bindings.__version__} "
                                      f"({os.path.dirname(cuda.bindings.__file__)})"))
    except Exception as exc:
        rows.append(("cuda-bindings", f"error: {_error_line(exc)}"))
    rows.append(("cuda-pathfinder", _dist_version("cuda-pathfinder") or "not installed"))
    try:
        import numpy

        rows.append(("numpy", numpy.__version__))
    except Exception as exc:
        rows.append(("numpy", f"error: {_error_line(exc)}"))
    # NVIDIA's cuda.core is never imported here: in compat mode that import gives cuda_core.
    nvidia = _dist_version("cuda-core")
    rows.append(("cuda-core (NVIDIA)", nvidia or "not installed"))
    try:
        from cuda_core.compat import is_installed

        if is_installed():
            mode = "on: `import cuda.core` gives cuda_core"
        elif nvidia:
            mode = "off: `import cuda.core` gives NVIDIA's cuda.core"
        else:
            mode = "off"
        rows.append(("compat mode", mode))
    except Exception as exc:
        rows.append(("compat mode", f"error: {_error_line(exc)}"))
    return rows


def _loaded_path(fragment: str) -> str | None:
    """Where this process loaded a shared library whose file name holds ``fragment`` (Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(None, 5)[-1]
                if fragment in os.path.basename(path):
                    return path
    except OSError:
        pass
    return None


def _probe_driver():
    from cuda.bindings import driver

    try:
        err, version = driver.cuDriverGetVersion()  # needs no cuInit
    except RuntimeError as exc:  # cuda.bindings could not load libcuda.so.1
        return [("found", f"no, libcuda.so.1 cannot be loaded ({exc}); install an NVIDIA "
                          f"driver to use a GPU")]
    if err != driver.CUresult.CUDA_SUCCESS:
        return [("found", f"yes, but cuDriverGetVersion failed: {err.name}")]
    return [("found", "yes"),
            ("version", f"{version // 1000}.{version % 1000 // 10} (cuDriverGetVersion: "
                        f"{version})"),
            ("location", _loaded_path("libcuda.so") or "unknown")]


def _probe_devices():
    from cuda.bindings import driver

    from cuda_core import CUDAError, Device
    from cuda_core.system import get_num_devices

    try:
        count = get_num_devices()
    except CUDAError as exc:
        return [("count", f"none: {exc}")]
    rows = [("count", str(count))]
    for ordinal in range(count):
        try:
            dev = Device(ordinal)
            cc = dev.compute_capability
            err, handle = driver.cuDeviceGet(ordinal)
            if err == driver.CUresult.CUDA_SUCCESS:
                err, total = driver.cuDeviceTotalMem(handle)
            memory = (f"{total / 2**30:.1f} GiB" if err == driver.CUresult.CUDA_SUCCESS
                      else f"memory unknown ({err.name})")
            rows.append((str(ordinal), f"{dev.name}, compute capability {cc.major}.{cc.minor}, "
                                       f"{memory}, PCI {dev.pci_bus_id}"))
        except Exception as exc:
            rows.append((str(ordinal), f"error: {_error_line(exc)}"))
    return rows


def _compiler_version(name: str) -> str:
    """The library's version as its own API reports it; loads it as cuda_core does (through
    cuda.bindings, which finds it with cuda.pathfinder)."""
    if name == "nvrtc":
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"nvrtcVersion failed: {err.name}")
        return f"{major}.{minor}"
    if name == "nvJitLink":
        from cuda.bindings import nvjitlink

        return ".".join(map(str, nvjitlink.version()))
    from cuda.bindings import nvvm

    major, minor = nvvm.version()
    ir = nvvm.ir_version()
    return f"{major}.{minor} (NVVM IR {ir[0]}.{ir[1]})"


def _probe_compilers():
    rows = []
    for label, name, package in _COMPILERS:
        try:
            version = _compiler_version(name)
        except Exception as exc:
            rows.append((label, f"not found ({_error_line(exc)}); the pip package {package} "
                                f"provides it, as does the extra cuda-core-cy[{_libs.EXTRA}]"))
            continue
        try:
            from cuda.pathfinder import load_nvidia_dynamic_lib

            loaded = load_nvidia_dynamic_lib(name)  # already loaded: returns where from
            where = f"{loaded.abs_path} (found via {loaded.found_via})"
            if loaded.found_via == "site-packages" and _dist_version(package):
                where += f", {package} {_dist_version(package)}"
            elif loaded.abs_path and (built := _libs.toolkit_version(loaded.abs_path)):
                where += f", from CUDA {built[0]}.{built[1]}, not the {package} wheel"
        except Exception as exc:
            where = f"location unknown ({_error_line(exc)})"
        rows.append((label, f"{version}, {where}"))
    return rows


def _probe_environment():
    rows = []
    unset = []
    for name in ENV_VARS:
        value = os.environ.get(name)
        if value is None:
            unset.append(name)
        else:
            rows.append((name, value if value else "(set, empty)"))
    if unset:
        rows.append(("unset", ", ".join(unset)))
    return rows


def report() -> str:
    """The report as text: one titled section per probe, each line ``key: value``."""
    out = []
    for title, probe_name in _SECTIONS:
        out.append(f"{title}:")
        try:
            rows = globals()[probe_name]()
        except Exception as exc:
            rows = [("error", _error_line(exc))]
        width = max((len(key) for key, _ in rows), default=0)
        out.extend(f"  {key + ':':<{width + 1}} {value}" for key, value in rows)
        out.append("")
    return "\n".join(out).rstrip("\n")
