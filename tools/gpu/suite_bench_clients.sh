#!/bin/bash
# One call on the GPU machine, after stage.sh (and the clients' staging, as zero_crashes.sh
# says): the whole suite with 12 xdist workers, then, on a quiet machine, the installed launch
# benchmark (python -m cuda_core.bench), the view-construction benchmark and the two clients
# (tools/gpu/clients.sh), one after the other so that no timing shares the machine.
#   LOG_DIR=$OUT bash .gpu/on-gpu.sh bash tools/gpu/suite_bench_clients.sh
# JOBS (default 12) sets the workers; SKIP="bench views clients" leaves parts out;
# CLIENTS_QUICK=1 runs only the clients' launch split and cuda-cccl (clients.sh). Logs (and
# bench.json, bench.png) go to LOG_DIR; the summary lines are printed.
set -u
default_out=/tmp/suite_bench_clients
. "$(dirname "$0")/_run_setup.sh"
(cd "$tree" && timeout -s INT -k 30 "${SUITE_S:-300}" python3 -m pytest -q -rs -n "${JOBS:-12}" \
   --dist loadgroup -p no:cacheprovider --durations=10 tests) > "$out/suite.log" 2>&1
echo "suite: $(tail -1 "$out/suite.log")"
grep -E "^(FAILED|ERROR) " "$out/suite.log"
if [[ $skip != *" bench "* ]]; then
  (cd /tmp && timeout 240 python3 -m cuda_core.bench --rounds "${ROUNDS:-11}" -q \
     --json "$out/bench.json" --plot "$out/bench.png") > "$out/bench.txt" 2>&1
  sed -n '/^cuda_core launch latency/,$p' "$out/bench.txt" | grep -v "^  calls per sample"
fi
if [[ $skip != *" views "* ]]; then
  (cd /tmp && timeout 240 python3 "$tree/benchmarks/views.py" --rounds "${ROUNDS:-11}" -q) \
    > "$out/views.txt" 2>&1
  grep -E "^(CuPy|PyTorch|Numba|NumPy)|cuda_core <= " "$out/views.txt"
fi
if [[ $skip != *" clients "* ]]; then
  LOG_DIR="$out" timeout 300 bash "$root/tools/gpu/clients.sh" > "$out/clients.log" 2>&1
  grep -E "^(NUMBA|CCCL) ours|^reduce_into|^LAUNCH|^SPLIT" "$out/clients.log"
fi
