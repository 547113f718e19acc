"""LaunchConfig: the shape of a kernel launch.

Pure checks (types, values >= 1, limits of the driver's integer fields) happen here, at
construction and when a field is assigned. Checks that need a device or a kernel (block size, cluster support, cooperative
grid size, dynamic shared memory) happen at launch, where the device and kernel are known.
"""

import warnings

cimport cython
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.ref cimport PyObject

from cuda_core._checks cimport check_bool, check_int
from cuda_core._checks import ArgumentTypeError, SizeOverflowError
from cuda_core._errors import InvalidValueError


cdef extern from "Python.h":
    ctypedef object (*vectorcallfunc)(object, PyObject**, size_t, PyObject*)
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)


cdef extern from *:
    """
    static void cuda_core_set_type_vectorcall(PyObject* type, void* fn) {
        ((PyTypeObject*)type)->tp_vectorcall = (vectorcallfunc)fn;
    }
    """
    void set_type_vectorcall "cuda_core_set_type_vectorcall" (object type, void* fn)

__all__ = ["LaunchConfig"]

cdef unsigned long long _UINT_MAX = 0xFFFFFFFFu


# Checks off: ``value`` is an exact tuple, which cannot change, and i < count = its length.
@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _dims(object value, str where, str field, unsigned int out[3]) except -1:
    """Normalise an int or a 1-3 tuple of ints into ``out``; errors name ``where.field``."""
    cdef Py_ssize_t i, count
    if type(value) is int:  # the common cases take no Python-level call
        if _small_int(value, &out[0]):
            out[1] = out[2] = 1
            return 0
    elif type(value) is tuple:
        count = len(<tuple>value)
        if 1 <= count <= 3:
            out[1] = out[2] = 1
            for i in range(count):
                item = (<tuple>value)[i]
                if type(item) is not int or not _small_int(item, &out[i]):
                    break
            else:
                return 0
    return _dims_general(value, f"{where}.{field}", out)


cdef inline bint _small_int(object value, unsigned int* out) noexcept:
    """``value`` (an exact int) in [1, 2**32 - 1] stored in ``out``; False otherwise."""
    cdef int overflow = 0
    cdef long long n = PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow == 0 and 1 <= n <= <long long>_UINT_MAX:
        out[0] = <unsigned int>n
        return True
    return False


cdef int _check_blocks(const unsigned int grid[3], const unsigned int cluster[3],
                       str where) except -1:
    """A grid of clusters counts its blocks in the driver's unsigned int, per dimension."""
    cdef int i
    for i in range(3):
        if <unsigned long long>grid[i] * cluster[i] > _UINT_MAX:
            raise ValueError(f"{where}: grid {(grid[0], grid[1], grid[2])} of clusters "
                             f"{(cluster[0], cluster[1], cluster[2])} has more than 2**32 - 1 "
                             f"blocks in one dimension")
    return 0


cdef int _dims_general(object value, str name, unsigned int out[3]) except -1:
    cdef int i
    if isinstance(value, tuple):
        items = tuple(value)  # a tuple subclass's __len__ may disagree with its items
        if len(items) > 3:  # () is (1, 1, 1), as in cuda.core: missing dimensions are 1
            raise ValueError(f"{name} must be an int or a tuple of up to 3 ints, "
                             f"got a tuple of length {len(items)}")
    else:
        items = (value,)
    out[0] = out[1] = out[2] = 1
    for i in range(len(items)):
        item = items[i]
        # Python's bool is an int (cuda.core takes it); NumPy's is not.
        if not hasattr(type(item), "__index__") or (type(item).__module__ == "numpy"
                                                    and type(item).__name__ in ("bool", "bool_")):
            raise ArgumentTypeError(f"{name} must be an int or a tuple of up to 3 ints, "
                            f"got {type(item).__name__}"
                            + (f" in {value!r}" if isinstance(value, tuple) else ""))
        n = item.__index__()
        if n < 1:
            raise ValueError(f"{name} values must be >= 1, got {value!r}")
        if n > _UINT_MAX:  # an OverflowError too, as cuda.core's at launch
            raise SizeOverflowError(f"{name} values must fit in 32 bits, got {value!r}")
        out[i] = n
    return 0


