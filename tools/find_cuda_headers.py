"""Print the include directory holding cuda.h and cudaProfiler.h from the NVIDIA wheels.

Used by CMakeLists.txt at build time: the headers come from the nvidia-cuda-runtime and
nvidia-cuda-profiler-api wheels of the same CUDA minor as the cuda-bindings being built against.
"""
import os
import sys


def main() -> int:
    try:
        import nvidia
    except ImportError:
        print("no 'nvidia' wheel namespace in the build environment", file=sys.stderr)
        return 1
    for root in nvidia.__path__:
        for sub in sorted(os.listdir(root), reverse=True):  # cu13 before cu12
            inc = os.path.join(root, sub, "include")
            if all(os.path.isfile(os.path.join(inc, h)) for h in ("cuda.h", "cudaProfiler.h")):
                print(inc)
                return 0
    print("cuda.h/cudaProfiler.h not found under " + ", ".join(nvidia.__path__), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
