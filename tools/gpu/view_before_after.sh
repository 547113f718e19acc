#!/bin/bash
# Two builds of cuda_core, their view costs side by side on one GPU machine: the wheels in
# .gpu/OLD/ and .gpu/NEW/ (cp312) installed alternately, OLD then NEW, PAIRS times (default 3);
# each install runs tools/gpu/view_ablation.py (ours over CuPy's own __dlpack__) and
# benchmarks/views.py's CuPy cases (ROUNDS rounds, default 7), a process each. The lines of each
# run are prefixed with the build and the pair; the logs go to LOG_DIR (default /tmp).
#   bash .gpu/on-gpu.sh bash tools/gpu/view_before_after.sh
# The wheel in .gpu/ is installed again at the end.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${LOG_DIR:-/tmp}
install() { python3 -m pip install -q --no-index --no-deps --force-reinstall "$@" 2>&1 | grep -v '^WARNING'; }
for pair in $(seq "${PAIRS:-3}"); do
  for build in OLD NEW; do
    install "$root"/.gpu/$build/*.whl
    log=$out/views_${build}_$pair.log
    (cd /tmp && python3 "$root/tools/gpu/view_ablation.py" \
       && python3 "$root/benchmarks/views.py" --rounds "${ROUNDS:-7}" -k CuPy) > "$log" 2>&1
    grep -E "ours over floor|CuPy|x\)|PASS|FAIL" "$log" | sed "s/^/$build $pair: /"
  done
done
install "$root"/.gpu/*.whl
