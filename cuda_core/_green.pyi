from collections.abc import Sequence
from typing import Union

from cuda_core._device import Device
from cuda_core._green_options import (
    ContextOptions as ContextOptions,
    SMResourceOptions,
    WorkqueueResourceOptions,
    WorkqueueSharingScopeType,
)

class SMResource:
    @property
    def handle(self) -> int: ...
    @property
    def sm_count(self) -> int: ...
    @property
    def min_partition_size(self) -> int: ...
    @property
    def coscheduled_alignment(self) -> int: ...
    @property
    def flags(self) -> int: ...
    def split(self, options: SMResourceOptions | dict, *,
              dry_run: bool = False) -> tuple[list[SMResource], SMResource]: ...

class WorkqueueResource:
    @property
    def handle(self) -> int: ...
    @property
    def device(self) -> Device: ...
    @property
    def sharing_scope(self) -> WorkqueueSharingScopeType: ...
    @property
    def concurrency_limit(self) -> int: ...
    def configure(self, options: WorkqueueResourceOptions | dict) -> None: ...

class DeviceResources:
    @property
    def sm(self) -> SMResource: ...
    @property
    def workqueue(self) -> WorkqueueResource: ...

DeviceResourcesType = Union[SMResource, WorkqueueResource,
                            Sequence[Union[SMResource, WorkqueueResource]]]
