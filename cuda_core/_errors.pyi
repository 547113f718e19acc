class CUDAError(Exception):
    code: int | None
    name: str | None
    explanation: str | None
    def __init__(self, message: str, code: int | None = ..., name: str | None = ...,
                 explanation: str | None = ...) -> None: ...

class CUDALaunchError(CUDAError, ValueError): ...

class CUDAOutOfMemoryError(CUDAError, MemoryError): ...

class NVRTCError(CUDAError):
    log: str
    def __init__(self, message: str, code: int | None = ..., name: str | None = ...,
                 explanation: str | None = ..., log: str = ...) -> None: ...

class CUDAWarning(RuntimeWarning): ...
