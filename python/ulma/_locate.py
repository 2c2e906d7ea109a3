"""Find the `ulma` program that belongs to this installation."""
import os
import shutil
import sysconfig


def ulma_binary():
    """Path of the ulma program: the copy inside this package, then the one
    pip put in this interpreter's scripts folder, then PATH."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "ulma")
    candidates = [here, os.path.join(sysconfig.get_path("scripts"), "ulma")]
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("ulma")
