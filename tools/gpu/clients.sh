#!/bin/bash
# The two real clients on NVIDIA's cuda.core and on ours (compat mode), compared, on the GPU
# machine: numba-cuda 0.30.4 through ../shared/clients/numba/run.sh (staged in .gpu/numba/, its
# wheels in .gpu/numba_extra/ as tools/gpu/zero_crashes.sh expects them), then cuda-cccl 1.2.1
# through tools/gpu/cccl/client.py (staged by tools/gpu/cccl/fetch.sh), with where a numba
# launch's time goes on each side (tools/gpu/numba_launch_split.py). run.sh reads its wheels
# from .gpu/extra/ of the tree it lies in, so it runs from a copy laid out that way.
# CLIENTS_QUICK=1 leaves out run.sh's test runs and launch loops (only its environment is made).
# PROFILE=1 adds tools/gpu/numba_launch_profile.py per side (time by run, heap, cProfile);
# SPLIT_ROUNDS, below.
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
# SPLIT_ROUNDS=n (default 1) runs the split n times per side, the sides alternating, each in a
# process of its own, and then prints each side's median total per form: the speed of one
# process on these hosts moves by up to 1.45x (tools/gpu/numba_launch_profile.py).
numba_tool() {
  local c
  c=$([ "$2" = ours ] && echo 1 || echo 0)
  (cd /tmp && PYTHONPATH=/tmp/sitehook:/tmp/site PYTHONSAFEPATH=1 PEER=$2 \
     CUDA_CORE_COMPAT=$c timeout 180 python3 "$root/tools/gpu/$1")
}
for _ in $(seq "${SPLIT_ROUNDS:-1}"); do
  for side in control ours; do numba_tool numba_launch_split.py $side; done
done | tee "$copy/split.log"
if [ "${SPLIT_ROUNDS:-1}" -gt 1 ]; then
  python3 - "$copy/split.log" <<'PY'
import re, statistics, sys
totals = {}
for line in open(sys.argv[1]):
    m = re.match(r"SPLIT (\w+) (\S+): ([0-9.]+) us/launch", line)
    if m:
        totals.setdefault((m[2], m[1]), []).append(float(m[3]))
for form in sorted({f for f, _ in totals}):
    c, o = totals.get((form, "control"), []), totals.get((form, "ours"), [])
    if c and o:
        mc, mo = statistics.median(c), statistics.median(o)
        print(f"SPLIT median of {len(c)}/{len(o)} processes {form}: control {mc:.2f} us, "
              f"ours {mo:.2f} us ({mo / mc:.2f}x)")
PY
fi
if [ "${PROFILE:-0}" = 1 ]; then
  for side in control ours; do numba_tool numba_launch_profile.py $side; done
fi
cd "$root" && python3 tools/gpu/cccl/client.py
