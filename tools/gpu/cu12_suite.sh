#!/bin/bash
# On the GPU machine, after tools/gpu/stage_cu12.sh (which says how to call it): the whole suite
# against the CUDA 12 build of cuda_core, in a virtual environment of its own (/tmp/cu12-venv)
# that sees the machine's packages (numpy, CuPy, PyTorch, NVIDIA's cuda-core, which picks its
# CUDA 12 half beside cuda-bindings 12.9) but has cuda-bindings 12.9 and the CUDA 12 compilers
# of its own, so that the machine's CUDA 13 ones stay as they are.
#   install: make the environment and install .gpu/ into it (call 1)
#   run:     install .gpu-nvvm/ (libNVVM 12) and run the suite from a copy of the tree (call 2);
#            pytest.log goes to LOG_DIR.
set -uo pipefail
cd "$(dirname "$0")/../.."
venv=/tmp/cu12-venv
export PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
case "${1:-}" in
  install)
    rm -rf "$venv" && python3 -m venv --system-site-packages "$venv" || exit 1
    # The machine's python3 may itself be a virtual environment (its numpy, CuPy and PyTorch
    # are there, not in the base interpreter's site): its site-packages go after the new one's.
    parent=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    own=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    [ "$parent" != "$own" ] && echo "$parent" > "$own/_machine_site.pth"
    dir=${CU12_DIR:-.gpu}  # where stage_cu12.sh put the wheels (CU12_DIR there too)
    # --ignore-installed: the machine's interpreter may hold a CUDA 13 cuda_core of the same
    # version (on-gpu.sh installs there), which pip would otherwise count as installed here.
    "$venv/bin/python" -m pip install -q --no-index --no-deps --ignore-installed \
      "$dir"/*.whl "$dir"/cu12/*.whl 2>&1 \
      | grep -v '^WARNING'
    "$venv/bin/python" -c "
import cuda.bindings, cuda_core
from cuda_core._build_config import CUDA_MAJOR
print('installed: cuda_core', cuda_core.__version__, 'built for CUDA', CUDA_MAJOR,
      'with cuda-bindings', cuda.bindings.__version__)" ;;
  run)
    [ -x "$venv/bin/python" ] || { echo "cu12_suite: no $venv: run 'install' first, in the call before"; exit 1; }
    "$venv/bin/python" -c "from cuda_core._build_config import CUDA_MAJOR; assert CUDA_MAJOR == 12" ||
      { echo "cu12_suite: $venv does not import a CUDA 12 cuda_core: run 'install' again"; exit 1; }
    "$venv/bin/python" -m pip install -q --no-index --no-deps .gpu-nvvm/*.whl 2>&1 | grep -v '^WARNING'
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    "$venv/bin/python" -m cuda_core 2>&1 | head -30
    rm -rf /tmp/run-cu12 && mkdir -p /tmp/run-cu12
    tar --exclude=./cuda_core --exclude=./.gpu --exclude=./.gpu12 --exclude=./.gpu-nvvm --exclude=./.git --exclude=./build \
      -cf - . | tar -xf - -C /tmp/run-cu12
    cd /tmp/run-cu12 || exit 1
    "$venv/bin/python" -m pytest tests -q -rs -n "${JOBS:-4}" -p no:cacheprovider 2>&1 \
      | tee "${LOG_DIR:-/tmp}/pytest.log" | tail -40
    exit "${PIPESTATUS[0]}" ;;
  *) echo "usage: cu12_suite.sh install|run"; exit 2 ;;
esac
