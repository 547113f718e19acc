#!/bin/bash
# tests/test_crash_sites.py 20 times on a GPU machine (issue 26: "passed 20 runs in a row"):
# 4 repetitions at once, 3 xdist workers each, from a copy of the tree without cuda_core/ (the
# installed wheel is tested). Prints one summary line per run, then every failure counted.
# On the maintainers' GPU machine: bash .gpu/on-gpu.sh bash tools/gpu/crash_sites_20.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
run=$(mktemp -d)
(cd "$root" && tar --exclude=./cuda_core --exclude=./.gpu --exclude=./.git --exclude=./build -cf - .) \
  | tar -xf - -C "$run"
cd "$run" || exit 1
export PYTHONSAFEPATH=1
# Each run's log goes to CRASH_LOGS (default: the copy); a test stuck for 150 s fails with the
# stacks of its threads (pytest-timeout) instead of holding its batch.
logs=${CRASH_LOGS:-$run}
mkdir -p "$logs"
for batch in 1 2 3 4 5; do
  for j in 1 2 3 4; do
    i=$(( (batch - 1) * 4 + j ))
    python3 -m pytest -p no:cacheprovider -q -n 3 --timeout=150 tests/test_crash_sites.py \
      > "$logs/crash$i.log" 2>&1 &
  done
  wait
  for i in $(seq $(( batch * 4 - 3 )) $(( batch * 4 ))); do
    echo "crash-sites run $i: $(tail -1 "$logs/crash$i.log")"
  done
done
echo "every failure:"; cat "$logs"/crash*.log | grep -E "^FAILED" | sort | uniq -c
