# ################################################################################################
# multi_gpu_allreduce.py: one process per GPU, each filling a buffer of ours with a kernel, and
# the buffers summed across the processes twice: by NCCL, and by cuda_core's own IPC.
#
# Part 1 hands our objects to NCCL through PyTorch: each rank (one spawned process per GPU)
# allocates a Buffer from a DeviceMemoryResource, launches `fill` on a stream of ours, views the
# Buffer as a torch tensor through DLPack (no copy), and calls torch.distributed.all_reduce with
# our stream made torch's current stream (torch.cuda.ExternalStream). NCCL's stream waits for
# ours and ours for NCCL's, so after the call our stream is ordered after the reduction.
#
# Part 2 does the same exchange within one node through IPC, with no NCCL: each rank allocates
# from an IPC-enabled pool, fills its buffer, records an IPC event after the fill, and sends
# (rank, buffer, event) to every other rank through multiprocessing Queues. A receiver's stream
# waits on the sender's event, then a kernel adds the sender's memory into the receiver's result
# in place (or a copy of it, where the two GPUs cannot reach each other). On a machine with one
# GPU two processes share it: IPC allows that, NCCL does not.
#
# Rank r fills element i with (r + 1) * (i % 1024), so after the sum every element i of every
# rank holds world * (world + 1) / 2 * (i % 1024), exactly representable in float32.
#
# With --backend cupy, Part 1 calls NCCL through CuPy's bindings instead, on our stream itself
# (they take the buffer's address and the stream's).
#
# Run:  python examples/multi_gpu_allreduce.py [--n FLOATS] [--backend torch|cupy]
#                                               [--skip-nccl] [--skip-ipc]
# Part 1 needs PyTorch with NCCL (or CuPy with NCCL); without it, it says why it is skipped and
# Part 2 still runs.
# On a machine without a GPU or driver it prints one line saying why, and exits 0.
# ################################################################################################

import os

# NVLink multicast (NVLS) stays off, here and in every process this script starts (spawned
# processes inherit os.environ). Set before anything can start a process or load NCCL: on a
# shared host, multicast objects can take GPUs out of service for other users. Nothing here
# calls a multicast API.
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import argparse  # noqa: E402
import multiprocessing  # noqa: E402
import queue  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

from cuda_core import (Buffer, CUDAError, Device, DeviceMemoryResource,  # noqa: E402
                       DeviceMemoryResourceOptions, EventOptions, Kernel, LaunchConfig,
                       LegacyPinnedMemoryResource, Program, ProgramOptions, Stream, launch,
                       system)

CODE = r"""
extern "C" __global__ void fill(float* p, float v, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += (unsigned long long)gridDim.x * blockDim.x) {
        p[i] = v * (float)(i % 1024);
    }
}

extern "C" __global__ void add(float* out, const float* in, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += (unsigned long long)gridDim.x * blockDim.x) {
        out[i] += in[i];
    }
}
"""

