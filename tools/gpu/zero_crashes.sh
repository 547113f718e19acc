#!/bin/bash
# Issue 26's "done when" runs at once on a machine of several GPUs, each process seeing one GPU
# (CUDA_VISIBLE_DEVICES), all stopped by one deadline (DEADLINE_S, default 540 s from the start,
# under the device's 600 s per command). On 4 GPUs:
#   GPUs 0 and 1: the whole test suite, its files dealt out by size to two pytest processes;
#   GPU 2: tests/test_crash_sites.py 20 times (crash_sites_20.sh);
#   GPU 3: numba-cuda's tests on ours 5 times, and under the plain alias 3 times (numba_ours.sh).
# On 2 GPUs: the whole suite on GPU 0, the crash sites 20 times on GPU 1 (no numba).
# Then each GPU runs lifetime stress programs until the deadline.
# Staged as usual, plus the numba client (its wheels in .gpu/numba_extra/, apart from the
# suite's extras); on the GPU machine:
#   LOG_DIR=$OUT bash .gpu/on-gpu.sh bash tools/gpu/zero_crashes.sh
# Every log goes into $LOG_DIR/logs.tgz; the summary is printed.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${LOG_DIR:-/tmp/zero_crashes}
L=$(mktemp -d)
gpus=$(nvidia-smi -L | wc -l)
[ "$gpus" -ge 2 ] || { echo "zero_crashes: needs 2 or 4 GPUs, found $gpus"; exit 1; }
end=$(( $(date +%s) + ${DEADLINE_S:-540} ))
left() { echo $(( end - $(date +%s) )); }
tree=$(mktemp -d)
(cd "$root" && tar --exclude=./cuda_core --exclude=./.gpu --exclude=./.git --exclude=./build -cf - .) \
  | tar -xf - -C "$tree"
export PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1

# Stress programs on the GPU this subshell sees, until the deadline: SIGINT lets the test print
# its summary line (appended to stress.txt) for what ran.
stress() {
  local s; s=$(left); [ "$s" -gt 40 ] || return 0
  (cd "$tree" && CUDA_CORE_STRESS_PROGRAMS=5000 CUDA_CORE_STRESS_JOBS=${STRESS_JOBS:-12} \
     CUDA_CORE_STRESS_SEED=random CUDA_CORE_STRESS_REPORT="$L/stress.txt" \
     timeout -s INT -k 30 "$s" python3 -m pytest -p no:cacheprovider -q -s tests/test_lifetime_stress.py -k gpu)
}
# On 4 GPUs, deal the suite's files to two halves, largest first, each to the half with fewer
# bytes; on 2, one process runs them all.
half=(" " " "); size=(0 0)
for f in $(cd "$tree" && wc -c tests/test_*.py | grep -v ' total$' | sort -rn | awk '{print $2}'); do
  i=$([ "$gpus" -lt 4 ] || [ "${size[0]}" -le "${size[1]}" ] && echo 0 || echo 1)
  half[i]+=" $f"; size[i]=$(( size[i] + $(wc -c < "$tree/$f") ))
done
parts=$([ "$gpus" -ge 4 ] && echo "0 1" || echo 0)
for g in $parts; do
  (export CUDA_VISIBLE_DEVICES=$g
   (cd "$tree" && timeout -s INT -k 30 "$(left)" python3 -m pytest -p no:cacheprovider -q -rs ${half[g]}) \
     > "$L/suite$g.log" 2>&1
   stress > "$L/stress$g.log" 2>&1) &
done
crash=$([ "$gpus" -ge 4 ] && echo 2 || echo 1)
(export CUDA_VISIBLE_DEVICES=$crash
 bash "$root/tools/gpu/crash_sites_20.sh" > "$L/crash20.log" 2>&1
 stress > "$L/stress$crash.log" 2>&1) &
if [ "$gpus" -ge 4 ]; then
  (export CUDA_VISIBLE_DEVICES=3
   NUMBA_EXTRA="$root/.gpu/numba_extra" timeout -k 30 "$(left)" bash "$root/tools/gpu/numba_ours.sh" 5 \
     > "$L/numba.log" 2>&1
   stress > "$L/stress3.log" 2>&1) &
fi
wait
{
  for g in $parts; do echo "suite part $g (GPU $g): $(tail -1 "$L/suite$g.log")"; done
  grep -hE "^(FAILED|ERROR) " "$L"/suite*.log
  grep -E "^crash-sites run|^ +[0-9]+ FAILED" "$L/crash20.log"
  cat "$L/numba.log" 2>/dev/null
  cat "$L/stress.txt" 2>/dev/null
  awk '/^LIFETIME STRESS/ {p += $3; c += $5; h += $7; g += $9}
       END {printf "LIFETIME STRESS in all: %d programs, %d crashed, %d hung, %d garbage\n", p, c, h, g}' \
    "$L/stress.txt" 2>/dev/null
} | tee "$L/summary.txt"
mkdir -p "$out" && tar -czf "$out/logs.tgz" -C "$L" . && cp "$L/summary.txt" "$out/"
