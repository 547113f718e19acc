from collections.abc import Sequence

from cuda_core._device import Device
from cuda_core._memory._buffer import Buffer
from cuda_core._memory._copy_options import CopyOptions
from cuda_core._memory._location import Host
from cuda_core._stream import Stream
from cuda_core.typing import IsStreamType

_Location = Device | Host | int

def copy_batch(stream: Stream | IsStreamType, srcs: Sequence[Buffer], dsts: Sequence[Buffer],
               *, options: CopyOptions | Sequence[CopyOptions] | None = None) -> None: ...
def prefetch_batch(stream: Stream | IsStreamType, buffers: Sequence[Buffer],
                   locations: _Location | Sequence[_Location]) -> None: ...
def discard_batch(stream: Stream | IsStreamType, buffers: Sequence[Buffer]) -> None: ...
def discard_prefetch_batch(stream: Stream | IsStreamType, buffers: Sequence[Buffer],
                           locations: _Location | Sequence[_Location]) -> None: ...