# A rank that waits longer than this for a peer (a message, the barrier) gives up; the parent
# gives all ranks of a part this long together before it kills the survivors.
TIMEOUT_S = 180.0


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def kernels(dev: Device) -> tuple[Kernel, Kernel, LaunchConfig]:
    """`fill` and `add` compiled for `dev`, and a grid-stride launch configuration."""
    module = Program(CODE, "c++", ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin")
    config = LaunchConfig(grid=4 * dev.properties.multiprocessor_count, block=256)
    return module.get_kernel("fill"), module.get_kernel("add"), config


def check(buf: Buffer, stream: Stream, world: int, n: int, who: str) -> None:
    """Copy `buf` (n floats) to pinned host memory and compare every element with the sum of
    `world` ranks' fills; raise naming the first element that differs."""
    host = LegacyPinnedMemoryResource().allocate(buf.size)
    try:
        buf.copy_to(host, stream=stream)
        stream.sync()
        got = np.from_dlpack(host).view(np.float32)
        expected = (world * (world + 1) // 2) * (np.arange(n, dtype=np.int64) % 1024)
        wrong = np.flatnonzero(got != expected.astype(np.float32))
        if wrong.size:
            i = int(wrong[0])
            raise AssertionError(f"{who}: element {i} is {got[i]}, expected {expected[i]} "
                                 f"({wrong.size} of {n} elements wrong)")
    finally:
        host.close()


# -- Part 1: NCCL, one process per GPU ---------------------------------------------------------

# How each backend is named in the output: the default goes through PyTorch.
BACKENDS = {"torch": "", "cupy": " (cupy.cuda.nccl)"}


def nccl_unavailable(backend: str) -> str | None:
    """Why Part 1 cannot run here with `backend`, or None when it can."""
    if backend == "cupy":
        try:
            from cupy.cuda import nccl
        except ImportError as exc:
            return f"CuPy is not installed ({exc})"
        if not nccl.available:
            return "this CuPy has no NCCL (cupy.cuda.nccl.available is False)"
        return None
    try:
        import torch.distributed as dist
    except ImportError as exc:
        return f"PyTorch is not installed ({exc})"
    if not dist.is_available() or not dist.is_nccl_available():
        return "this PyTorch has no NCCL backend (torch.distributed.is_nccl_available() is False)"
    return None


def all_reduce_torch(rank: int, world: int, buf: Buffer, s: Stream, rendezvous: str) -> None:
    """Sum `buf` (float32) over the ranks with torch.distributed, on our stream `s`."""
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)  # the same primary context as ours: one context per device
    dist.init_process_group("nccl", init_method=f"file://{rendezvous}", rank=rank,
                            world_size=world)
    try:
        # torch borrows our stream: it stays ours (open until we close it).
        ts = torch.cuda.ExternalStream(int(s.handle), device=torch.device("cuda", rank))
        with torch.cuda.stream(ts):
            # DLPack: an int8 view of the Buffer's bytes, no copy; torch's current stream (ours)
            # is ordered after the work queued on the buffer's stream (the fill).
            t = torch.from_dlpack(buf).view(torch.float32)
            dist.all_reduce(t)  # NCCL waits for our stream, and our stream for NCCL
            del t  # the tensor keeps the Buffer's memory alive; drop it before closing
    finally:
        dist.destroy_process_group()


def all_reduce_cupy(rank: int, world: int, n: int, buf: Buffer, s: Stream,
                    unique_ids: Any) -> None:
    """Sum `buf` (n float32) over the ranks with CuPy's NCCL bindings, on our stream `s`
    itself: they take the buffer's address and the stream's."""
    import cupy
    from cupy.cuda import nccl

    cupy.cuda.Device(rank).use()  # NCCL takes the runtime's current device
    if rank == 0:
        unique_id = nccl.get_unique_id()
        for _ in range(world - 1):
            unique_ids.put(unique_id)
    else:
        unique_id = unique_ids.get(timeout=TIMEOUT_S)
    comm = nccl.NcclCommunicator(world, unique_id, rank)
    try:
        comm.allReduce(buf.handle, buf.handle, n, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                       int(s.handle))
        s.sync()  # the collective has finished before its communicator goes
    finally:
        comm.destroy()


def nccl_rank(rank: int, world: int, n: int, backend: str, rendezvous: str,
              unique_ids: Any) -> None:
    dev = Device(rank)
    dev.set_current()
    s = dev.create_stream()
    fill, _, config = kernels(dev)
    buf = DeviceMemoryResource(rank).allocate(4 * n, stream=s)
    launch(s, config, fill, buf, np.float32(rank + 1), np.uint64(n))
    if backend == "cupy":
        all_reduce_cupy(rank, world, n, buf, s, unique_ids)
    else:
        all_reduce_torch(rank, world, buf, s, rendezvous)
    check(buf, s, world, n, f"NCCL rank {rank}")
    buf.close(s)
    s.sync()
    s.close()


# -- Part 2: the same exchange through cuda_core's IPC --------------------------------------------

def ipc_rank(rank: int, world: int, ngpu: int, n: int, inboxes: list[Any],
             barrier: Any) -> None:
    dev = Device(rank % ngpu)
    dev.set_current()
    s = dev.create_stream()
    fill, add, config = kernels(dev)
    # An IPC-enabled pool of its own: its buffers can be sent to other processes.
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True))
    mine = mr.allocate(4 * n, stream=s)
    launch(s, config, fill, mine, np.float32(rank + 1), np.uint64(n))
    # Recorded after the fill: a peer whose stream waits on it sees the filled memory. An IPC
    # event is made by Stream.record and recorded once; it cannot time.
    filled = s.record(options=EventOptions(ipc_enabled=True))
    for peer in range(world):
        if peer != rank:
            # multiprocessing sends the pool (its file descriptor), the buffer's descriptor and
            # the event's; the receiver maps them. Plain pickle cannot carry a file descriptor.
            inboxes[peer].put((rank, mine, filled))

    result = mr.allocate(4 * n, stream=s)
    result.copy_from(mine, stream=s)
    received: list[tuple[Buffer, Any]] = []
    scratch: Buffer | None = None
    for _ in range(world - 1):
        peer, theirs, their_event = inboxes[rank].get(timeout=TIMEOUT_S)
        received.append((theirs, their_event))
        s.wait(their_event)  # their fill is done before anything below runs on s
        src = theirs
        if theirs.device_id != dev.device_id:
            if dev.can_access_peer(theirs.device_id):
                # Peer access is per process and starts empty for a mapped pool: grant it to
                # our device, then our kernel reads their memory in place.
                mapped = theirs.memory_resource
                assert isinstance(mapped, DeviceMemoryResource) and mapped.is_mapped
                mapped.peer_accessible_by = {dev.device_id}
            else:
                if scratch is None:
                    scratch = mr.allocate(4 * n, stream=s)
                scratch.copy_from(theirs, stream=s)  # a copy between the two devices
                src = scratch
        launch(s, config, add, result, src, np.uint64(n))
    check(result, s, world, n, f"IPC rank {rank}")

    # Importers free first: their frees must have completed before any exporter frees the
    # memory (the driver's rule), hence close, synchronize, and only then the barrier.
    for theirs, their_event in received:
        theirs.close(s)
        their_event.close()
    for own in (result, scratch):
        if own is not None:
            own.close(s)
    s.sync()
    received.clear()
    barrier.wait(timeout=TIMEOUT_S)
    mine.close(s)
    s.sync()
    filled.close()
    mr.close()
    s.close()


