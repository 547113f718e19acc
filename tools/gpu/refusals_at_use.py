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

# (name, the options or config built from the package m, what a program does with them as opts)
CASES = [
    ("DMRO max_size=-1", "m.DeviceMemoryResourceOptions(max_size=-1)",
     "m.DeviceMemoryResource(dev, opts).allocate(64, stream=s).size"),
    ("DMRO max_size=2**64", "m.DeviceMemoryResourceOptions(max_size=2**64)",
     "m.DeviceMemoryResource(dev, opts).allocate(64, stream=s).size"),
    ("DMRO max_size=1.5", "m.DeviceMemoryResourceOptions(max_size=1.5)",
     "m.DeviceMemoryResource(dev, opts).allocate(64, stream=s).size"),
    ("PMRO numa_id=-1", "m.PinnedMemoryResourceOptions(numa_id=-1)",
     "m.PinnedMemoryResource(opts).allocate(64, stream=s).size"),
    ("PMRO numa_id=-2", "m.PinnedMemoryResourceOptions(numa_id=-2)",
     "m.PinnedMemoryResource(opts).allocate(64, stream=s).size"),
    ("PMRO numa_id=1.0", "m.PinnedMemoryResourceOptions(numa_id=1.0)",
     "m.PinnedMemoryResource(opts).allocate(64, stream=s).size"),
    ("PMRO max_size=-1", "m.PinnedMemoryResourceOptions(max_size=-1)",
     "m.PinnedMemoryResource(opts).allocate(64, stream=s).size"),
    ("MMRO preferred_location=-2", "m.ManagedMemoryResourceOptions(preferred_location=-2)",
     "m.ManagedMemoryResource(opts).allocate(64, stream=s).size"),
    ("SMRO count=0", "m.SMResourceOptions(count=0)", "len(dev.resources.sm.split(opts)[0])"),
    ("SMRO count=-1", "m.SMResourceOptions(count=-1)", "len(dev.resources.sm.split(opts)[0])"),
    ("SMRO count=()", "m.SMResourceOptions(count=())", "len(dev.resources.sm.split(opts)[0])"),
    ("SMRO count=1.5", "m.SMResourceOptions(count=1.5)", "len(dev.resources.sm.split(opts)[0])"),
    ("SMRO count=(0,)", "m.SMResourceOptions(count=(0,))",
     "len(dev.resources.sm.split(opts)[0])"),
    ("SMRO coscheduled_sm_count=-1", "m.SMResourceOptions(count=8, coscheduled_sm_count=-1)",
     "len(dev.resources.sm.split(opts)[0])"),
    ("SMRO coscheduled_sm_count=0", "m.SMResourceOptions(count=8, coscheduled_sm_count=0)",
     "len(dev.resources.sm.split(opts)[0])"),
    ("VMRO handle_type=bogus", "m.VirtualMemoryResourceOptions(handle_type='bogus')", "VMR"),
    ("VMRO granularity=bogus", "m.VirtualMemoryResourceOptions(granularity='bogus')", "VMR"),
    ("VMRO location_type=bogus", "m.VirtualMemoryResourceOptions(location_type='bogus')", "VMR"),
    ("VMRO allocation_type=bogus", "m.VirtualMemoryResourceOptions(allocation_type='bogus')",
     "VMR"),
    ("VMRO peers=(-1,)", "m.VirtualMemoryResourceOptions(peers=(-1,))", "VMR"),
    ("VMRO peers=[1.5]", "m.VirtualMemoryResourceOptions(peers=[1.5])", "VMR"),
    ("VMRO self_access=bogus", "m.VirtualMemoryResourceOptions(self_access='bogus')", "VMR"),
    ("VMRO peer_access=bogus", "m.VirtualMemoryResourceOptions(peer_access='bogus')", "VMR"),
    ("VMRO addr_align=3", "m.VirtualMemoryResourceOptions(addr_align=3)", "VMR"),
    ("VMRO addr_align=-1", "m.VirtualMemoryResourceOptions(addr_align=-1)", "VMR"),
    ("LinkerOptions arch=bogus", "m.LinkerOptions(arch='bogus')", "LINK"),
    ("LinkerOptions arch=90", "m.LinkerOptions(arch=90)", "LINK"),
    ("LinkerOptions max_register_count=-1", "m.LinkerOptions(arch=ARCH, max_register_count=-1)",
     "LINK"),
    ("LinkerOptions max_register_count=0", "m.LinkerOptions(arch=ARCH, max_register_count=0)",
     "LINK"),
    ("LinkerOptions optimization_level=5", "m.LinkerOptions(arch=ARCH, optimization_level=5)",
     "LINK"),
    ("LinkerOptions optimization_level=-1", "m.LinkerOptions(arch=ARCH, optimization_level=-1)",
     "LINK"),
    ("LinkerOptions ptxas_options=[1]", "m.LinkerOptions(arch=ARCH, ptxas_options=[1])", "LINK"),
    ("LinkerOptions split_compile=-1", "m.LinkerOptions(arch=ARCH, split_compile=-1)", "LINK"),
    ("ProgramOptions arch=bogus", "m.ProgramOptions(arch='bogus')", "COMPILE"),
    ("ProgramOptions arch=90", "m.ProgramOptions(arch=90)", "COMPILE"),
    ("ProgramOptions max_register_count=-1", "m.ProgramOptions(max_register_count=-1)",
     "COMPILE"),
    ("ProgramOptions std=c++99", "m.ProgramOptions(std='c++99')", "COMPILE"),
    ("ProgramOptions split_compile=-1", "m.ProgramOptions(split_compile=-1)", "COMPILE"),
    ("ProgramOptions name=''", "m.ProgramOptions(name='')", "COMPILE"),
    ("ProgramOptions diag_suppress='1'", "m.ProgramOptions(diag_suppress='1')", "COMPILE"),
    ("ProgramOptions fdevice_time_trace=1", "m.ProgramOptions(fdevice_time_trace=1)", "COMPILE"),
    ("ProgramOptions ftz='yes'", "m.ProgramOptions(ftz='yes')", "COMPILE"),
    ("ProgramOptions ptxas_options=[1]", "m.ProgramOptions(ptxas_options=[1])", "COMPILE"),
    ("StreamOptions priority=1.5", "m.StreamOptions(priority=1.5)",
     "dev.create_stream(options=opts).priority"),
    ("GraphCompleteOptions upload_stream=1",
     "sub('graph').GraphCompleteOptions(upload_stream=1)", "GRAPH"),
    ("GraphDebugPrintOptions verbose='x'",
     "sub('graph').GraphDebugPrintOptions(verbose='x')", "DOT"),
    ("TextureObjectOptions address_mode=bogus",
     "sub('texture').TextureObjectOptions(address_mode='bogus')", "TEXTURE"),
    ("TextureObjectOptions max_anisotropy=-1",
     "sub('texture').TextureObjectOptions(max_anisotropy=-1)", "TEXTURE"),
    ("InMemoryProgramCache max_size_bytes=1.5",
     "sub('utils').InMemoryProgramCache(max_size_bytes=1.5)", "CACHE"),
]

