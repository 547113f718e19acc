#!/bin/bash
# numba-cuda 0.30.4's own tests on cuda_core in compat mode, N times (default 5), counting the
# xdist workers that crashed; then test_managed_alloc.py 3 times with cuda.core answered by a
# plain alias of cuda_core (cuda_core_alias/, not compat mode), the setup of issue 26 point 1.
# Staged as ../shared/clients/numba/run.sh says (its files in .gpu/numba/, its wheels in
# .gpu/extra/, or in $NUMBA_EXTRA); on the GPU machine: bash tools/gpu/numba_ours.sh [N]
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
H=$root/.gpu/numba
N=${1:-5}
rm -rf /tmp/site
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/*.whl || exit 1
extras=$(ls "${NUMBA_EXTRA:-.gpu/extra}"/*.whl 2>/dev/null | grep -v '/nvidia_')
[ -n "$extras" ] && { python3 -m pip install -q --no-index --no-deps --target /tmp/site $extras || exit 1; }
mkdir -p /tmp/sitehook && echo "import site; site.addsitedir('/tmp/site')" > /tmp/sitehook/sitecustomize.py
export PYTHONPATH=/tmp/sitehook:/tmp/site:$H PYTHONUNBUFFERED=1 PYTHONSAFEPATH=1
MODS=$(sed -n '/^MODS="/,/"$/p' "$H/run.sh" | tr -d '"' | sed 's/^MODS=//')
S=/tmp/nc_suite; rm -rf "$S"; mkdir -p "$S"
for m in $MODS; do echo "from numba.cuda.tests.$m import *  # noqa: F401,F403" > "$S/test_${m//./__}.py"; done
for i in $(seq "$N"); do
  (cd "$S" && PEER=ours CUDA_CORE_COMPAT=1 timeout -s INT -k 20 240 python3 -m pytest -p numba_cuda_fixture \
     -p no:cacheprovider -q -n 12 --continue-on-collection-errors --timeout=90 -rf . > "/tmp/ours$i.log" 2>&1)
  echo "run $i: $(tail -1 "/tmp/ours$i.log"); crashed workers: $(grep -c 'crashed while running' "/tmp/ours$i.log")"
done
# The failing tests by name, with how many of the runs they failed in.
grep -h '^FAILED' /tmp/ours*.log | sed 's/ - .*//' | sort | uniq -c
# Why, as the first run's summary says it.
grep -h '^FAILED' /tmp/ours1.log | cut -c1-400
for i in 1 2 3; do
  (cd "$S" && PYTHONPATH=$root/tools/gpu/cuda_core_alias:$PYTHONPATH timeout 120 python3 -m pytest \
     -p numba_cuda_fixture -p no:cacheprovider -q test_cudadrv__test_managed_alloc.py > "/tmp/alias$i.log" 2>&1)
  echo "alias run $i: $(tail -1 "/tmp/alias$i.log")"
done
