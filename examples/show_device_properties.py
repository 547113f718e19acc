# ################################################################################################
# show_device_properties.py: print every CUDA device of this machine and its properties.
#
# Run:  python examples/show_device_properties.py
# On a machine without a GPU or driver it prints one line saying why, and exits 0.
# ################################################################################################

import sys

import cuda_core
from cuda_core import CUDAError, DeviceProperties, System


def property_names():
    return sorted(name for name, value in vars(DeviceProperties).items()
                  if not name.startswith("_") and type(value).__name__ == "getset_descriptor")


def main():
    try:
        system = System()
        devices = system.devices
        major, minor = system.driver_version
    except CUDAError as exc:
        print(f"No GPU: {exc}")
        return 0

    print(f"cuda_core {cuda_core.__version__}; CUDA driver {major}.{minor}; "
          f"{len(devices)} device(s)")
    names = property_names()
    for dev in devices:
        cc = dev.compute_capability
        print(f"\nDevice {dev.device_id}: {dev.name}")
        print(f"  compute capability  {cc.major}.{cc.minor} (sm_{dev.arch})")
        print(f"  uuid                {dev.uuid}")
        print(f"  pci bus id          {dev.pci_bus_id}")
        unsupported = []
        for name in names:
            try:
                value = getattr(dev.properties, name)
            except CUDAError:  # attributes newer than the installed driver
                unsupported.append(name)
                continue
            print(f"  {name:<60} {value}")
        if unsupported:
            print(f"  (not reported by this driver: {', '.join(unsupported)})")
    assert devices and all(d.properties.multiprocessor_count > 0 for d in devices)
    return 0


if __name__ == "__main__":
    sys.exit(main())