# -- running the ranks -------------------------------------------------------------------------

def rank_main(body: Callable[..., None], rank: int, failures: Any, *args: Any) -> None:
    """A rank's process: run `body`; on an exception, print it, report it and exit 1."""
    try:
        body(rank, *args)
    except BaseException as exc:  # reported to the parent, which fails the whole run
        traceback.print_exc()
        failures.put((rank, f"{type(exc).__name__}: {exc}"))
        failures.close()
        failures.join_thread()
        sys.exit(1)


def run_ranks(ctx: Any, body: Callable[..., None], world: int,
              args: Callable[[int], tuple[Any, ...]]) -> list[str]:
    """Run `body(rank, *args(rank))` in `world` spawned processes; the failures (empty when
    every rank exited 0 within TIMEOUT_S)."""
    failures = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(body, r, failures, *args(r)),
                         name=f"rank {r}") for r in range(world)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + TIMEOUT_S
    # Wait for all; once one rank has failed the others may wait forever for it: stop them.
    while time.monotonic() < deadline:
        if all(p.exitcode is not None for p in procs):
            break
        if any(p.exitcode not in (None, 0) for p in procs):
            time.sleep(1.0)  # let the others finish reporting what they saw
            break
        procs[0].join(timeout=0.1)
    timed_out = time.monotonic() >= deadline
    outcome = {}
    for r, p in enumerate(procs):
        if p.exitcode is None:
            p.kill()
            outcome[r] = (f"did not finish within {TIMEOUT_S:g} s, killed" if timed_out
                          else "stopped after another rank failed")
        elif p.exitcode != 0:
            outcome[r] = f"exit code {p.exitcode}"
        p.join()
    while True:
        try:
            r, text = failures.get(timeout=0.1)
        except queue.Empty:
            break
        outcome[r] = f"{outcome.get(r, 'failed')}: {text}"
    return [f"rank {r}: {outcome[r]}" for r in sorted(outcome)]


