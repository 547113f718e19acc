#!/bin/bash
# Stage the whole suite on the GPU against the CUDA 12 build (issue 29, point 3). Run here, from
# the project checkout. What it needs there is more than one carry of the device holds (64 MiB),
# so it comes in two:
#   .gpu/       (or $CU12_DIR) the cp312 wheel built for CUDA 12 (CUDA_CORE_CUDA_MAJOR=12), cuda-bindings 12.9,
#               NVRTC and nvJitLink 12.6 (12.6's NVRTC wheel is 24 MB; 12.8's and 12.9's are 88)
#               the CUDA 12 header wheels of the test extra and cuda-pathfinder (as ours needs);
#   .gpu-nvvm/  libNVVM 12.6 (nvidia-cuda-nvcc-cu12: CUDA 12 has no nvidia-nvvm wheel).
# Then there, back to back (/tmp stays while the machine is held, and it is let go after 30 s
# idle):
#   call 1, carry [".gpu"]:       bash tools/gpu/cu12_suite.sh install
#   call 2, carry [".gpu-nvvm"]:  LOG_DIR=$OUT bash tools/gpu/cu12_suite.sh run
# stage.sh (CUDA 13) wipes .gpu/; run it again afterwards for the CUDA 13 runs. Or stage here
# with CU12_DIR=.gpu12, beside a CUDA 13 .gpu/, and give the same CU12_DIR to cu12_suite.sh
# install (carrying .gpu12).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
py=${PY312:-$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 2>/dev/null | sort -V | tail -1)}
[ -x "$py" ] || { echo "stage_cu12: no Python 3.12 found (set PY312=/path/to/python3.12)"; exit 1; }
dir=${CU12_DIR:-.gpu}
for d in "$dir" .gpu-nvvm; do grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude; done
rm -rf "$dir" .gpu-nvvm && mkdir -p "$dir/cu12" .gpu-nvvm
CUDA_CORE_CUDA_MAJOR=12 "$py" -m pip wheel -q --no-deps -w "$dir" . 2>&1 | grep -v '^WARNING: Location' || true
ls "$dir"/*.whl >/dev/null 2>&1 || { echo "stage_cu12: the wheel did not build"; exit 1; }
get() {  # get DIR SPEC...: cp312 manylinux wheels of SPEC, without their dependencies
  local dir=$1; shift
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64 \
    -d "$dir" "$@" 2>&1 | grep -v '^WARNING: Location' || true
}
get "$dir/cu12" "cuda-bindings==12.9.*" "nvidia-cuda-nvrtc-cu12==12.6.85" \
  "nvidia-nvjitlink-cu12==12.6.85" "nvidia-cuda-runtime-cu12>=12.9,<13" \
  "nvidia-cuda-profiler-api-cu12>=12.9,<13" "cuda-pathfinder>=1.4.2"
get .gpu-nvvm "nvidia-cuda-nvcc-cu12==12.6.85"
for d in "$dir" .gpu-nvvm; do
  size=$(du -sb "$d" | cut -f1)
  [ "$size" -lt $((64 * 1024 * 1024)) ] || { echo "stage_cu12: $d is $size bytes, over the 64 MiB carry"; exit 1; }
  echo "staged $d ($((size / 1024 / 1024)) MiB): $(find "$d" -name '*.whl' -printf '%f ')"
done
