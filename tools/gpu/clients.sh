#!/bin/bash
# The two real clients on NVIDIA's cuda.core and on ours (compat mode), compared, on the GPU
# machine: numba-cuda 0.30.4 through ../shared/clients/numba/run.sh (staged in .gpu/numba/, its
# wheels in .gpu/numba_extra/ as tools/gpu/zero_crashes.sh expects them), then cuda-cccl 1.2.1
# through tools/gpu/cccl/client.py (staged by tools/gpu/cccl/fetch.sh). run.sh reads its wheels
# from .gpu/extra/ of the tree it lies in, so it runs from a copy laid out that way.
#   LOG_DIR=$OUT bash .gpu/on-gpu.sh bash tools/gpu/clients.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
mkdir -p "$copy/.gpu"
cp "$root"/.gpu/*.whl "$copy/.gpu/"
cp -r "$root/.gpu/numba" "$copy/.gpu/numba"
cp -r "$root/.gpu/numba_extra" "$copy/.gpu/extra"
LOG_DIR=${LOG_DIR:-/tmp}/numba_both bash "$copy/.gpu/numba/run.sh"
cd "$root" && python3 tools/gpu/cccl/client.py