def report(head: str, errors: list[str]) -> bool:
    """Print a part's result line (and its failures); True when it failed."""
    print(f"{head}: {'FAILED' if errors else 'OK'}")
    for e in errors:
        print(f"  {e}")
    return bool(errors)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Sum one buffer per process across GPUs, by NCCL and by cuda_core's IPC.")
    parser.add_argument("--n", type=int, default=1 << 20, help="floats per rank")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="torch",
                        help="how Part 1 reaches NCCL: torch.distributed (default) or CuPy's "
                             "NCCL bindings")
    parser.add_argument("--skip-nccl", action="store_true", help="leave Part 1 (NCCL) out")
    parser.add_argument("--skip-ipc", action="store_true", help="leave Part 2 (IPC) out")
    args = parser.parse_args(argv)
    n: int = args.n
    if n < 1:
        parser.error("--n must be at least 1")
    try:
        ngpu = system.get_num_devices()
    except CUDAError as exc:
        print(f"No GPU: {exc}")
        return 0
    if ngpu == 0:
        print("No GPU: the driver reports no CUDA-capable GPU")
        return 0
    ctx = multiprocessing.get_context("spawn")  # a process forked after CUDA was used cannot use it
    gpus = plural(ngpu, "GPU")
    failed = False

    nccl = f"NCCL all-reduce{BACKENDS[args.backend]}"
    why = "--skip-nccl" if args.skip_nccl else nccl_unavailable(args.backend)
    if why is not None:
        print(f"{nccl}: skipped: {why}")
    else:
        world = ngpu
        unique_ids = ctx.Queue()
        with tempfile.TemporaryDirectory() as tmp:
            rendezvous = os.path.join(tmp, "rendezvous")  # a file: no port, nothing off the host
            errors = run_ranks(ctx, nccl_rank, world,
                               lambda r: (world, n, args.backend, rendezvous, unique_ids))
        failed |= report(f"{nccl}: {plural(world, 'rank')} x {n} floats on {gpus}", errors)

    dev0 = Device(0)
    if args.skip_ipc:
        print("IPC all-reduce: skipped: --skip-ipc")
    elif not dev0.properties.mempool_supported_handle_types & 1:
        print("IPC all-reduce: skipped: device 0's memory pools cannot be shared "
              "(properties.mempool_supported_handle_types has no POSIX file descriptors)")
    elif not dev0.properties.ipc_event_supported:
        print("IPC all-reduce: skipped: device 0 cannot share events "
              "(properties.ipc_event_supported is False)")
    else:
        world = max(2, ngpu)
        inboxes = [ctx.Queue() for _ in range(world)]
        barrier = ctx.Barrier(world)
        errors = run_ranks(ctx, ipc_rank, world, lambda r: (world, ngpu, n, inboxes, barrier))
        failed |= report(f"IPC all-reduce: {plural(world, 'rank')} x {n} floats on {gpus}",
                         errors)

    if failed:
        print("multi_gpu_allreduce: FAILED")
        return 1
    print("multi_gpu_allreduce: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
