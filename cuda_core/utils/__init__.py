"""Utilities beside the core objects: the program cache.

``cuda_core.utils`` is a public namespace; its names are listed in ``__all__``.
"""

from cuda_core.utils._program_cache import (
    FileStreamProgramCache,
    InMemoryProgramCache,
    ProgramCacheResource,
    make_program_cache_key,
)

__all__ = [
    "FileStreamProgramCache",
    "InMemoryProgramCache",
    "ProgramCacheResource",
    "make_program_cache_key",
]
