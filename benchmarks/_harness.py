"""The harness of these scripts is the installed one (``cuda_core.bench``, which
``python -m cuda_core.bench`` runs on): its names, importable here as before."""

from cuda_core.bench._harness import (Case, Contender, Prepared, Report, Target,
                                      Unavailable, run_cases)
from cuda_core.bench._report import (add_arguments, device_meta, finish,
                                     format_ns, print_report, run_script, write_json)

__all__ = ["Case", "Contender", "Prepared", "Report", "Target", "Unavailable", "add_arguments",
           "device_meta", "finish", "format_ns", "print_report", "run_cases", "run_script",
           "write_json"]
