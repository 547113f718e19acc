"""What the IPC event probes share (probe_ipc_event_devices.py, probe_ipc_event_graph.py): the
exporter's event, and each importer variant run in a fresh process, reported on one line."""
import subprocess
import sys


def device_1_ipc_event(m):
    """An IPC event of package ``m``, recorded on a new stream of device 1 and done."""
    d1 = m.Device(1)
    d1.set_current()
    s1 = d1.create_stream()
    ev = s1.record(options=m.EventOptions(ipc_enabled=True))
    s1.sync()
    return ev


def run_importer(script, tag, pkg, variant, path, timeout):
    """``script --import pkg variant path`` in a fresh process; prints the variant, the exit
    code (-11 is SIGSEGV), what the importer printed and, when it failed, its last error line."""
    p = subprocess.run([sys.executable, script, "--import", pkg, variant, path],
                       capture_output=True, text=True, timeout=timeout)
    said = " / ".join(p.stdout.split("\n")).strip(" /")
    err = p.stderr.strip().splitlines()[-1:] if p.returncode else []
    print(f"{tag} {pkg} {variant}: exit {p.returncode}: {said} {err}", flush=True)


def main(script, importer, exporter, packages, timeout):
    """A probe's command line: ``--import PKG VARIANT PATH`` runs ``importer``, ``--export PKG``
    runs ``exporter`` (which runs the importers), and no arguments runs each package's exporter
    in a process of its own."""
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "--import":
        importer(*args[1:])
    elif len(args) == 2 and args[0] == "--export":
        exporter(args[1])
    else:
        for pkg in packages:
            subprocess.run([sys.executable, script, "--export", pkg], timeout=timeout)
