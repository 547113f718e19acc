"""Graph nodes and an IPC event opened in another device's context (noticed at stops 47 and 48).

``Stream.wait`` of such an event killed the process inside ``cuStreamWaitEvent``
(probe_ipc_event_devices.py); ours now reopens the event in the stream's context
(``_event.wait_handle``). Graph nodes took the event's own handle. Which of these paths the
driver survives, for each package, each importer a fresh process whose event is opened in
device 1's context (``Event.from_ipc_descriptor`` with device 1 current) and whose graph runs on
a stream of device 0:

* SW: ``Stream.wait`` (the known case, for reference).
* GW: ``GraphDefinition.wait(ev)``, instantiated and launched on device 0.
* GU: a wait node on a local event, then ``EventWaitNode.update(ev)``; launched.
* GX: a wait node on a local event, instantiated, then ``graph[node].update(ev)``; launched.
* GR: ``GraphDefinition.record(ev)``; launched.
* GC: a capture on device 0 (``GraphBuilder``) whose stream waits on ev; launched.

The exporter (its own process) records the event on a stream of device 1 and keeps it alive
while the importers run. Each line: the variant, the importer's exit code (-11 is SIGSEGV) and
what it printed.

Run on a two-GPU machine:  bash .gpu/on-gpu.sh python3 tools/gpu/probe_ipc_event_graph.py
"""

import os
import pickle
import subprocess
import sys
import tempfile

VARIANTS = ("SW", "GW", "GU", "GX", "GR", "GC")


def importer(pkg, variant, path):
    import importlib

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
    import importlib

    m = importlib.import_module(pkg)
    d1 = m.Device(1)
    d1.set_current()
    s1 = d1.create_stream()
    ev = s1.record(options=m.EventOptions(ipc_enabled=True))
    s1.sync()
    fd, path = tempfile.mkstemp()
    with os.fdopen(fd, "wb") as f:
        pickle.dump(ev.ipc_descriptor, f)
    for variant in VARIANTS:
        p = subprocess.run([sys.executable, __file__, "--import", pkg, variant, path],
                           capture_output=True, text=True, timeout=120)
        said = " / ".join(p.stdout.split("\n")).strip(" /")
        err = p.stderr.strip().splitlines()[-1:] if p.returncode else []
        print(f"IPCGRAPH {pkg} {variant}: exit {p.returncode}: {said} {err}", flush=True)
    ev.close()
    os.unlink(path)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--import":
        importer(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 3 and sys.argv[1] == "--export":
        exporter(sys.argv[2])
    else:  # each package's exporter in a process of its own
        for pkg in ("cuda_core", "cuda.core"):
            subprocess.run([sys.executable, __file__, "--export", pkg], timeout=900)
