from collections.abc import Callable, Sequence
from typing import Any

from cuda_core._event import Event
from cuda_core._kernel import Kernel
from cuda_core._launch_config import LaunchConfig
from cuda_core._memory._buffer import Buffer
from cuda_core.graph._definition import GraphDefinition

class ExecutableGraphNode: ...

class _Switchable(ExecutableGraphNode):
    @property
    def is_enabled(self) -> bool: ...
    def enable(self) -> None: ...
    def disable(self) -> None: ...

class ExecutableKernelNode(_Switchable):
    def update(self, *, config: LaunchConfig, kernel: Kernel, args: Sequence[Any]) -> None: ...

class ExecutableMemsetNode(_Switchable):
    def update(self, *, dst: Buffer | int, value: Any, width: int, height: int = 1,
               pitch: int = 0) -> None: ...

class ExecutableMemcpyNode(_Switchable):
    def update(self, *, dst: Buffer | int, src: Buffer | int, size: int) -> None: ...

class ExecutableChildGraphNode(ExecutableGraphNode):
    def update(self, child: GraphDefinition) -> None: ...

class ExecutableEventRecordNode(ExecutableGraphNode):
    def update(self, event: Event) -> None: ...

class ExecutableEventWaitNode(ExecutableGraphNode):
    def update(self, event: Event) -> None: ...

class ExecutableHostCallbackNode(ExecutableGraphNode):
    def update(self, fn: Callable[[], object] | Any, *,
               user_data: int | bytes | bytearray | memoryview | None = None) -> None: ...

