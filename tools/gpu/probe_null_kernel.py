"""Issue 27, part 1: what a program can do with ``Kernel.from_handle(0)`` under NVIDIA's
cuda.core, which wraps the NULL handle where ours refuses it. Each use runs in a child of its
own, so a crash is seen as the child's signal. Prints one line per use; run on the GPU machine
(bash .gpu/on-gpu.sh python3 tools/gpu/probe_null_kernel.py).
"""

import subprocess
import sys

USES = {
    "repr": "repr(k)",
    "attributes.max_threads_per_block": "k.attributes.max_threads_per_block()",
    "attributes.num_regs": "k.attributes.num_regs()",
    "num_arguments": "k.num_arguments",
    "arguments_info": "k.arguments_info",
    "occupancy.max_active_blocks_per_multiprocessor":
        "k.occupancy.max_active_blocks_per_multiprocessor(32, 0)",
    "launch": "launch(s, LaunchConfig(grid=1, block=1), k); s.sync()",
    "launch, then a copy on the stream":
        "launch(s, LaunchConfig(grid=1, block=1), k)\n"
        "b = dev.allocate(64, stream=s); b.fill(1, stream=s); s.sync()",
}

PRELUDE = """
from cuda.core import Device, Kernel, LaunchConfig, launch
dev = Device(0)
dev.set_current()
s = dev.create_stream()
k = Kernel.from_handle(0)
"""


def main():
    for name, body in USES.items():
        code = PRELUDE + f"out = {body}\n" if "\n" not in body and "launch" not in body \
            else PRELUDE + body + "\nout = 'returned'\n"
        code += "print('RESULT', repr(out)[:160])\n"
        try:
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=60)
        except subprocess.TimeoutExpired:
            print(f"{name}: hung (60 s)")
            continue
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")]
        if p.returncode < 0:
            print(f"{name}: killed by signal {-p.returncode}")
        elif lines:
            print(f"{name}: {lines[-1][7:]}")
        else:
            print(f"{name}: rc={p.returncode} {p.stderr.strip().splitlines()[-1][:200]}")


if __name__ == "__main__":
    main()