# The uses named above by a word, each an expression of opts (and the prelude's names).
USES = {
    "VMR": "m.VirtualMemoryResource(dev, opts).allocate(1 << 21, stream=s).size",
    "LINK": "m.Linker(m.ObjectCode.from_ptx(PTX), options=opts).link('cubin').code_type",
    "COMPILE": "m.Program(SRC, 'c++', opts).compile('cubin').code_type",
    "GRAPH": "(lambda b: (b.begin_building(), b.end_building(), "
             "type(b.complete(opts)).__name__)[2])(dev.create_graph_builder())",
    "DOT": "(lambda b: (b.begin_building(), b.end_building(), "
           "b.debug_dot_print('/tmp/refusals.dot', opts), 'written')[3])("
           "dev.create_graph_builder())",
    "TEXTURE": "dev.create_texture_object(resource=dev.create_opaque_array("
               "sub('texture').OpaqueArrayOptions((64,), 'float32', 1)), options=opts).handle > 0",
    "CACHE": "(lambda c: (c.__setitem__(b'k', m.ObjectCode.from_ptx(PTX)), b'k' in c)[1])(opts)",
}

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
        use = USES.get(use, use)
        for package in ("cuda.core", "cuda_core"):
            print(f"{name} [{package}]: {json.dumps(run(package, build, use))}", flush=True)


if __name__ == "__main__":
    main()
