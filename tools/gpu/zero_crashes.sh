#!/bin/bash
# Issue 26's "done when" runs at once on a machine of 4 GPUs, one kind of run per GPU, each
# stopped by one deadline (DEADLINE_S, default 540 s from the start, under the device's 600 s):
#   GPU 0: the whole test suite, then lifetime stress programs until the deadline;
#   GPU 1: tests/test_crash_sites.py 20 times (crash_sites_20.sh), then stress programs;
#   GPU 2: numba-cuda's tests on ours 5 times, and under the plain alias 3 times (numba_ours.sh);
#   GPU 3: stress programs.
# Every process sees one GPU (CUDA_VISIBLE_DEVICES), so the suite runs as on a one-GPU machine.
# Staged as usual, plus the numba client (its wheels in .gpu/numba_extra/, apart from the
# suite's extras); on the GPU machine: LOG_DIR=$OUT bash .gpu/on-gpu.sh bash tools/gpu/zero_crashes.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
L=${LOG_DIR:-/tmp/zero_crashes}
mkdir -p "$L"
gpus=$(nvidia-smi -L | wc -l)
[ "$gpus" -ge 4 ] || { echo "zero_crashes: needs 4 GPUs, found $gpus"; exit 1; }
end=$(( $(date +%s) + ${DEADLINE_S:-540} ))
left() { echo $(( end - $(date +%s) )); }
tree=$(mktemp -d)
(cd "$root" && tar --exclude=./cuda_core --exclude=./.gpu --exclude=./.git --exclude=./build -cf - .) \
  | tar -xf - -C "$tree"
export PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1

# Stress programs on the GPU this subshell sees, until the deadline: SIGINT lets the test print
# its summary line (appended to stress.txt) for what ran.
stress() {
  local s; s=$(left); [ "$s" -gt 30 ] || return 0
  (cd "$tree" && CUDA_CORE_STRESS_PROGRAMS=$1 CUDA_CORE_STRESS_JOBS=16 CUDA_CORE_STRESS_SEED=random \
     CUDA_CORE_STRESS_REPORT="$L/stress.txt" timeout -s INT -k 30 "$s" \
     python3 -m pytest -p no:cacheprovider -q -s tests/test_lifetime_stress.py -k gpu)
}

(export CUDA_VISIBLE_DEVICES=0
 (cd "$tree" && timeout -s INT -k 30 "$(left)" python3 -m pytest -p no:cacheprovider tests -q -rs) \
   > "$L/suite.log" 2>&1
 stress 2000 > "$L/stress0.log" 2>&1) &
(export CUDA_VISIBLE_DEVICES=1
 bash "$root/tools/gpu/crash_sites_20.sh" > "$L/crash20.log" 2>&1
 stress 2000 > "$L/stress1.log" 2>&1) &
(export CUDA_VISIBLE_DEVICES=2
 NUMBA_EXTRA="$root/.gpu/numba_extra" timeout -k 30 "$(left)" bash "$root/tools/gpu/numba_ours.sh" 5 \
   > "$L/numba.log" 2>&1) &
(export CUDA_VISIBLE_DEVICES=3
 stress 3000 > "$L/stress3.log" 2>&1) &
wait
echo "suite (GPU 0): $(tail -1 "$L/suite.log")"
grep -E "^crash-sites run|^ +[0-9]+ FAILED" "$L/crash20.log"
cat "$L/numba.log"
cat "$L/stress.txt" 2>/dev/null
awk '/^LIFETIME STRESS/ {p += $3; c += $5; h += $7; g += $9}
     END {printf "LIFETIME STRESS in all: %d programs, %d crashed, %d hung, %d garbage\n", p, c, h, g}' \
  "$L/stress.txt" 2>/dev/null
