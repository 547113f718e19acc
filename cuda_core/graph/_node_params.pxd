from cuda.bindings.cydriver cimport CUgraphNodeParams

from cuda_core._kernel_args cimport ParamHolder


# Each fills ``params`` (zeroed by the caller) for one node and returns the list of the objects
# the node uses, which its graph holds (kernel: [kernel, args]; memset: [dst object or owner];
# memcpy: [dst's, src's], None where there is none): every argument is checked first, and no
# driver call is made except the kernel's parameter layout (read once per Kernel). ``what`` names the builder
# in messages. The kernel's packed arguments live in ``holder`` (initialized here, released by
# the caller once the node is added: the driver copies them). The caller sets the node's context.
cdef list kernel_params(CUgraphNodeParams* params, ParamHolder* holder, object config,
                        object kernel, tuple args, str what)
cdef list memset_params(CUgraphNodeParams* params, object dst, object value, object width,
                        object height, object pitch, object dst_owner, str what)
cdef list memcpy_params(CUgraphNodeParams* params, object dst, object src, object size,
                        object dst_owner, object src_owner, str what)
