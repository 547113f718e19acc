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
for batch in 1 2 3 4 5; do
  for j in 1 2 3 4; do
    i=$(( (batch - 1) * 4 + j ))
    python3 -m pytest -p no:cacheprovider -q -n 3 tests/test_crash_sites.py > "$run/crash$i.log" 2>&1 &
  done
  wait
done
for i in $(seq 20); do echo "crash-sites run $i: $(tail -1 "$run/crash$i.log")"; done
echo "every failure:"; cat "$run"/crash*.log | grep -E "^FAILED" | sort | uniq -c
