#!/bin/bash
# Issue 28 on a two-GPU machine (nvidia-h200-x2 / nvidia-h100-x2), after stage.sh with
# CUDA_CORE_BENCH=1 (benchmarks/ipc.py's C floor): the machine's topology, the peer-access probe
# (tools/gpu/probe_peer_access.py), the whole suite (xdist, JUnit XML in LOG_DIR), the
# multi-GPU example's two parts, the IPC scenarios against NVIDIA's cuda.core
# (tests/test_ipc_scenarios.py, verbose), and benchmarks/ipc.py, one after the other.
#   LOG_DIR=$OUT bash .gpu/on-gpu.sh bash tools/gpu/two_gpu.sh
# SKIP="probe suite example scenarios ipc" leaves parts out; JOBS (default 16) sets the suite's
# workers; SUITE_S (default 330) its limit; TESTS (default tests) what the suite runs; ONE_GPU=1
# runs the suite on one GPU too, at the same time (on two H200s the two suites at once, 14
# workers each, needed more than 300 s: give SUITE_S=400, or run them in two calls); BENCH=1
# adds the launch and view benchmarks (ROUNDS rounds, default 11).
# The suite runs with --dist loadgroup: tests/test_differential_gpu_calls.py's matrix is built by
# one worker, not by each. On two H200s the suite alone took 295 s with 24 workers.
# NVLink multicast stays off in every process (on-gpu.sh exports the three variables; set here
# again for a run outside it).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
default_out=/tmp/two_gpu
. "$(dirname "$0")/_run_setup.sh"
{ nvidia-smi -L; nvidia-smi topo -m; } > "$out/topology.txt" 2>&1
head -3 "$out/topology.txt"
if [[ $skip != *" probe "* ]]; then
  (cd /tmp && timeout 120 python3 "$tree/tools/gpu/probe_peer_access.py") > "$out/probe.log" 2>&1
  grep -E "^PEER|^NVML|^DISCARD" "$out/probe.log"
fi
# The suite on both GPUs and, with ONE_GPU=1, at the same time on one (CUDA_VISIBLE_DEVICES=0,
# JOBS workers each), with the example's own run beside them; each log is printed after.
pids=()
if [[ $skip != *" suite "* ]]; then
  (cd "$tree" && timeout -s INT -k 30 "${SUITE_S:-330}" python3 -m pytest -q -rs -n "${JOBS:-16}" \
     --dist loadgroup -p no:cacheprovider --durations=15 --junitxml="$out/suite.xml" ${TESTS:-tests}) \
     > "$out/suite.log" 2>&1 &
  pids+=($!)
  if [ "${ONE_GPU:-0}" = 1 ]; then
    tree1=$(mktemp -d)
    cp -a "$tree/." "$tree1/"
    (cd "$tree1" && CUDA_VISIBLE_DEVICES=0 timeout -s INT -k 30 "${SUITE_S:-330}" python3 -m \
       pytest -q -rs -n "${JOBS:-16}" --dist loadgroup -p no:cacheprovider ${TESTS:-tests}) \
       > "$out/suite_one_gpu.log" 2>&1 &
    pids+=($!)
  fi
fi
if [[ $skip != *" example "* ]]; then
  # A crash prints the Python stack (faulthandler, inherited by the spawned ranks) and, where
  # staged, the native one (tools/gpu/segv_backtrace.c).
  preload=$root/.gpu/segv_backtrace.so
  [ -f "$preload" ] || preload=
  (cd /tmp && LD_PRELOAD=$preload timeout 180 python3 -X faulthandler \
     "$tree/examples/multi_gpu_allreduce.py" ${EXAMPLE_ARGS:-}) > "$out/example.log" 2>&1
  echo "example rc=$?"; tail -25 "$out/example.log"
fi
for pid in "${pids[@]}"; do wait "$pid"; done
if [[ $skip != *" suite "* ]]; then
  echo "suite: $(tail -1 "$out/suite.log")"
  grep -E "^(FAILED|ERROR) |^_+ .* _+$" "$out/suite.log"
  if [ "${ONE_GPU:-0}" = 1 ]; then
    echo "suite on one GPU: $(tail -1 "$out/suite_one_gpu.log")"
    grep -E "^(FAILED|ERROR) |^_+ .* _+$" "$out/suite_one_gpu.log"
  fi
fi
if [[ $skip != *" scenarios "* ]]; then
  (cd "$tree" && timeout -s INT 300 python3 -m pytest -v -n 8 -p no:cacheprovider \
     tests/test_ipc_scenarios.py) > "$out/scenarios.log" 2>&1
  echo "scenarios: $(tail -1 "$out/scenarios.log")"; grep -E "(PASSED|FAILED|SKIPPED|ERROR)" "$out/scenarios.log" | sed 's/^\[gw[0-9]*\] \[ *[0-9]*%\] //' | sort | head -40
fi
if [[ $skip != *" ipc "* ]]; then
  (cd /tmp && timeout 240 python3 "$tree/benchmarks/ipc.py" ${IPC_ARGS:---quick}) > "$out/ipc.log" 2>&1
  echo "ipc rc=$?"; tail -40 "$out/ipc.log"
fi
# BENCH=1: the installed launch benchmark and the view benchmark, on the quiet machine.
if [ "${BENCH:-0}" = 1 ]; then
  (cd /tmp && timeout 150 python3 -m cuda_core.bench --rounds "${ROUNDS:-11}" -q \
     --json "$out/bench.json") > "$out/bench.txt" 2>&1
  sed -n '/^cuda_core launch latency/,$p' "$out/bench.txt" | grep -v "^  calls per sample"
  (cd /tmp && timeout 150 python3 "$tree/benchmarks/views.py" --rounds "${ROUNDS:-11}" -q) \
    > "$out/views.txt" 2>&1
  grep -E "^(CuPy|PyTorch|Numba|NumPy)|cuda_core <= " "$out/views.txt"
fi
