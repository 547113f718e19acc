"""Graph nodes and an IPC event opened in another device's context (noticed at stops 47 and 48).

``Stream.wait`` of such an event killed the process inside ``cuStreamWaitEvent``
(probe_ipc_event_devices.py); ours now reopens the event in the stream's context
(``_event.wait_handle``). Graph nodes take the event's own handle. Which of these paths the
driver survives, for each package, each importer a fresh process whose event is opened in
device 1's context (``Event.from_ipc_descriptor`` with device 1 current) and whose graph runs on
a stream of device 0:

* SW: ``Stream.wait`` (the known case, for reference).
* GW: ``GraphDefinition.wait(ev)``, instantiated and launched on device 0.
* GU: a wait node on a local event, then ``EventWaitNode.update(ev)``; launched.
* GX: a wait node on a local event, instantiated, then ``graph[node].update(ev)``; launched.
* GR: ``GraphDefinition.record(ev)``; launched.
* GC: a capture on device 0 (``GraphBuilder``) whose stream waits on ev; launched.

The exporter and the lines printed are probe_ipc_event_devices.py's (``_ipc_probe``).

Run on a two-GPU machine:  bash .gpu/on-gpu.sh python3 tools/gpu/probe_ipc_event_graph.py
"""

import importlib
import os
import pickle
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _ipc_probe beside it

from _ipc_probe import device_1_ipc_event, main, run_importer

VARIANTS = ("SW", "GW", "GU", "GX", "GR", "GC")


def importer(pkg, variant, path):
    m = importlib.import_module(pkg)
    g_mod = importlib.import_module(pkg + ".graph")
    with open(path, "rb") as f:
        desc = pickle.load(f)
    d0, d1 = m.Device(0), m.Device(1)
    d1.set_current()
    ev = m.Event.from_ipc_descriptor(desc)
    # cuda.core 1.2 gives an imported event no device (None).
    print(f"opened, event device {getattr(ev.device, 'device_id', None)}", flush=True)
    d0.set_current()
    s0 = d0.create_stream()
    if variant == "SW":
        s0.wait(ev)
        print("waited", flush=True)
        s0.sync()
        print("synced", flush=True)
        return
    if variant == "GC":
        gb = s0.create_graph_builder()
        gb.begin_building()
        gb.stream.wait(ev)
        print("captured the wait", flush=True)
        graph = gb.end_building().complete()
    else:
        g = g_mod.GraphDefinition()
        local = s0.record()
        if variant == "GW":
            g.wait(ev)
        elif variant == "GR":
            g.record(ev)
        else:
            node = g.wait(local)
            if variant == "GU":
                node.update(ev)
                print("node updated", flush=True)
        graph = g.instantiate()
        if variant == "GX":
            graph[node].update(ev)
            print("exec node updated", flush=True)
    print("instantiated", flush=True)
    graph.launch(s0)
    print("launched", flush=True)
    s0.sync()
    print("synced", flush=True)


def exporter(pkg):
    ev = device_1_ipc_event(importlib.import_module(pkg))
    fd, path = tempfile.mkstemp()
    with os.fdopen(fd, "wb") as f:
        pickle.dump(ev.ipc_descriptor, f)
    for variant in VARIANTS:
        run_importer(__file__, "IPCGRAPH", pkg, variant, path, 120)
    ev.close()
    os.unlink(path)


if __name__ == "__main__":
    main(__file__, importer, exporter, ("cuda_core", "cuda.core"), 900)
