"""The lifecycle of the Python classes that hold something to give back (:class:`Program`,
:class:`Linker`, the program caches), as :class:`Resource` is the Cython classes': one closed
flag, ``is_closed``, and the one liveness check, ``_check_open``, with Resource's message.

Each subclass lists ``_closed`` in its own ``__slots__`` (the base has none, so that it mixes
with any other base), sets it False in ``__init__`` and writes its own ``close()`` (what it gives
back, under which lock), which sets ``_closed``; the flag is never cleared.
"""

from __future__ import annotations

__all__: list[str] = []


class Closable:
    """Base of the Python classes with a ``close()``: ``is_closed`` and ``_check_open``."""

    __slots__ = ()
    _closed: bool

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` has been called."""
        return self._closed

    def _check_open(self) -> None:
        """The liveness check: RuntimeError once closed."""
        if self._closed:
            raise self._closed_error()

    def _closed_error(self) -> RuntimeError:
        return RuntimeError(f"this {type(self).__name__} is closed")
