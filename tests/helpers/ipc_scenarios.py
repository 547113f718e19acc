"""IPC between a parent and a spawned child, written once against the public API and run on NVIDIA's
cuda.core and on ours (issue 28, point 4; tests/test_ipc_scenarios.py compares them).

A scenario is run by :func:`main` in a fresh process (the parent), which spawns one child. Each
side writes down what a user would observe, in order, as facts ``(label, value)``. An exception
is a fact too, ``(label, "raised", names of its class and bases)``: where the refusal is the
expected outcome (``Side.outcome``) the side goes on; anywhere else it is marked ``stopped``, it
ends that side, and the other side is told, so that nothing waits on a message that will not
come. The parent prints ``RESULT`` and both sides' facts as JSON.

Events: one process records an IPC event and hands it over, the other imports it, makes its
own stream wait on it and sees whether that stream is held. What varies: the direction (parent
to child, child to parent); whether the event's work is done at the hand-off or still pending
(recorded behind a gate, :class:`helpers.StreamGate`, that opens only once the other side's
stream waits); and the route (the Event object itself through multiprocessing, or
``ipc_descriptor`` and ``Event.from_ipc_descriptor``). Timing: an IPC event has none, and the
options that ask for both are refused. Recording again: an IPC event is recorded once, by the
``Stream.record`` that makes it; the importer and the exporter each try to record it again.
Memory: a buffer of an IPC-enabled pool (device or pinned) goes from one process to the other
(pickled with its memory resource, or by ``allocation_handle`` and ``ipc_descriptor``), is read
and written there, and the owner reads back what the other side wrote.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import multiprocessing
import os
import queue
import sys

from helpers import StreamGate

SPAWN = multiprocessing.get_context("spawn")
WAIT_S = 30.0  # a side waiting longer than this for the other's message records a timeout
SIZE = 1 << 16


def _names(exc):
    return [c.__name__ for c in type(exc).__mro__]


def _kind(value):
    return type(value).__name__


class Stop(Exception):
    """This side stops: it raised, or the other side did."""


class Side:
    """One process's half: its package, its queues (``inbox`` to read, ``outbox`` to write)
    and the facts it has observed."""

    def __init__(self, pkg, inbox, outbox):
        self.m = importlib.import_module(pkg)
        self.inbox, self.outbox = inbox, outbox
        self.facts = []
        self.gates = []

    def gate(self, stream):
        """A closed :class:`helpers.StreamGate` on ``stream``, opened at the latest when this
        side ends (a side that stops early never leaves its stream held)."""
        self.gates.append(StreamGate(stream))
        return self.gates[-1]

    def fact(self, label, fn, shown=None):
        """``fn()``, recorded under ``label`` (as ``shown(value)`` where given: what is
        compared of an object); an exception is recorded too, marked ``stopped``, and ends this
        side (the scenario could not go on)."""
        try:
            value = fn()
        except Exception as exc:  # an outcome to compare: recorded, and this side stops
            self.facts.append([label, "raised", _names(exc), "stopped"])
            self.outbox.put(("stop", label))
            raise Stop(label) from exc
        self.facts.append([label, value if shown is None else shown(value)])
        return value

    def outcome(self, label, fn):
        """``fn()``'s value, or the exception it raised, recorded under ``label``: for a call
        whose refusal is the expected outcome. This side goes on either way."""
        try:
            self.facts.append([label, fn()])
        except Exception as exc:  # the refusal is the outcome compared
            self.facts.append([label, "raised", _names(exc)])

    def send(self, *message):
        self.outbox.put(message)

    def recv(self, expect):
        try:
            got = self.inbox.get(timeout=WAIT_S)
        except queue.Empty:
            self.facts.append([f"waiting for {expect}", "timeout"])
            raise Stop(expect) from None
        if isinstance(got, tuple) and got and got[0] == "stop":
            self.facts.append([f"waiting for {expect}", "the other side stopped"])
            raise Stop(expect)
        return got

    def setup(self):
        dev = self.m.Device(0)
        dev.set_current()
        return dev, dev.create_stream()

    def ipc_options(self):
        return self.m.EventOptions(ipc_enabled=True)


def _export(side, ev, route):
    if route == "pickle":
        return ev
    return side.fact("ipc_descriptor", lambda: ev.ipc_descriptor, _kind)


def _import_event(side, got, route):
    if route == "pickle":
        side.fact("received", lambda: got, _kind)
        return got
    return side.fact("from_ipc_descriptor", lambda: side.m.Event.from_ipc_descriptor(got),
                     _kind)


def _flags(side, ev, label):
    side.fact(f"{label} flags", lambda: [ev.is_ipc_enabled, ev.is_timing_enabled,
                                         ev.is_blocking_sync])


# -- events: one side records, the other waits ---------------------------------------------------

def _recorder(side, when, route):
    """Records the IPC event and hands it over: ``done``, with its work finished first;
    ``pending``, behind a gate that opens only once the other side's stream waits on it. An
    IPC event is made by ``Stream.record`` and recorded once, in both packages."""
    dev, s = side.setup()
    if when == "pending":
        gate = side.gate(s)
    ev = side.fact("record", lambda: s.record(options=side.ipc_options()), _kind)
    if when == "done":
        s.sync()
    side.fact("done at the hand-off", lambda: ev.is_done)
    side.send("event", _export(side, ev, route))
    side.recv("the waiter's wait")
    if when == "pending":
        gate.open()
    s.sync()
    side.fact("done here", lambda: ev.is_done)
    side.send("opened")
    side.recv("the waiter finished")
    ev.close()


def _waiter(side, when, route):
    _, s = side.setup()
    _, got = side.recv("event")
    ev = _import_event(side, got, route)
    _flags(side, ev, "imported")
    side.fact("done on arrival", lambda: ev.is_done)
    side.fact("wait", lambda: s.wait(ev) is None)
    after = s.record()
    if when == "done":
        s.sync()
    side.fact("this stream held", lambda: not after.is_done)
    side.send("waiting")
    side.recv("opened")
    side.fact("sync", lambda: ev.sync() is None)
    s.sync()
    side.fact("done there", lambda: [ev.is_done, after.is_done])
    side.fact("close", lambda: ev.close() is None)
    side.send("finished")


def _rerecord_owner(side, route):
    dev, s = side.setup()
    ev = side.fact("record", lambda: s.record(options=side.ipc_options()), _kind)
    s.sync()
    side.fact("done at the hand-off", lambda: ev.is_done)
    side.send("event", _export(side, ev, route))
    side.recv("the child's attempt")
    side.outcome("record it again here", lambda: s.record(ev) is ev)
    side.send("finished")
    s.sync()
    ev.close()


def _rerecord_child(side, route):
    _, s = side.setup()
    _, got = side.recv("event")
    ev = _import_event(side, got, route)
    _flags(side, ev, "imported")
    side.outcome("record the imported event", lambda: s.record(ev) is ev)
    s.sync()
    side.send("tried")
    side.recv("finished")
    side.fact("done", lambda: ev.is_done)
    ev.close()


def _timing_exporter(side, route):
    m = side.m
    dev, s = side.setup()
    side.outcome("ipc and timing", lambda: s.record(
        options=m.EventOptions(ipc_enabled=True, timing_enabled=True)) and "made")
    side.fact("default options", lambda: [m.EventOptions(ipc_enabled=True).timing_enabled])
    a = s.record(options=side.ipc_options())
    b = s.record(options=side.ipc_options())
    s.sync()
    _flags(side, a, "exported")
    side.send("events", _export(side, a, route), _export(side, b, route))
    side.recv("the importer finished")
    for ev in (a, b):
        ev.close()


def _timing_importer(side, route):
    _, s = side.setup()
    _, ga, gb = side.recv("events")
    a, b = _import_event(side, ga, route), _import_event(side, gb, route)
    _flags(side, a, "imported")
    a.sync()
    b.sync()
    side.outcome("elapsed time", lambda: (b - a) and "given")
    side.send("finished")
    for ev in (a, b):
        ev.close()


# -- memory: a buffer of an IPC-enabled pool in the other process --------------------------------

def _pool(side, dev, kind):
    m = side.m
    if kind == "pinned":
        return m.PinnedMemoryResource(m.PinnedMemoryResourceOptions(ipc_enabled=True,
                                                                    max_size=1 << 24))
    return m.DeviceMemoryResource(dev.device_id, m.DeviceMemoryResourceOptions(
        ipc_enabled=True, max_size=1 << 24))


def _read(side, s, buf):
    """The bytes of ``buf``, through a copy into pinned host memory, as a sorted set."""
    host = side.m.LegacyPinnedMemoryResource().allocate(buf.size)
    buf.copy_to(host, stream=s)
    s.sync()
    data = ctypes.string_at(int(host.handle), buf.size)
    host.close()
    return sorted(set(data))


def _write(side, s, buf, value):
    """Every byte of ``buf`` set to ``value``, through a copy from pinned host memory (not
    ``Buffer.fill``: cuda.core's is refused for a pinned pool's memory, CUDA_ERROR_INVALID_VALUE,
    seen on driver 580)."""
    host = side.m.LegacyPinnedMemoryResource().allocate(buf.size)
    ctypes.memset(int(host.handle), value, buf.size)
    buf.copy_from(host, stream=s)
    s.sync()
    host.close()
    return True


def _owner(side, kind, route):
    dev, s = side.setup()
    mr = _pool(side, dev, kind)
    buf = mr.allocate(SIZE, stream=s)
    _write(side, s, buf, 7)
    side.fact("pool", lambda: [mr.is_ipc_enabled, mr.is_mapped])
    if route == "pickle":
        side.send("pool", mr)
        side.send("buffer", buf)
    else:
        handle = side.fact("allocation_handle", lambda: mr.allocation_handle, _kind)
        desc = side.fact("ipc_descriptor", lambda: buf.ipc_descriptor,
                         lambda d: [_kind(d), d.size])
        side.send("pool", handle)
        side.send("buffer", desc)
    side.recv("written")
    side.fact("read back", lambda: _read(side, s, buf))
    side.send("read")
    side.recv("closed")
    buf.close(s)
    s.sync()
    mr.close()


def _borrower(side, kind, route):
    m = side.m
    dev, s = side.setup()
    _, mr = side.recv("pool")
    if route == "pickle":
        side.fact("pool", lambda: [_kind(mr), mr.is_ipc_enabled, mr.is_mapped])
        _, buf = side.recv("buffer")
    else:
        handle = mr
        mr = side.fact("from_allocation_handle", lambda: (
            m.PinnedMemoryResource.from_allocation_handle(handle) if kind == "pinned" else
            m.DeviceMemoryResource.from_allocation_handle(dev, handle)),
            lambda r: [_kind(r), r.is_ipc_enabled, r.is_mapped])
        _, desc = side.recv("buffer")
        buf = side.fact("from_ipc_descriptor",
                        lambda: m.Buffer.from_ipc_descriptor(mr, desc, stream=s), _kind)
    side.fact("buffer", lambda: [buf.size, buf.memory_resource is mr])
    side.fact("read", lambda: _read(side, s, buf))
    side.fact("write", lambda: _write(side, s, buf, 9))
    side.send("written")
    side.recv("read")
    buf.close(s)
    s.sync()
    side.send("closed")


# -- the scenarios --------------------------------------------------------------------------------

def _both_ways(table, name, first, second, *args):
    """``name`` in both directions: the parent plays ``first`` and the child ``second``, and
    the other way round."""
    table[name.format("parent to child")] = (lambda side: first(side, *args),
                                             lambda side: second(side, *args))
    table[name.format("child to parent")] = (lambda side: second(side, *args),
                                             lambda side: first(side, *args))


def _scenarios():
    table = {}
    for route in ("pickle", "descriptor"):
        for when in ("done", "pending"):
            _both_ways(table, f"event {when} at the hand-off, {{}}, {route}", _recorder, _waiter,
                       when, route)
        for kind in ("device", "pinned"):
            _both_ways(table, f"{kind} buffer, {{}}, {route}", _owner, _borrower, kind, route)
        table[f"the child records the parent's event again, {route}"] = (
            lambda side, r=route: _rerecord_owner(side, r),
            lambda side, r=route: _rerecord_child(side, r))
        table[f"timing disabled, {route}"] = (
            lambda side, r=route: _timing_exporter(side, r),
            lambda side, r=route: _timing_importer(side, r))
    return table


SCENARIOS = _scenarios()


def _play(pkg, name, role, inbox, outbox):
    side = Side(pkg, inbox, outbox)
    try:
        SCENARIOS[name][role](side)
    except Stop:
        pass
    finally:
        for gate in side.gates:
            gate.open()
    return side.facts


def child_main(pkg, name, inbox, outbox, report):
    """The child's entry point (spawned): plays the scenario's second role and reports its
    facts on ``report``."""
    import faulthandler

    faulthandler.enable()
    facts = _play(pkg, name, 1, inbox, outbox)
    report.put(facts)
    report.close()
    report.join_thread()


def main(pkg, name):
    """The parent: spawns the child, plays the first role, prints both sides' facts."""
    import faulthandler

    faulthandler.enable()
    to_child, to_parent, report = SPAWN.Queue(), SPAWN.Queue(), SPAWN.Queue()
    child = SPAWN.Process(target=child_main, args=(pkg, name, to_child, to_parent, report))
    child.start()
    parent_facts = _play(pkg, name, 0, to_parent, to_child)
    try:
        child_facts = report.get(timeout=WAIT_S)
    except queue.Empty:
        child_facts = [["report", "timeout"]]
    child.join(WAIT_S)
    if child.exitcode is None:
        child.kill()
        child.join()
    print("RESULT " + json.dumps({"parent": parent_facts, "child": child_facts,
                                  "child exit": child.exitcode}), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main(sys.argv[1], sys.argv[2])
