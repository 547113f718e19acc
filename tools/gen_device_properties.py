"""Generate DeviceProperties from the CU_DEVICE_ATTRIBUTE_* enum in cuda.h.

Writes the generated blocks of ``cuda_core/_device_properties.pyx`` (one cached property per
attribute) and of its stub ``cuda_core/_device_properties.pyi``. Run after moving to a newer
CUDA header:

    python tools/gen_device_properties.py [path/to/cuda.h]

Attributes whose documentation describes a yes/no capability are returned as ``bool``; the
others (sizes, counts, limits, ids, bitmasks, enums) as ``int``.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Yes/no capabilities, recognised by how cuda.h documents them.
BOOL_DOC = re.compile(
    r"^(Device (supports|suports|can|is|has|accepts|accesses|shares)|Indicates (device supports|if)|"
    r"Specifies whether|Link between the device and the host supports|The host can|"
    r"64-bit operations are supported|::CU_STREAM_WAIT_VALUE_NOR is supported|"
    r"The ::CU_STREAM_WAIT_VALUE_FLUSH flag|External timeline semaphore interop|"
    r"Deprecated, along with v1 MemOps API)")
BOOL_NAMES = {"COOPERATIVE_MULTI_DEVICE_LAUNCH", "CAN_TEX2D_GATHER", "GPU_OVERLAP",
              "VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED"}
INT_NAMES = {"MULTI_GPU_BOARD_GROUP_ID"}
BLOCK_BEGIN = "    # BEGIN GENERATED DeviceProperties (tools/gen_device_properties.py)\n"
BLOCK_END = "    # END GENERATED DeviceProperties\n"


def parse(header):
    text = open(header).read()
    body = re.search(r"typedef enum CUdevice_attribute_enum \{(.*?)\} CUdevice_attribute;",
                     text, re.S).group(1)
    rows = []
    for m in re.finditer(r"CU_DEVICE_ATTRIBUTE_(\w+)\s*=\s*(\d+)\s*,?\s*(?:/\*\*<\s*(.*?)\s*\*/)?",
                         body):
        name, value, doc = m.group(1), int(m.group(2)), (m.group(3) or "").strip()
        if name == "MAX":
            continue
        is_bool = (name in BOOL_NAMES or bool(BOOL_DOC.match(doc))) and name not in INT_NAMES
        rows.append((name, value, doc, is_bool))
    return rows


def replace_block(path, block):
    """Write ``block`` between the BEGIN and END marker lines of the file at ``path``."""
    text = open(path).read()
    a, b = text.index(BLOCK_BEGIN) + len(BLOCK_BEGIN), text.index(BLOCK_END)
    with open(path, "w") as f:
        f.write(text[:a] + block + text[b:])


def main():
    # find_cuda_headers.py prints the include directory first (then the version, then where
    # cudaProfiler.h lies).
    header = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        subprocess.check_output([sys.executable, os.path.join(HERE, "find_cuda_headers.py")],
                                text=True).splitlines()[0], "cuda.h")
    rows = parse(header)
    max_value = max(v for _, v, _, _ in rows)
    if max_value >= 256:
        raise SystemExit("DeviceProperties caches 256 attributes: grow its arrays")
    # Attributes newer than CUDA 12's headers are named through _cuda_compat (their shims).
    shims = open(os.path.join(ROOT, "cuda_core", "_cuda_compat_cu13", "_shims.pxi")).read()
    compat = set(re.findall(r"\bCU_DEVICE_ATTRIBUTE_(\w+)", shims))
    body, stub = [], []
    for name, value, doc, is_bool in rows:
        prop = name.lower()
        getter = "_get_bool" if is_bool else "_get"
        where = "_cuda_compat" if name in compat else "cydriver"
        doc = doc.replace("\\", "\\\\").replace('"', "'").replace("::", "") or name
        # One property after another, without blank lines: a generated table.
        body.append(f"    @property\n    def {prop}(self):\n"
                    f'        """{doc} (``CU_DEVICE_ATTRIBUTE_{name}``)."""\n'
                    f"        return self.{getter}({where}.CU_DEVICE_ATTRIBUTE_{name})\n")
        stub.append(f"    @property\n    def {prop}(self) -> {'bool' if is_bool else 'int'}: ...\n")
    for path, block in (("_device_properties.pyx", body), ("_device_properties.pyi", stub)):
        replace_block(os.path.join(ROOT, "cuda_core", path), "".join(block))
    print(f"{len(rows)} attributes, {sum(r[3] for r in rows)} bool")


if __name__ == "__main__":
    main()
