# Sourced by the GPU-machine runners (suite_bench_clients.sh, two_gpu.sh) after `set -u`, with
# `default_out` set: root (the project), out (LOG_DIR or default_out, created), skip (SKIP with
# spaces around, for `[[ $skip != *" part "* ]]`), tree (a copy of the project without the
# package source, so that tests import the installed wheel), and the test extra's header wheels
# (/tmp/gpu-extra, where on-gpu.sh installs them) on PYTHONPATH: run outside on-gpu.sh (after
# "on-gpu.sh true"), the C-API tests would not find cudaProfiler.h.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${LOG_DIR:-$default_out}
mkdir -p "$out"
skip=" ${SKIP:-} "
tree=$(mktemp -d)
(cd "$root" && tar --exclude=./cuda_core --exclude=./.gpu --exclude=./.gpu12 --exclude=./.git \
   --exclude=./build -cf - .) | tar -xf - -C "$tree"
export PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1
case ":${PYTHONPATH:-}:" in
  *:/tmp/gpu-extra:*) ;;
  *) [ -d /tmp/gpu-extra ] && export PYTHONPATH=/tmp/gpu-extra${PYTHONPATH:+:$PYTHONPATH} ;;
esac
