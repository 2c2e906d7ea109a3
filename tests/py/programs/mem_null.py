"""Allocations that fail: PyMem_RawMalloc, PyMem_Malloc and PyObject_Malloc
of 2^60 bytes return NULL (no allocation), and a realloc that fails leaves
its block as it was; then one block of 4096 bytes is kept."""
import ctypes

api = ctypes.pythonapi
for name in ("PyMem_RawMalloc", "PyMem_Malloc", "PyObject_Malloc"):
    getattr(api, name).restype = ctypes.c_void_p
    getattr(api, name).argtypes = [ctypes.c_size_t]
api.PyMem_Realloc.restype = ctypes.c_void_p
api.PyMem_Realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
KEEP = []


def fail():
    got = [getattr(api, name)(1 << 60) for name in ("PyMem_RawMalloc", "PyMem_Malloc", "PyObject_Malloc")]
    assert got == [None, None, None], got


def keep():
    block = api.PyMem_Malloc(4096)
    assert api.PyMem_Realloc(block, 1 << 60) is None  # fails: block unchanged
    KEEP.append(block)


fail()
keep()
print("ok")
