# An alias of cuda_core as cuda.core that is not compat mode: a module holding a copy of
# cuda_core's public names, __version__ 1.2.0, and the public submodules (issue 26, point 1).
import sys
import types

import cuda
import cuda_core
import cuda_core.graph
import cuda_core.system
import cuda_core.typing
import cuda_core.utils

alias = types.ModuleType("cuda.core")
alias.__dict__.update({k: v for k, v in vars(cuda_core).items() if not k.startswith("__")})
alias.__version__ = "1.2.0"
alias.__path__ = []
sys.modules["cuda.core"] = alias
cuda.core = alias
for name in ("graph", "system", "typing", "utils"):
    sys.modules[f"cuda.core.{name}"] = getattr(cuda_core, name)
