from collections.abc import Callable
from typing import Any

import numpy
import numpy.typing as npt

def _live_events() -> int: ...
def run(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], n_repeat: int,
        n_warmup: int, max_duration: float, devices: tuple[int, ...] | None,
        stream: Any) -> tuple[npt.NDArray[numpy.float64], npt.NDArray[numpy.float64],
                              tuple[int, ...]]: ...
