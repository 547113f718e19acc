"""Process checkpointing (Linux): :class:`Process` locks another CUDA process, saves its GPU
memory to host memory, puts it back and lets the process go on, through the driver's
``cuCheckpointProcess*`` calls.

Importing this module touches no driver: each call initializes it on first use.
"""

from cuda_core._checkpoint import Process

__all__ = ["Process"]
