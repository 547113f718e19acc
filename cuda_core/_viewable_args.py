"""``args_viewable_as_strided_memory``: a decorator whose chosen positional arguments reach the
function as proxies, each making a :class:`StridedMemoryView` of its argument on request (the
consumer's stream is known only inside the function)."""

import functools

from cuda_core._checks import check_int
from cuda_core._memoryview import StridedMemoryView

__all__ = ["args_viewable_as_strided_memory"]


class _StridedMemoryViewProxy:
    """What a decorated function receives for a chosen argument: ``view(stream_ptr)`` makes the
    :class:`StridedMemoryView`."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def view(self, stream_ptr=None):
        """A :class:`StridedMemoryView` of the argument (``from_any_interface``)."""
        if type(self.obj) is StridedMemoryView:
            return self.obj
        return StridedMemoryView.from_any_interface(self.obj, stream_ptr)

    def __repr__(self):
        return f"<StridedMemoryView proxy of {type(self.obj).__name__}>"


def args_viewable_as_strided_memory(arg_indices):
    """Decorator: the positional arguments at ``arg_indices`` reach the function as proxies
    whose ``view(stream_ptr)`` returns a :class:`StridedMemoryView` of the argument.

    Parameters
    ----------
    arg_indices : tuple of int
        Indices of positional arguments; an index beyond the arguments of a call is a
        ``TypeError`` at that call.

    Examples
    --------
    ::

        @args_viewable_as_strided_memory((1,))
        def my_func(arg0, arg1, arg2, stream: Stream):
            view = arg1.view(stream.handle)   # any DLPack or CAI object
            assert isinstance(view, StridedMemoryView)
    """
    if not isinstance(arg_indices, tuple):
        raise TypeError(f"args_viewable_as_strided_memory(): arg_indices must be a tuple of "
                        f"ints, not {type(arg_indices).__name__}")
    indices = tuple([check_int(i, "args_viewable_as_strided_memory(): each item of "
                                  "arg_indices") for i in arg_indices])

    def decorator(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            args = list(args)
            n = len(args)
            for i in indices:
                if not -n <= i < n:
                    raise TypeError(f"{func.__name__}(): argument {i} is to be viewed as "
                                    f"strided memory but only {n} positional arguments were "
                                    f"given")
                args[i] = _StridedMemoryViewProxy(args[i])
            return func(*args, **kwargs)
        return wrapped
    return decorator
