"""Build examples/cython/ulma_demo.pyx as extension modules, each from its
own copy of the source:

    python setup.py build_ext --inplace            # five modules:
      ulma_demo_plain        untraced native code: ulma sees the calls into it only
      ulma_demo_native       -finstrument-functions, linked with libulma_rt: every
                             C function's calls are recorded (docs/native.md, "Cython")
      ulma_demo_profiled     the same, and Cython's profile=True directive
      ulma_demo_profiled_plain  profile=True alone, without -finstrument-functions
      ulma_demo_unlinked     -finstrument-functions without ulma's link arguments:
                             its calls bind to glibc's empty hooks until tracing
                             starts and ulma rebinds them

ULMA_DEMO_VARIANTS=native,profiled picks some.  Needs Cython, setuptools, a C
compiler and ulma installed in this interpreter.
"""
import os
import shutil

from Cython.Build import cythonize
from setuptools import Extension, setup

import ulma

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (extra compile args, extra link args, Cython directives)
INSTRUMENTED = ["-finstrument-functions", "-g"]
VARIANTS = {
    "plain": (["-g"], [], {}),
    "native": (INSTRUMENTED, ulma.get_link_args(), {}),
    "profiled": (INSTRUMENTED + ["-DCYTHON_TRACE=1"], ulma.get_link_args(), {"profile": True}),
    "unlinked": (INSTRUMENTED, [], {}),
    "profiled_plain": (["-g", "-DCYTHON_TRACE=1"], [], {"profile": True}),
}


def extension(variant):
    cflags, ldflags, directives = VARIANTS[variant]
    name = "ulma_demo_" + variant
    src = os.path.join(HERE, name + ".pyx")
    shutil.copyfile(os.path.join(HERE, "ulma_demo.pyx"), src)
    ext = Extension(name, [src], extra_compile_args=cflags, extra_link_args=ldflags)
    return cythonize([ext], compiler_directives=directives, quiet=True)[0]


wanted = os.environ.get("ULMA_DEMO_VARIANTS", ",".join(VARIANTS)).split(",")
setup(name="ulma-demo", ext_modules=[extension(v) for v in wanted])
