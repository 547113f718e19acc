"""Utilities beside the core objects: strided memory views of other libraries' arrays, batched
memory operations, the program cache, and a microbenchmark timer.

``cuda_core.utils`` is a public namespace; its names are listed in ``__all__``.
"""

from cuda_core._memory._batch import (copy_batch, discard_batch, discard_prefetch_batch,
                                      prefetch_batch)
from cuda_core._memory._copy_options import CopyOptions, MemcpyOverlapMode, MemcpySrcAccessOrder
from cuda_core._memoryview import StridedMemoryView
from cuda_core._viewable_args import args_viewable_as_strided_memory
from cuda_core.utils._benchmark import BenchmarkResult, benchmark
from cuda_core.utils._file_stream_program_cache import FileStreamProgramCache
from cuda_core.utils._in_memory_program_cache import InMemoryProgramCache
from cuda_core.utils._program_cache import ProgramCacheResource
from cuda_core.utils._program_cache_key import make_program_cache_key

__all__ = [
    "BenchmarkResult",
    "CopyOptions",
    "FileStreamProgramCache",
    "InMemoryProgramCache",
    "MemcpyOverlapMode",
    "MemcpySrcAccessOrder",
    "ProgramCacheResource",
    "StridedMemoryView",
    "args_viewable_as_strided_memory",
    "benchmark",
    "copy_batch",
    "discard_batch",
    "discard_prefetch_batch",
    "make_program_cache_key",
    "prefetch_batch",
]
