#!/bin/bash
# Here (where pip reaches PyPI), from the project root, after ../shared/gpu/stage.sh (which
# empties .gpu/): put cuda-cccl 1.2.1's cp312 wheel into .gpu/cccl/ for tools/gpu/cccl/run.sh.
# The wheel is tagged manylinux_2_26, so that platform is named. Only the wheel itself: its
# cuda.compute runs the built-in operators (OpKind) without numba-cuda-mlir (71 MB, more than
# one carry holds), which only Python callables as operators need.
set -euo pipefail
W=.gpu/cccl
mkdir -p "$W"
py=${PY312:-$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 2>/dev/null | sort -V | tail -1)}
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_26_x86_64 --platform manylinux_2_28_x86_64 -d "$W" "cuda-cccl==1.2.1" \
  2>&1 | grep -v "^WARNING: Location" || true
ls "$W"
