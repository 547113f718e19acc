"""Issue 27, part 1: what NVIDIA's cuda.core does *at use* with the values ours refuses when an
options object or config is built. Each case builds the options in cuda.core and in ours and,
where the build succeeds, uses them the way a program would (a pool, an allocation, a split, a
link, a texture, a completed graph), in a child process of its own, so that a crash or a hang is
an outcome and not the end of the run.

The outcome decides the refusal (the issue's rule): where cuda.core gives the right answer, ours
must give it too (drop the refusal); where cuda.core crashes, hangs, poisons the context or gives
garbage, ours keeps the refusal and docs/migrating.rst names the harm; where cuda.core raises at
use, ours raising earlier is kept, in the same exception class or a subclass of it.

On the GPU machine (both packages installed, as .gpu/on-gpu.sh leaves them):
    bash .gpu/on-gpu.sh python3 tools/gpu/refusals_at_use.py
One line per case and package: the build's outcome, then the use's (ok and a value, the
exception's class and message, or how the child died).
"""

import json
import subprocess
import sys

# What a program does with the options, ``opts``: an expression of them and the prelude's names.
ALLOCATE = "{}.allocate(64, stream=s).size"
SPLIT = "len(dev.resources.sm.split(opts)[0])"
VMR = "m.VirtualMemoryResource(dev, opts).allocate(1 << 21, stream=s).size"
LINK = "m.Linker(m.ObjectCode.from_ptx(PTX), options=opts).link('cubin').code_type"
COMPILE = "m.Program(SRC, 'c++', opts).compile('cubin').code_type"
GRAPH = ("(lambda b: (b.begin_building(), b.end_building(), "
         "type(b.complete(opts)).__name__)[2])(dev.create_graph_builder())")
DOT = ("(lambda b: (b.begin_building(), b.end_building(), "
       "b.debug_dot_print('/tmp/refusals.dot', opts), 'written')[3])(dev.create_graph_builder())")
TEXTURE = ("dev.create_texture_object(resource=sub('texture').ResourceDescriptor"
           ".from_opaque_array(dev.create_opaque_array(sub('texture').OpaqueArrayOptions("
           "(64,), 'float32', 1))), options=opts).handle > 0")
# get, not ``in``: cuda.core's caches have no __contains__.
CACHE = ("(lambda c: (c.__setitem__(b'k', m.ObjectCode.from_ptx(PTX)), "
         "c.get(b'k') is not None)[1])(opts)")

# (label, the options class as an expression of the package m, arguments every case of the
# group passes, the use, the argument each case adds)
GROUPS = [
    ("DMRO", "m.DeviceMemoryResourceOptions", "",
     ALLOCATE.format("m.DeviceMemoryResource(dev, opts)"),
     ["max_size=-1", "max_size=2**64", "max_size=1.5"]),
    ("PMRO", "m.PinnedMemoryResourceOptions", "", ALLOCATE.format("m.PinnedMemoryResource(opts)"),
     ["numa_id=-1", "numa_id=-2", "numa_id=1.0", "max_size=-1"]),
    ("MMRO", "m.ManagedMemoryResourceOptions", "",
     ALLOCATE.format("m.ManagedMemoryResource(opts)"), ["preferred_location=-2"]),
    ("SMRO", "m.SMResourceOptions", "", SPLIT,
     ["count=0", "count=-1", "count=()", "count=1.5", "count=(0,)"]),
    ("SMRO", "m.SMResourceOptions", "count=8", SPLIT,
     ["coscheduled_sm_count=-1", "coscheduled_sm_count=0"]),
    ("VMRO", "m.VirtualMemoryResourceOptions", "", VMR,
     ["handle_type='bogus'", "granularity='bogus'", "location_type='bogus'",
      "allocation_type='bogus'", "peers=(-1,)", "peers=[1.5]", "self_access='bogus'",
      "peer_access='bogus'", "addr_align=3", "addr_align=-1"]),
    ("LinkerOptions", "m.LinkerOptions", "", LINK, ["arch='bogus'", "arch=90"]),
    ("LinkerOptions", "m.LinkerOptions", "arch=ARCH", LINK,
     ["max_register_count=-1", "max_register_count=0", "optimization_level=5",
      "optimization_level=-1", "ptxas_options=[1]", "split_compile=-1"]),
    ("ProgramOptions", "m.ProgramOptions", "", COMPILE,
     ["arch='bogus'", "arch=90", "max_register_count=-1", "std='c++99'", "split_compile=-1",
      "name=''", "diag_suppress='1'", "fdevice_time_trace=1", "ftz='yes'",
      "ptxas_options=[1]"]),
    ("StreamOptions", "m.StreamOptions", "", "dev.create_stream(options=opts).priority",
     ["priority=1.5"]),
    ("GraphCompleteOptions", "sub('graph').GraphCompleteOptions", "", GRAPH, ["upload_stream=1"]),
    ("GraphDebugPrintOptions", "sub('graph').GraphDebugPrintOptions", "", DOT, ["verbose='x'"]),
    ("TextureObjectOptions", "sub('texture').TextureObjectOptions", "", TEXTURE,
     ["address_mode='bogus'", "max_anisotropy=-1"]),
    ("InMemoryProgramCache", "sub('utils').InMemoryProgramCache", "", CACHE,
     ["max_size_bytes=1.5"]),
]

# (name, build, use) for each case.
CASES = [(f"{label} {arg}", f"{cls}({fixed + ', ' if fixed else ''}{arg})", use)
         for label, cls, fixed, use, args in GROUPS for arg in args]

PRELUDE = r"""
import importlib, json, sys, warnings
warnings.simplefilter("ignore")
m = importlib.import_module(sys.argv[1])
sub = lambda name: importlib.import_module(f"{m.__name__}.{name}")
dev = m.Device(0)
dev.set_current()
s = dev.create_stream()
ARCH = "sm_" + dev.arch
SRC = 'extern "C" __global__ void k(int* p) { *p = 1; }'
PTX = m.Program(SRC, "c++", m.ProgramOptions(arch=ARCH)).compile("ptx").code

def outcome(expr, env):
    try:
        return ["ok", repr(eval(expr, env))[:120]]
    except BaseException as exc:
        return [type(exc).__name__, str(exc)[:200]]

env = dict(globals())
built = outcome(sys.argv[2], env)
used = None
if built[0] == "ok":
    env["opts"] = eval(sys.argv[2], env)
    used = outcome(sys.argv[3], env)
    s.sync()
print(json.dumps({"build": built, "use": used}))
"""


def run(package, build, use):
    try:
        p = subprocess.run([sys.executable, "-c", PRELUDE, package, build, use],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {"build": None, "use": ["hung", "no exit within 120 s"]}
    if p.returncode != 0:
        return {"build": None, "use": [f"died (exit {p.returncode})", p.stderr[-300:]]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    for name, build, use in CASES:
        for package in ("cuda.core", "cuda_core"):
            print(f"{name} [{package}]: {json.dumps(run(package, build, use))}", flush=True)


if __name__ == "__main__":
    main()
