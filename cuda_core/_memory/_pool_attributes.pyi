class _MemoryCounters:
    @property
    def reserved_mem_current(self) -> int: ...
    reserved_mem_high: int
    @property
    def used_mem_current(self) -> int: ...
    used_mem_high: int

class MemoryPoolAttributes(_MemoryCounters):
    reuse_follow_event_dependencies: bool
    reuse_allow_opportunistic: bool
    reuse_allow_internal_dependencies: bool
    release_threshold: int