cdef class LaunchConfig:
    """How to launch a kernel: grid, block, optional cluster, dynamic shared memory, flags.

    The fields can be assigned after the config is built, as in cuda.core, and are checked and
    normalised as at construction. A config assigned to while another thread launches with it
    may launch with a mix of old and new values; give each thread its own config if it changes
    one.

    Parameters
    ----------
    grid : int or tuple of 1-3 ints
        The grid size, in blocks; **in clusters** when ``cluster`` is given.
    cluster : int or tuple of 1-3 ints, optional
        The thread-block cluster shape, in blocks (compute capability 9.0 and newer).
    block : int or tuple of 1-3 ints
        The block size, in threads.
    shmem_size : int, optional
        Dynamic shared memory per block, in bytes (default 0).
    is_cooperative : bool
        Launch cooperatively, so the kernel may synchronize the whole grid; the grid must then
        fit on the device at once (checked at launch).
    programmatic_stream_serialization : bool
        Allow the kernel to overlap with the previous one on the stream (programmatic
        dependent launch; compute capability 9.0 and newer).
    cooperative_launch : bool, optional
        Deprecated spelling of ``is_cooperative``.

    Raises
    ------
    TypeError, ValueError
        For a missing or malformed field; the message names it.
    """

    def __init__(self, grid=None, cluster=None, block=None, shmem_size=None,
                 is_cooperative=False, programmatic_stream_serialization=False, *,
                 cooperative_launch=None):
        self._setup(grid, cluster, block, shmem_size, is_cooperative,
                    programmatic_stream_serialization, cooperative_launch, "LaunchConfig")

    cdef int _setup(self, grid, cluster, block, shmem_size, is_cooperative,
                    programmatic_stream_serialization, cooperative_launch,
                    str where) except -1:
        cdef int overflow = 0
        cdef long long shmem = 0
        if self._frozen:
            raise AttributeError("LaunchConfig.__init__: this config is already built; assign "
                                 "its fields to change it")
        if cooperative_launch is not None:
            # stacklevel 1: compiled code has no frame of its own, so 1 is the caller's line.
            warnings.warn("LaunchConfig(cooperative_launch=...) is deprecated; use "
                          "is_cooperative=...", DeprecationWarning, stacklevel=1)
            if is_cooperative is not False:
                raise TypeError("LaunchConfig: give is_cooperative or cooperative_launch, "
                                "not both")
            is_cooperative = cooperative_launch
        if grid is None:
            raise ValueError(f"{where}.grid is required")
        if block is None:
            raise ValueError(f"{where}.block is required")
        _dims(grid, where, "grid", self._grid)
        _dims(block, where, "block", self._block)
        self._has_cluster = cluster is not None
        if self._has_cluster:
            _dims(cluster, where, "cluster", self._cluster)
            _check_blocks(self._grid, self._cluster, where)
        else:
            self._cluster[0] = self._cluster[1] = self._cluster[2] = 1
        if shmem_size is not None:
            if type(shmem_size) is int:  # the common case takes no Python-level call
                shmem = PyLong_AsLongLongAndOverflow(shmem_size, &overflow)
            if type(shmem_size) is not int or overflow or not 0 <= shmem <= <long long>_UINT_MAX:
                # Negative: the driver's INVALID_VALUE, as cuda.core's at launch; past 32 bits:
                # an OverflowError too, as cuda.core's conversion.
                shmem = check_int(shmem_size, f"{where}.shmem_size")
                check_int(shmem, f"{where}.shmem_size", 0, _UINT_MAX, False,
                          InvalidValueError if shmem < 0 else SizeOverflowError)
        self._shmem_size = <unsigned int>shmem
        if type(is_cooperative) is not bool:
            check_bool(is_cooperative, f"{where}.is_cooperative")
        if type(programmatic_stream_serialization) is not bool:
            check_bool(programmatic_stream_serialization,
                       f"{where}.programmatic_stream_serialization")
        self._is_cooperative = is_cooperative
        self._pss = programmatic_stream_serialization
        self._frozen = True
        return 0

    @property
    def grid(self):
        """The grid as a 3-tuple (in clusters when ``cluster`` is set)."""
        return (self._grid[0], self._grid[1], self._grid[2])

    @grid.setter
    def grid(self, value):
        cdef unsigned int dims[3]
        _dims(value, "LaunchConfig", "grid", dims)
        if self._has_cluster:
            _check_blocks(dims, self._cluster, "LaunchConfig")
        self._grid[:] = dims

    @property
    def block(self):
        """The block as a 3-tuple of threads."""
        return (self._block[0], self._block[1], self._block[2])

    @block.setter
    def block(self, value):
        cdef unsigned int dims[3]
        _dims(value, "LaunchConfig", "block", dims)
        self._block[:] = dims

    @property
    def cluster(self):
        """The cluster as a 3-tuple of blocks, or None."""
        if not self._has_cluster:
            return None
        return (self._cluster[0], self._cluster[1], self._cluster[2])

    @cluster.setter
    def cluster(self, value):
        cdef unsigned int dims[3]
        if value is None:
            self._has_cluster = False
            self._cluster[0] = self._cluster[1] = self._cluster[2] = 1
            return
        _dims(value, "LaunchConfig", "cluster", dims)
        _check_blocks(self._grid, dims, "LaunchConfig")
        self._cluster[:] = dims
        self._has_cluster = True

    @property
    def shmem_size(self):
        """Dynamic shared memory per block, in bytes."""
        return self._shmem_size

    @shmem_size.setter
    def shmem_size(self, value):
        self._shmem_size = 0 if value is None else check_int(
            value, "LaunchConfig.shmem_size", 0, _UINT_MAX)  # SizeOverflowError outside

    @property
    def is_cooperative(self):
        """True for a cooperative launch (the kernel may synchronize the whole grid)."""
        return bool(self._is_cooperative)

    @is_cooperative.setter
    def is_cooperative(self, value):
        self._is_cooperative = value if type(value) is bool else check_bool(
            value, "LaunchConfig.is_cooperative")

    @property
    def cooperative_launch(self):
        """Deprecated spelling of :attr:`is_cooperative`."""
        warnings.warn("LaunchConfig.cooperative_launch is deprecated; use is_cooperative",
                      DeprecationWarning, stacklevel=2)
        return bool(self._is_cooperative)

    @property
    def programmatic_stream_serialization(self):
        """True when the kernel may overlap with the previous one on its stream
        (programmatic dependent launch)."""
        return bool(self._pss)

    @programmatic_stream_serialization.setter
    def programmatic_stream_serialization(self, value):
        self._pss = value if type(value) is bool else check_bool(
            value, "LaunchConfig.programmatic_stream_serialization")

    def _key(self):
        return (self.grid, self.cluster, self.block, self._shmem_size,
                bool(self._is_cooperative), bool(self._pss))

    def __eq__(self, other):
        if not isinstance(other, LaunchConfig):
            return NotImplemented
        return self._key() == (<LaunchConfig>other)._key()

    def __hash__(self):
        return hash((LaunchConfig,) + self._key())

    def __repr__(self):
        return (f"LaunchConfig(grid={self.grid}, cluster={self.cluster}, block={self.block}, "
                f"shmem_size={self._shmem_size}, is_cooperative={bool(self._is_cooperative)}, "
                f"programmatic_stream_serialization={bool(self._pss)})")

    def __reduce__(self):
        # As cuda.core 1.2.2, whose LaunchConfig holds C launch attributes: copy.copy,
        # copy.deepcopy and pickle raise TypeError.
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")


