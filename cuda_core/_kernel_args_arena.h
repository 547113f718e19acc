// One argument's inline storage: 16 bytes, 16-byte aligned (fits complex<double>).
#pragma once
struct alignas(16) cuda_core_arg_slot {
    unsigned char bytes[16];
};
