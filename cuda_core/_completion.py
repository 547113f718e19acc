"""Tab completion in the interactive interpreter for cuda_core's Cython classes.

The standard completer (``rlcompleter``) lists ``obj.<Tab>`` by reading every attribute, except
those that are ``property`` objects, which it leaves unread. The properties of a Cython class
are not ``property`` objects but C descriptors (``getset_descriptor``, ``member_descriptor``),
so the completer reads them: a read that calls the driver (``Buffer.device_id``,
``ObjectCode.handle``, which loads the code) runs on every <Tab>, and one that raises anything
but AttributeError (a closed object's RuntimeError, a CUDAError) ends the completion with no
candidates at all. The fix makes the completer see cuda_core's descriptors as properties:
listed, never read. cuda.core makes the same fix, with the same opt-out.

It is made only in an interactive session (``python``, ``python -i``), never in a script or a
test run, and not at all when ``CUDA_CORE_DONT_FIX_TAB_COMPLETION`` is set to anything but an
empty string or ``0`` (cuda.core's rule).
Descriptors of other packages' classes are left as the completer treats them.
"""

import builtins
import os
import sys
from types import GetSetDescriptorType, MemberDescriptorType

_OPT_OUT = "CUDA_CORE_DONT_FIX_TAB_COMPLETION"


def _ours(cls):
    module = getattr(cls, "__module__", None)
    return isinstance(module, str) and (module == "cuda_core" or module.startswith("cuda_core."))


class _PropertyCheck(type):
    """The metaclass whose isinstance() says yes for properties and cuda_core's descriptors."""

    def __instancecheck__(cls, obj):
        if isinstance(obj, builtins.property):
            return True
        return (isinstance(obj, (GetSetDescriptorType, MemberDescriptorType))
                and _ours(obj.__objclass__))


class CompletionProperty(builtins.property, metaclass=_PropertyCheck):
    """``rlcompleter.property`` once fixed: still the built-in ``property`` for anything that
    uses it as one (a subclass), and an isinstance() test that cuda_core's descriptors pass."""


def fix_tab_completion():
    """Give ``rlcompleter`` the check above, in an interactive session, unless opted out;
    returns whether the completer uses it now."""
    if os.environ.get(_OPT_OUT, "") not in ("", "0"):
        return False
    if not (hasattr(sys, "ps1") or sys.flags.inspect):
        return False
    import rlcompleter

    current = getattr(rlcompleter, "property", builtins.property)
    if current is builtins.property:
        # Module global: found before the built-in by rlcompleter's own code.
        rlcompleter.property = CompletionProperty
        return True
    # Already replaced: by this function earlier, or by another package (cuda.core's check
    # covers every C descriptor, ours among them); either way it is left alone.
    return current is CompletionProperty
