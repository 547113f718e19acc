"""``python -m cuda_core.bench``: what a kernel launch costs on this machine, through
cuda_core, beside the C floor (``cuLaunchKernelEx`` in a C loop, built into the wheel), the bare
cuda.bindings call, and NVIDIA's cuda.core and CuPy where they are installed. ``python -m
cuda_core.bench --help`` lists the options; the documentation's "Measuring" page says how to
read the table. For timing a function of your own, see :func:`cuda_core.utils.benchmark`.

The modules here are the harness the project's ``benchmarks/`` scripts share; none of their
names is public API.
"""
