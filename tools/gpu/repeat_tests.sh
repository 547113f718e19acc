#!/bin/bash
# Hunting an intermittent hang on the GPU machine, after stage.sh: runs TESTS (pytest node ids or
# files) ROUNDS times one after the other, each pytest with faulthandler_timeout (a test still
# running after FH_S seconds prints every thread's stack) and a child-process budget of
# CHILD_S seconds (tests/helpers/ipc.py: a child still running then prints its stacks and exits);
# then LOAD_TESTS under xdist (LOAD_JOBS workers), to see the same tests beside others.
#   LOG_DIR=$OUT TESTS="tests/test_multi_gpu.py" bash .gpu/on-gpu.sh bash tools/gpu/repeat_tests.sh
set -u
: "${TESTS:?TESTS names the tests to repeat (pytest node ids or files)}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
default_out=/tmp/repeat_tests
. "$(dirname "$0")/_run_setup.sh"
export CUDA_CORE_TEST_CHILD_TIMEOUT=${CHILD_S:-45}
for i in $(seq "${ROUNDS:-3}"); do
  (cd "$tree" && timeout -s INT -k 20 "${ROUND_S:-150}" python3 -X faulthandler -m pytest -v -s \
     -p no:cacheprovider -o faulthandler_timeout="${FH_S:-60}" ${TESTS}) \
    > "$out/round_$i.log" 2>&1
  echo "round $i rc=$?: $(tail -1 "$out/round_$i.log")"
done
if [ -n "${LOAD_TESTS:-}" ]; then
  (cd "$tree" && timeout -s INT -k 20 "${LOAD_S:-240}" python3 -m pytest -q -rs \
     -n "${LOAD_JOBS:-8}" -p no:cacheprovider -o faulthandler_timeout="${FH_S:-60}" \
     --junitxml="$out/load.xml" ${LOAD_TESTS}) > "$out/load.log" 2>&1
  echo "load rc=$?: $(tail -1 "$out/load.log")"
  grep -E "^(FAILED|ERROR) " "$out/load.log"
fi