# Constructing a LaunchConfig per launch is common, so LaunchConfig(...) is served by a
# vectorcall on the type: the arguments arrive as an array with their keyword names, with no
# tuple or dict built and no generic keyword parsing. It binds them exactly as __init__'s
# signature would (subclasses do not inherit it and go through __init__). It keeps no state
# between calls: every call builds a new config, and any thread may call it at any time.
cdef tuple _PARAMS = ("grid", "cluster", "block", "shmem_size", "is_cooperative",
                      "programmatic_stream_serialization", "cooperative_launch")


# Checks off: kwnames is the interpreter's exact tuple of keyword names and i < its length;
# _PARAMS is a module-private 7-tuple and j < 7.
@cython.boundscheck(False)
@cython.wraparound(False)
cdef object _construct(object cls, PyObject** args, size_t nargsf, PyObject* kwnames):
    """LaunchConfig(...): bind the arguments as __init__'s signature would, check, build."""
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    cdef Py_ssize_t nkw = 0 if kwnames == NULL else len(<tuple>kwnames)
    cdef Py_ssize_t i, j
    cdef PyObject* values[7]  # borrowed from the caller for this call; NULL: not given
    if nargs > 6:
        raise TypeError(f"LaunchConfig() takes at most 6 positional arguments ({nargs} given)")
    for i in range(7):
        values[i] = args[i] if i < nargs else NULL
    for i in range(nkw):
        name = (<tuple>kwnames)[i]
        for j in range(7):
            # Identity first: the interpreter passes interned names.
            if name is _PARAMS[j] or name == _PARAMS[j]:
                break
        else:
            raise TypeError(f"LaunchConfig() got an unexpected keyword argument {name!r}")
        if values[j] != NULL:
            raise TypeError(f"LaunchConfig() got multiple values for argument {name!r}")
        values[j] = args[nargs + i]
    cdef LaunchConfig self = LaunchConfig.__new__(LaunchConfig)
    self._setup(<object>values[0] if values[0] != NULL else None,
                <object>values[1] if values[1] != NULL else None,
                <object>values[2] if values[2] != NULL else None,
                <object>values[3] if values[3] != NULL else None,
                <object>values[4] if values[4] != NULL else False,
                <object>values[5] if values[5] != NULL else False,
                <object>values[6] if values[6] != NULL else None,
                "LaunchConfig")
    return self


set_type_vectorcall(LaunchConfig, <void*>_construct)


cdef LaunchConfig as_launch_config(object config, str what):
    """``config`` itself when it is a LaunchConfig; else a LaunchConfig built from any object
    with ``grid``, ``block`` and optionally ``cluster`` and ``shmem_size`` attributes, with
    errors that name ``what``'s ``config``."""
    if type(config) is LaunchConfig or isinstance(config, LaunchConfig):
        return <LaunchConfig>config
    try:
        grid = config.grid
        block = config.block
        cluster = getattr(config, "cluster", None)
        shmem = getattr(config, "shmem_size", None)
    except AttributeError:
        raise TypeError(f"{what}: config must be a LaunchConfig (an object with grid, block, "
                        f"cluster and shmem_size), not {type(config).__name__}") from None
    cdef LaunchConfig result = LaunchConfig.__new__(LaunchConfig)
    result._setup(grid, cluster, block, shmem, False, False, None, f"{what}: config")
    return result
