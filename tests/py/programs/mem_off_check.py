"""Which library holds the function each allocator domain's malloc points
at right now, by dladdr: prints one line per domain (RAW, MEM, OBJ), the
file name, and then the count of calls of work()."""
import ctypes
import ctypes.util
import os


class PyMemAllocatorEx(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("malloc", ctypes.c_void_p), ("calloc", ctypes.c_void_p),
                ("realloc", ctypes.c_void_p), ("free", ctypes.c_void_p)]


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def owners():
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
    get = ctypes.pythonapi.PyMem_GetAllocator
    get.argtypes = [ctypes.c_int, ctypes.POINTER(PyMemAllocatorEx)]
    get.restype = None
    found = []
    for domain in range(3):
        a = PyMemAllocatorEx()
        get(domain, ctypes.byref(a))
        info = DlInfo()
        libc.dladdr(a.malloc, ctypes.byref(info))
        found.append(os.path.basename((info.dli_fname or b"?").decode()))
    return found


def work(n):
    return [i * 2 for i in range(n)] if n else []


if __name__ == "__main__":
    for name in owners():
        print(name)
    for i in range(50):
        work(i)
