from typing import Any

__all__: list[str]

def texture_options_ready(o: Any, address_t: type, filter_t: type, read_t: type) -> bool: ...
