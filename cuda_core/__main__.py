"""``python -m cuda_core``: print what cuda_core finds on this machine (its installation, Python,
the packages it runs on, the CUDA driver, the devices, the compiler libraries and the relevant
environment variables). Exits 0 on a machine without a GPU or driver too."""

import sys

from cuda_core._diagnostics import report

_USAGE = ("usage: python -m cuda_core\n"
          "Prints what cuda_core finds on this machine, for bug reports and install checks.")


def main(argv):
    if argv:
        help_asked = argv[0] in ("-h", "--help")
        print(_USAGE, file=sys.stdout if help_asked else sys.stderr)
        return 0 if help_asked else 2
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
