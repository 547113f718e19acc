#!/bin/bash
# Replay lifetime programs many times, to measure a crash that comes one run in ten: each
# PROGRAM.json (tests/helpers/lifetime.py's format) N times, P at once, with the native
# backtrace library preloaded when it was staged (tools/gpu/segv_backtrace.c). Prints, per
# program, how many runs crashed; each run's output is in LOG_DIR/<program>/r<i>.log.
# On the GPU machine: bash .gpu/on-gpu.sh bash tools/gpu/replay_lifetime.sh a.json b.json
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
N=${N:-45}; P=${P:-15}; out=${LOG_DIR:-/tmp/replay}
preload=$root/.gpu/segv_backtrace.so
[ -f "$preload" ] || preload=
export PYTHONSAFEPATH=1
for program in "$@"; do
  name=$(basename "$program" .json)
  mkdir -p "$out/$name"
  seq 1 "$N" | xargs -P "$P" -I{} sh -c \
    "LD_PRELOAD=$preload python3 '$root/tests/helpers/lifetime.py' < '$program' > '$out/$name/r{}.log' 2>&1"
  echo "$name: $(grep -l 'Segmentation fault\|SIGSEGV\|native backtrace' "$out/$name"/*.log 2>/dev/null | wc -l) of $N crashed"
done
