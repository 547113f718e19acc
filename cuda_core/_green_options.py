"""Options of green contexts and device resources, and the workqueue sharing-scope enum.

Each options class is a dataclass that the APIs accept as an instance, a ``dict`` of its
fields or ``None`` (``ContextOptions`` has a required field, so not ``None``), through
:func:`cuda_core._options.check_or_create_options`. Each checks its fields in
``__post_init__``, before any driver call, and names the field in the error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from cuda_core._checks import check_bool, check_enum, check_int
from cuda_core._enum import StrEnum as _StrEnum

__all__ = [
    "ContextOptions",
    "SMResourceOptions",
    "WorkqueueResourceOptions",
    "WorkqueueSharingScopeType",
]

_U32_MAX = 2**32 - 1


class WorkqueueSharingScopeType(_StrEnum):
    """How a green context shares the device's workqueues (``CUdevWorkqueueConfigScope``)."""

    DEVICE_CTX = "device_ctx"
    GREEN_CTX_BALANCED = "green_ctx_balanced"


def _is_sequence(value):
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _backfill(value, what):
    return False if value is None else check_bool(value, what)


def _per_group(value, what, check):
    """``value`` checked by ``check``: a tuple when it is a sequence, else the one value."""
    if _is_sequence(value):
        return tuple(check(v, f"{what}[{i}]") for i, v in enumerate(value))
    return check(value, what)


def _count(value, what):
    # 0 is the driver's "unset", as None is (cuda.core passes both as 0).
    return check_int(value, what, minimum=0, maximum=_U32_MAX, allow_none=True)


@dataclasses.dataclass
class SMResourceOptions:
    """Options of :meth:`SMResource.split`.

    Each field takes one value, for a single group, or a sequence with one value per group.
    ``count`` sets the number of groups (1 when it is not a sequence); a sequence in another
    field must have that length.

    Attributes
    ----------
    count : int, sequence of int or None, optional
        The SMs each group asks for. None or 0 lets the driver choose (discovery on a CUDA
        13.1 driver; before it, the driver's smallest group). The driver may round a count up
        to its granularity; read :attr:`SMResource.sm_count` of the result.
    coscheduled_sm_count : int, sequence of int or None, optional
        The least number of SMs of each group that are guaranteed to run together (needs a
        CUDA 13.1 driver; 0 there is the driver's default, as None).
    preferred_coscheduled_sm_count : int, sequence of int or None, optional
        A larger co-scheduled size to use where the device allows it (needs a CUDA 13.1
        driver; 0 there is the driver's default, as None).
    backfill : bool or sequence of bool, optional
        Let the driver relax co-scheduling to meet a count. A permission: a driver before
        CUDA 13.1, which cannot relax it, splits as without it. None is False. Default False.
    """

    count: int | Sequence[int | None] | None = None
    coscheduled_sm_count: int | Sequence[int | None] | None = None
    preferred_coscheduled_sm_count: int | Sequence[int | None] | None = None
    backfill: bool | Sequence[bool] = False

    def __post_init__(self):
        self.count = _per_group(self.count, "SMResourceOptions.count", _count)
        groups = len(self.count) if isinstance(self.count, tuple) else 1
        if groups == 0:
            raise ValueError("SMResourceOptions.count must not be an empty sequence")
        for name in ("coscheduled_sm_count", "preferred_coscheduled_sm_count", "backfill"):
            what = f"SMResourceOptions.{name}"
            check = _backfill if name == "backfill" else _count
            value = _per_group(getattr(self, name), what, check)
            if isinstance(value, tuple) and len(value) != groups:
                raise ValueError(f"{what} has {len(value)} entries, but count asks for "
                                 f"{groups} group{'s' if groups != 1 else ''}")
            setattr(self, name, value)

    def _groups(self):
        """One ``(count, coscheduled, preferred, backfill)`` per group; a count of None is 0,
        the co-scheduling sizes stay None where unset (an older driver refuses only those)."""
        groups = len(self.count) if isinstance(self.count, tuple) else 1

        def at(value, i):
            return value[i] if isinstance(value, tuple) else value

        return [(at(self.count, i) or 0, at(self.coscheduled_sm_count, i),
                 at(self.preferred_coscheduled_sm_count, i),
                 bool(at(self.backfill, i))) for i in range(groups)]


@dataclasses.dataclass
class WorkqueueResourceOptions:
    """Options of :meth:`WorkqueueResource.configure`; a field left None is not changed.

    Attributes
    ----------
    sharing_scope : WorkqueueSharingScopeType or str, optional
        ``"device_ctx"`` (share the device's workqueues with every context) or
        ``"green_ctx_balanced"`` (use workqueues apart from other balanced green contexts
        where possible).
    concurrency_limit : int, optional
        The expected most stream-ordered workloads running at once (>= 1).
    """

    sharing_scope: WorkqueueSharingScopeType | str | None = None
    concurrency_limit: int | None = None

    def __post_init__(self):
        self.sharing_scope = check_enum(self.sharing_scope, "WorkqueueResourceOptions.sharing_scope",
                                        WorkqueueSharingScopeType, allow_none=True)
        self.concurrency_limit = check_int(self.concurrency_limit,
                                           "WorkqueueResourceOptions.concurrency_limit",
                                           minimum=1, maximum=_U32_MAX, allow_none=True)


@dataclasses.dataclass
class ContextOptions:
    """Options of :meth:`Device.create_context`.

    Attributes
    ----------
    resources : SMResource, WorkqueueResource, or a sequence of them
        What the green context gets: SM partitions (from :attr:`Device.resources` or
        :meth:`SMResource.split`; several must come from one split, as the driver requires),
        and optionally one workqueue configuration. Stored as a tuple; None and ``""`` are kept,
        and refused by :meth:`Device.create_context`, as in cuda.core.
    """

    resources: Any

    def __post_init__(self):
        from cuda_core._green import SMResource, WorkqueueResource

        resources = self.resources
        if resources is None or (isinstance(resources, (str, bytes, bytearray))
                                 and not resources):
            # Kept as given, and refused where a context is made (a ValueError: none, or an
            # empty sequence), as cuda.core does.
            return
        items = tuple(resources) if _is_sequence(resources) else (resources,)
        for i, item in enumerate(items):
            if not isinstance(item, (SMResource, WorkqueueResource)):
                raise TypeError(f"ContextOptions.resources[{i}] must be an SMResource or a "
                                f"WorkqueueResource, not {type(item).__name__}")
        # No resources, or two workqueue configurations, are refused where a context is made
        # (Device.create_context), as in cuda.core, whose options take them.
        self.resources = items
