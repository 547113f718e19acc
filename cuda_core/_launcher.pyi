from typing import Any

from cuda_core._launch_config import LaunchConfig
from cuda_core._kernel import Kernel
from cuda_core._stream import Stream
from cuda_core.graph._builder import GraphBuilder
from cuda_core._options import IsStreamType

def launch(stream: Stream | GraphBuilder | IsStreamType, config: LaunchConfig, kernel: Kernel,
           *args: Any) -> None: ...
def _launch_handle(stream: Stream | IsStreamType, kernel: Kernel) -> int: ...
