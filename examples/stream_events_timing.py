# ################################################################################################
# stream_events_timing.py: two streams ordered by an event, and GPU-side timing with events.
#
# A producer kernel runs on stream s1 (it spins for a few milliseconds, then writes its data);
# stream s2 waits for an event recorded on s1 after it, and only then runs a consumer kernel
# that reads the data. Events created with timing enabled are recorded around the work, and
# subtracting two of them gives the milliseconds that passed between them on the GPU.
#
# Run:  python examples/stream_events_timing.py
# On a machine without a GPU or driver it prints one line saying why, and exits 0.
# ################################################################################################

import sys

import numpy as np

from cuda_core import (CUDAError, Device, EventOptions, LaunchConfig, LegacyPinnedMemoryResource,
                       Program, ProgramOptions, launch)

CODE = r"""
// Spins for about `cycles` clock cycles, then writes x[i] = i.
extern "C" __global__ void produce(float* x, unsigned int n, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x) {
        x[i] = (float)i;
    }
}

extern "C" __global__ void consume(const float* x, float* y, unsigned int n) {
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x) {
        y[i] = 2.0f * x[i];
    }
}
"""


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except CUDAError as exc:
        print(f"No GPU: {exc}")
        return 0
    s1 = dev.create_stream()
    s2 = dev.create_stream()

    module = Program(CODE, "c++", ProgramOptions(arch="sm_" + dev.arch)).compile("cubin")
    produce, consume = module.get_kernel("produce"), module.get_kernel("consume")

    n = 1 << 20
    nbytes = n * np.dtype(np.float32).itemsize
    config = LaunchConfig(grid=4 * dev.properties.multiprocessor_count, block=256)
    spin_ms = 5.0
    # clock_rate is the peak SM clock in kHz, i.e. cycles per millisecond; at a lower clock
    # the spin only takes longer.
    cycles = int(spin_ms * dev.properties.clock_rate)

    x = dev.allocate(nbytes, stream=s1)
    x.fill(0xFF, stream=s1)  # NaN everywhere: a consumer that ran too early would see them
    y = dev.allocate(nbytes, stream=s2)
    h_y = LegacyPinnedMemoryResource().allocate(nbytes)

    timing = EventOptions(timing_enabled=True)
    start = dev.create_event(timing)
    s1.record(start)                                  # an event made first, recorded here
    launch(s1, config, produce, x, np.uint32(n), np.int64(cycles))
    produced = s1.record(options=timing)              # or made and recorded in one call

    s2.wait(produced)   # s2's later work waits for s1's work up to `produced`, not for all of s1
    launch(s2, config, consume, x, y, np.uint32(n))
    consumed = s2.record(options=timing)
    y.copy_to(h_y, stream=s2)

    print(f"queued on two streams; consumed.is_done right away: {consumed.is_done}")
    s2.sync()  # the copy into h_y (after `consumed`) is done, hence both kernels too
    assert consumed.is_done

    produce_ms = produced - start   # milliseconds from `start` to `produced`
    consume_ms = consumed - produced
    total_ms = consumed - start
    print(f"produce (spin ~{spin_ms} ms at peak clock) {produce_ms:8.3f} ms")
    print(f"consume, on the other stream           {consume_ms:8.3f} ms")
    print(f"from start to consumed                 {total_ms:8.3f} ms")

    result = np.from_dlpack(h_y).view(np.float32)
    ok = np.array_equal(result, 2.0 * np.arange(n, dtype=np.float32))
    ok = ok and produce_ms >= 0.5 * spin_ms and consume_ms >= 0 and total_ms >= produce_ms
    for buf in (x, y):
        buf.close(s2)
    s1.close()
    s2.close()
    assert ok, "stream_events_timing: wrong data or inconsistent event times"
    return 0


if __name__ == "__main__":
    sys.exit(main())
