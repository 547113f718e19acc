#!/bin/bash
# Issue 26's "done when" runs at once on a machine of several GPUs, each process seeing one GPU
# (CUDA_VISIBLE_DEVICES), all stopped by one deadline (DEADLINE_S, default 540 s from the start,
# under the device's 600 s per command). JOBS names what runs, one job per GPU in order (job i
# on GPU i modulo the count):
#   suite0, suite1, ...: the whole test suite, its files dealt out by size to that many parts;
#   crash: tests/test_crash_sites.py 20 times (crash_sites_20.sh);
#   numba: numba-cuda's tests on ours 5 times, and under the plain alias 3 times (numba_ours.sh);
#   clients: the two clients on NVIDIA's cuda.core and on ours, compared (clients.sh):
#            numba-cuda ("NUMBA ours passes ...") and cuda-cccl ("CCCL ours passes ...", staged
#            by tools/gpu/cccl/fetch.sh); after numba ("numba+clients"), since both install
#            into /tmp/site;
#   files: the test files FILES names;
#   stress: nothing before the stress programs.
# A GPU's jobs joined by "+" run one after the other. Default: "suite0 suite1 crash numba" on 4
# GPUs, "suite0 crash" on 2 (or e.g. JOBS="suite0 suite1+crash" then JOBS="numba crash" on 2).
# Then each GPU runs lifetime stress programs until the deadline (STRESS=0: none, the call ends
# with its jobs).
# Staged as usual, plus the numba client (its wheels in .gpu/numba_extra/, apart from the
# suite's extras); on the GPU machine:
#   LOG_DIR=$OUT bash .gpu/on-gpu.sh bash tools/gpu/zero_crashes.sh
# Every log goes into $LOG_DIR/logs.tgz; the summary is printed.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${LOG_DIR:-/tmp/zero_crashes}
L=$(mktemp -d)
gpus=$(nvidia-smi -L | wc -l)
[ "$gpus" -ge 1 ] || { echo "zero_crashes: no GPU"; exit 1; }
end=$(( $(date +%s) + ${DEADLINE_S:-540} ))
left() { echo $(( end - $(date +%s) )); }
tree=$(mktemp -d)
(cd "$root" && tar --exclude=./cuda_core --exclude=./.gpu --exclude=./.git --exclude=./build -cf - .) \
  | tar -xf - -C "$tree"
export PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1

# Stress programs on the GPU this subshell sees, until the deadline: SIGINT lets the test print
# its summary line (appended to stress.txt) for what ran.
stress() {
  [ "${STRESS:-1}" != 0 ] || return 0
  local s; s=$(left); [ "$s" -gt 40 ] || return 0
  (cd "$tree" && CUDA_CORE_STRESS_PROGRAMS=5000 CUDA_CORE_STRESS_JOBS=${STRESS_JOBS:-12} \
     CUDA_CORE_STRESS_SEED=random CUDA_CORE_STRESS_REPORT="$L/stress.txt" \
     timeout -s INT -k 30 "$s" python3 -m pytest -p no:cacheprovider -q -s tests/test_lifetime_stress.py -k gpu)
}
gpus_default=$([ "$gpus" -ge 4 ] && echo "suite0 suite1 crash numba" || echo "suite0 crash")
read -ra jobs <<< "${JOBS:-$gpus_default}"
# Deal the suite's files to its parts, largest first, each to the part with fewest bytes so far.
nparts=$(printf '%s\n' "${jobs[@]//+/$'\n'}" | grep -c '^suite')
declare -a part size
for i in $(seq 0 $((nparts - 1))); do part[i]=""; size[i]=0; done
if [ "$nparts" -gt 0 ]; then
  for f in $(cd "$tree" && wc -c tests/test_*.py | grep -v ' total$' | sort -rn | awk '{print $2}'); do
    best=0
    for i in $(seq 1 $((nparts - 1))); do [ "${size[i]}" -lt "${size[best]}" ] && best=$i; done
    part[best]+=" $f"; size[best]=$(( size[best] + $(wc -c < "$tree/$f") ))
  done
fi
for g in "${!jobs[@]}"; do
  (export CUDA_VISIBLE_DEVICES=$(( g % gpus ))  # more jobs than GPUs: they share, in turn
   for job in ${jobs[g]//+/ }; do  # "suite1+crash": one after the other
     case $job in
       suite*) (cd "$tree" && timeout -s INT -k 30 "$(left)" python3 -m pytest -p no:cacheprovider -q \
                  -rs --durations=15 ${part[${job#suite}]}) > "$L/$job.log" 2>&1 ;;
       crash) CRASH_LOGS="$L/crash" timeout -k 30 "$(left)" bash "$root/tools/gpu/crash_sites_20.sh" \
                > "$L/crash20.log" 2>&1 ;;
       numba) NUMBA_EXTRA="$root/.gpu/numba_extra" timeout -k 30 "$(left)" \
                bash "$root/tools/gpu/numba_ours.sh" 5 > "$L/numba.log" 2>&1 ;;
       clients) LOG_DIR="$L" timeout -k 30 "$(left)" bash "$root/tools/gpu/clients.sh" \
                  > "$L/clients.log" 2>&1 ;;
       files) (cd "$tree" && timeout -s INT -k 30 "$(left)" python3 -m pytest -p no:cacheprovider -q \
                 -rs $FILES) > "$L/files.log" 2>&1 ;;
       stress) ;;  # only the stress programs, which every GPU runs after its jobs
       *) echo "zero_crashes: unknown job $job" > "$L/$job.log" ;;
     esac
   done
   stress > "$L/stress$g.log" 2>&1) &
done
wait
{
  for g in "${!jobs[@]}"; do
    for job in ${jobs[g]//+/ }; do
      case $job in suite*|files) echo "$job (GPU $(( g % gpus ))): $(tail -1 "$L/$job.log")" ;; esac
    done
  done
  grep -hE "^(FAILED|ERROR) |^_{3,} .* _{3,}$" "$L"/suite*.log "$L"/files.log 2>/dev/null
  grep -E "^crash-sites run|^ +[0-9]+ FAILED" "$L/crash20.log" 2>/dev/null
  cat "$L/numba.log" 2>/dev/null
  grep -E "^(NUMBA|CCCL) ours|^reduce_into|^LAUNCH|^SPLIT" "$L/clients.log" 2>/dev/null
  cat "$L/stress.txt" 2>/dev/null
  awk '/^LIFETIME STRESS/ {p += $3; c += $5; h += $7; g += $9}
       END {printf "LIFETIME STRESS in all: %d programs, %d crashed, %d hung, %d garbage\n", p, c, h, g}' \
    "$L/stress.txt" 2>/dev/null
} | tee "$L/summary.txt"
mkdir -p "$out" && tar -czf "$out/logs.tgz" -C "$L" . && cp "$L/summary.txt" "$out/"
