"""Options dataclasses and their coercion (CPU)."""

import numpy as np
import pytest

from cuda_core import EventOptions, StreamOptions
from cuda_core._options import check_or_create_options


def test_defaults():
    assert StreamOptions() == StreamOptions(nonblocking=True, priority=None)
    assert EventOptions() == EventOptions(timing_enabled=False, blocking_sync=False,
                                          ipc_enabled=False)


@pytest.mark.parametrize("given, expected", [
    (None, StreamOptions()),
    ({"priority": -1}, StreamOptions(priority=-1)),
    ({"nonblocking": False}, StreamOptions(nonblocking=False)),
    (StreamOptions(priority=0), StreamOptions(priority=0)),
])
def test_stream_options_coercion(given, expected):
    assert check_or_create_options(StreamOptions, given, "Stream options") == expected


def test_instance_is_passed_through():
    opts = EventOptions(timing_enabled=True)
    assert check_or_create_options(EventOptions, opts, "Event options") is opts


def test_unknown_dict_key_is_named():
    with pytest.raises(TypeError, match="'enable_timing'.*EventOptions"):
        check_or_create_options(EventOptions, {"enable_timing": True}, "Event options")


def test_wrong_options_type_is_named():
    with pytest.raises(TypeError, match="Stream options must be a StreamOptions, a dict or None, "
                                        "not list"):
        check_or_create_options(StreamOptions, [("priority", 0)], "Stream options")


@pytest.mark.parametrize("kwargs, field", [
    ({"nonblocking": "no"}, "nonblocking"),
    ({"nonblocking": 1.0}, "nonblocking"),
    ({"priority": 1.5}, "priority"),
    ({"priority": np.True_}, "priority"),
    ({"priority": "high"}, "priority"),
])
def test_stream_options_validation_names_the_field(kwargs, field):
    with pytest.raises(TypeError, match=f"StreamOptions.{field}"):
        StreamOptions(**kwargs)


@pytest.mark.parametrize("field", ["timing_enabled", "blocking_sync", "ipc_enabled"])
def test_event_options_validation_names_the_field(field):
    with pytest.raises(TypeError, match=f"EventOptions.{field}"):
        EventOptions(**{field: "yes"})


def test_ipc_with_timing_constructs():
    # Refused when an event is made from it (TypeError, as cuda.core), not here.
    opts = EventOptions(timing_enabled=True, ipc_enabled=True)
    assert opts.timing_enabled and opts.ipc_enabled
    assert EventOptions(ipc_enabled=True).ipc_enabled


@pytest.mark.parametrize("field", ["timing_enabled", "blocking_sync", "ipc_enabled"])
def test_event_options_none_is_kept(field):
    # None means False where the event is made (tests/test_ipc_events.py); the field keeps the
    # value given, as cuda.core's does.
    opts = EventOptions(**{field: None})
    assert getattr(opts, field) is None and not getattr(EventOptions(), field)
    assert check_or_create_options(EventOptions, {field: None}, "Event options") == opts


def test_event_options_error_mentions_none():
    with pytest.raises(TypeError, match="EventOptions.ipc_enabled must be a bool or None, not int"):
        EventOptions(ipc_enabled=1)


@pytest.mark.parametrize("value, nonblocking", [(1, True), (0, False), (None, False),
                                                (np.True_, True)])
def test_stream_options_flag_takes_what_cuda_core_does(value, nonblocking):
    # An int by its truth value, None as False (cuda.core reads the flag so, even though its
    # default is True), NumPy's bool as a bool.
    assert bool(StreamOptions(nonblocking=value).nonblocking) is nonblocking


def test_stream_priority_float_is_also_a_value_error():
    # cuda.core truncates it and raises ValueError at creation when out of range.
    with pytest.raises(ValueError, match="StreamOptions.priority must be an int or None, not "
                                         "float"):
        StreamOptions(priority=-1.5)
