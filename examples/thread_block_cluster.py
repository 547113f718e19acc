# ################################################################################################
# thread_block_cluster.py: launch a grid of thread-block clusters (compute capability 9.0+).
#
# A cluster is a group of blocks scheduled together on one GPU processing cluster, whose blocks
# can share their shared memory. The kernel reads its cluster's shape, its cluster's index in
# the grid and its own rank in the cluster from PTX special registers (%cluster_nctaid,
# %clusterid, %cluster_ctarank) with inline assembly, and every block writes them back; the
# script checks them against the launch configuration. Note that with a cluster, LaunchConfig's
# grid counts clusters, not blocks.
#
# Run:  python examples/thread_block_cluster.py
# On a machine without a GPU or driver, or with a GPU older than compute capability 9.0, it
# prints one line saying why, and exits 0.
# ################################################################################################

import sys

import numpy as np

from cuda_core import (CUDAError, Device, LaunchConfig, LegacyPinnedMemoryResource, Program,
                       ProgramOptions, launch)

CODE = r"""
#define READ_SREG(name, out) asm volatile("mov.u32 %0, %%" name ";" : "=r"(out))

extern "C" __global__ void cluster_info(unsigned int* out) {
    if (threadIdx.x != 0) {
        return;
    }
    unsigned int shape_x, shape_y, shape_z, id_x, id_y, id_z, rank;
    READ_SREG("cluster_nctaid.x", shape_x);
    READ_SREG("cluster_nctaid.y", shape_y);
    READ_SREG("cluster_nctaid.z", shape_z);
    READ_SREG("clusterid.x", id_x);
    READ_SREG("clusterid.y", id_y);
    READ_SREG("clusterid.z", id_z);
    READ_SREG("cluster_ctarank", rank);
    unsigned int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned int* row = out + 7 * block;
    row[0] = shape_x; row[1] = shape_y; row[2] = shape_z;
    row[3] = id_x; row[4] = id_y; row[5] = id_z;
    row[6] = rank;
}
"""


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except CUDAError as exc:
        print(f"No GPU: {exc}")
        return 0
    cc = dev.compute_capability
    if cc < (9, 0):
        print(f"Thread-block clusters need compute capability 9.0 or newer; {dev.name} is "
              f"{cc.major}.{cc.minor}")
        return 0
    stream = dev.create_stream()

    program = Program(CODE, "c++", ProgramOptions(arch="sm_" + dev.arch))
    kernel = program.compile("cubin").get_kernel("cluster_info")

    cluster = (2, 2, 1)  # 4 blocks per cluster (8 is the portable maximum)
    grid = (3, 2, 1)     # in clusters: 6 clusters, 24 blocks
    blocks = tuple(g * c for g, c in zip(grid, cluster))
    n_blocks = int(np.prod(blocks))
    config = LaunchConfig(grid=grid, cluster=cluster, block=32)

    nbytes = 7 * n_blocks * np.dtype(np.uint32).itemsize
    d_out = dev.allocate(nbytes, stream=stream)
    d_out.fill(0xFF, stream=stream)  # every word 0xFFFFFFFF: a block that never ran shows up
    launch(stream, config, kernel, d_out)
    h_out = LegacyPinnedMemoryResource().allocate(nbytes)
    d_out.copy_to(h_out, stream=stream)
    stream.sync()
    rows = np.from_dlpack(h_out).view(np.uint32).reshape(blocks[::-1] + (7,))

    shapes = {tuple(int(v) for v in row) for row in rows[..., 0:3].reshape(-1, 3)}
    print(f"grid {grid} clusters of {cluster} blocks = {blocks} blocks; the kernel read "
          f"cluster shape(s) {sorted(shapes)}")
    ok = shapes == {cluster}
    # Block (x, y, z) is in cluster (x // 2, y // 2, z) and has rank x % 2 + 2 * (y % 2) there.
    z, y, x = np.indices(blocks[::-1])
    ok = ok and np.array_equal(rows[..., 3], x // cluster[0])
    ok = ok and np.array_equal(rows[..., 4], y // cluster[1])
    ok = ok and np.array_equal(rows[..., 5], z // cluster[2])
    ok = ok and np.array_equal(rows[..., 6], (x % cluster[0]) + cluster[0] * (y % cluster[1]))
    d_out.close(stream)
    stream.close()
    assert ok, f"thread_block_cluster: unexpected cluster registers:\n{rows}"
    return 0


if __name__ == "__main__":
    sys.exit(main())
