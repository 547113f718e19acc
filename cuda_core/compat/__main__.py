"""``python -m cuda_core.compat SCRIPT [ARGS]`` or ``python -m cuda_core.compat -m MODULE
[ARGS]``: run a program written for cuda.core on cuda_core (compat mode), as ``python SCRIPT``
or ``python -m MODULE`` would. Its subprocesses get ``CUDA_CORE_COMPAT=1``, and so run in
compat mode too."""

import os
import runpy
import sys

from cuda_core.compat import install

_USAGE = ("usage: python -m cuda_core.compat SCRIPT [ARGS...]\n"
          "       python -m cuda_core.compat -m MODULE [ARGS...]\n"
          "Runs the program with `import cuda.core` giving cuda_core (compat mode).")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "-m" and len(argv) < 2:
        print("python -m cuda_core.compat: -m needs a module name\n" + _USAGE, file=sys.stderr)
        return 2
    os.environ["CUDA_CORE_COMPAT"] = "1"
    install()
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]  # runpy puts the module's path in argv[0]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        script = argv[0]
        sys.argv = list(argv)
        if not sys.flags.safe_path:  # `python SCRIPT` puts the script's folder first, not ours
            sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
