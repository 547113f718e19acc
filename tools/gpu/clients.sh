#!/bin/bash
# The two real clients on NVIDIA's cuda.core and on ours (compat mode), compared, on the GPU
# machine: numba-cuda 0.30.4 through ../shared/clients/numba/run.sh (staged in .gpu/numba/, its
# wheels in .gpu/numba_extra/ as tools/gpu/zero_crashes.sh expects them), then cuda-cccl 1.2.1
# through tools/gpu/cccl/client.py (staged by tools/gpu/cccl/fetch.sh), with where a numba
# launch's time goes on each side (tools/gpu/numba_launch_split.py). run.sh reads its wheels
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
# Where a numba launch's time goes, on each side, in the environment run.sh left in /tmp/site.
for side in control ours; do
  c=$([ "$side" = ours ] && echo 1 || echo 0)
  (cd /tmp && PYTHONPATH=/tmp/sitehook:/tmp/site PYTHONSAFEPATH=1 PEER=$side CUDA_CORE_COMPAT=$c \
     timeout 180 python3 "$root/tools/gpu/numba_launch_split.py")
done
cd "$root" && python3 tools/gpu/cccl/client.py
