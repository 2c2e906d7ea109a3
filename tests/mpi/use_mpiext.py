"""tests/py/test_mpi.py: a Python program whose MPI is a C extension's
(mpiext.c), not mpi4py's: 7 messages of 64 bytes with tag 11, 0 -> 1."""
import mpiext


def talk():
    mpiext.exchange(7)


rank = mpiext.start()
talk()
mpiext.stop()
if rank == 0:
    print("done")
