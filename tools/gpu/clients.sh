#!/bin/bash
# The two real clients on NVIDIA's cuda.core and on ours (compat mode), compared, on the GPU
# machine: numba-cuda 0.30.4 through ../shared/clients/numba/run.sh (staged in .gpu/numba/, its
# wheels in .gpu/numba_extra/ as tools/gpu/zero_crashes.sh expects them), then cuda-cccl 1.2.1
# through tools/gpu/cccl/client.py (staged by tools/gpu/cccl/fetch.sh), with where a numba
# launch's time goes on each side (tools/gpu/numba_launch_split.py). run.sh reads its wheels
# from .gpu/extra/ of the tree it lies in, so it runs from a copy laid out that way.
# CLIENTS_QUICK=1 leaves out run.sh's test runs and launch loops (only its environment is made).
# PROFILE=1 adds tools/gpu/numba_launch_profile.py per side (time by run, heap, cProfile).
#   LOG_DIR=$OUT bash .gpu/on-gpu.sh bash tools/gpu/clients.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
mkdir -p "$copy/.gpu"
cp "$root"/.gpu/*.whl "$copy/.gpu/"
cp -r "$root/.gpu/numba" "$copy/.gpu/numba"
cp -r "$root/.gpu/numba_extra" "$copy/.gpu/extra"
if [ "${CLIENTS_QUICK:-0}" = 1 ]; then
  # Only the environment run.sh makes (/tmp/site: the wheel and the client's wheels, a site
  # hook so that compat mode's .pth runs), not its test runs and launch loops.
  rm -rf /tmp/site
  python3 -m pip install -q --no-index --no-deps --target /tmp/site "$copy"/.gpu/*.whl \
    $(ls "$copy"/.gpu/extra/*.whl | grep -v '/nvidia_') 2>&1 | grep -v '^WARNING'
  mkdir -p /tmp/sitehook && echo "import site; site.addsitedir('/tmp/site')" \
    > /tmp/sitehook/sitecustomize.py
else
  LOG_DIR=${LOG_DIR:-/tmp}/numba_both bash "$copy/.gpu/numba/run.sh"
fi
# Where a numba launch's time goes, on each side, in the environment run.sh left in /tmp/site.
tools=numba_launch_split.py
[ "${PROFILE:-0}" = 1 ] && tools="$tools numba_launch_profile.py"
for tool in $tools; do
  for side in control ours; do
    c=$([ "$side" = ours ] && echo 1 || echo 0)
    (cd /tmp && PYTHONPATH=/tmp/sitehook:/tmp/site PYTHONSAFEPATH=1 PEER=$side \
       CUDA_CORE_COMPAT=$c timeout 180 python3 "$root/tools/gpu/$tool")
  done
done
cd "$root" && python3 tools/gpu/cccl/client.py
