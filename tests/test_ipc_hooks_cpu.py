"""Buffer's IPC members before their implementation exists (CPU).

``Buffer.ipc_descriptor``, ``Buffer.from_ipc_descriptor`` and ``Buffer.__reduce__`` call
functions that ``cuda_core._memory._ipc`` registers with ``_buffer`` (``register_ipc``) when it
is imported. Until that module exists, the first two raise RuntimeError and pickling raises
TypeError, and nothing else about a Buffer changed. When ``_ipc`` lands, the first test fails
on purpose: these tests then give way to the IPC tests.
"""

import copy
import importlib.util
import inspect
import pickle

import pytest

from cuda_core import LEGACY_DEFAULT_STREAM, Buffer
from helpers.memory import NumpyMemoryResource

NOT_LOADED = "cuda_core._memory._ipc is not loaded"


def test_ipc_module_does_not_exist_yet():
    assert importlib.util.find_spec("cuda_core._memory._ipc") is None


def test_ipc_descriptor_raises_until_ipc_is_loaded():
    mr = NumpyMemoryResource()
    buf = mr.allocate(16)
    with pytest.raises(RuntimeError, match=NOT_LOADED):
        buf.ipc_descriptor
    view = Buffer.from_handle(buf.handle, 16)
    with pytest.raises(RuntimeError, match=NOT_LOADED):
        view.ipc_descriptor
    # The buffer is untouched: still open, same memory, freed once on close.
    assert not buf.is_closed and buf.size == 16 and not mr.calls
    buf.close()
    assert len(mr.calls) == 1
    with pytest.raises(RuntimeError, match="this Buffer is closed"):
        buf.ipc_descriptor


@pytest.mark.parametrize("cls", [Buffer, type("Tagged", (Buffer,), {})])
def test_from_ipc_descriptor_raises_until_ipc_is_loaded(cls):
    mr = NumpyMemoryResource()
    with pytest.raises(RuntimeError, match=NOT_LOADED):
        cls.from_ipc_descriptor(mr, object(), stream=LEGACY_DEFAULT_STREAM)
    assert not mr.calls and not mr.live


def test_from_ipc_descriptor_arguments():
    mr = NumpyMemoryResource()
    with pytest.raises(TypeError, match="stream"):  # required
        Buffer.from_ipc_descriptor(mr, object())
    with pytest.raises(TypeError):  # keyword-only
        Buffer.from_ipc_descriptor(mr, object(), LEGACY_DEFAULT_STREAM)
    with pytest.raises(RuntimeError, match=NOT_LOADED):
        Buffer.from_ipc_descriptor(mr=mr, ipc_descriptor=object(), stream=LEGACY_DEFAULT_STREAM)


def test_signatures_are_cuda_cores():
    theirs = pytest.importorskip("cuda.core").Buffer

    def shape(fn):
        return [(p.name, p.kind.name, p.default)
                for p in inspect.signature(fn).parameters.values()]

    assert shape(Buffer.from_ipc_descriptor) == shape(theirs.from_ipc_descriptor)
    assert shape(Buffer.from_ipc_descriptor) == [
        ("mr", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        ("ipc_descriptor", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        ("stream", "KEYWORD_ONLY", inspect.Parameter.empty)]
    for name in ("ipc_descriptor", "is_mapped"):
        assert isinstance(inspect.getattr_static(theirs, name), type(Buffer.size)), name
        assert isinstance(inspect.getattr_static(Buffer, name), type(Buffer.size)), name


@pytest.mark.parametrize("how", [pickle.dumps, copy.copy, copy.deepcopy])
def test_pickling_is_a_type_error_until_ipc_is_loaded(how):
    mr = NumpyMemoryResource()
    buf = mr.allocate(8)
    with pytest.raises(TypeError, match=f"cannot be pickled here: .*{NOT_LOADED}"):
        how(buf)
    with pytest.raises(TypeError, match=NOT_LOADED):
        how(Buffer.from_handle(buf.handle, 8, owner=mr))
    assert not buf.is_closed and not mr.calls


def test_is_mapped_unchanged():
    class Mapped(NumpyMemoryResource):
        is_mapped = True

    mr = NumpyMemoryResource()
    assert mr.allocate(8).is_mapped is False
    assert Buffer.from_handle(0x1000, 8).is_mapped is False
    assert Buffer.from_handle(0x1000, 8, owner=mr).is_mapped is False
    # A resource of one's own that maps memory still says so for its buffers.
    assert Mapped().allocate(8).is_mapped is True


def test_docstrings_carry_the_trust_note():
    doc = inspect.getdoc(Buffer.from_ipc_descriptor)
    for part in ("Parameters", "Returns", "Raises", "Warnings", "trusts the process",
                 "never unpickle"):
        assert part in doc, part
    assert "from_ipc_descriptor" in inspect.getdoc(Buffer.__reduce__)
    assert "from_ipc_descriptor" in inspect.getdoc(Buffer)
    assert "Raises" in inspect.getdoc(Buffer.ipc_descriptor)
