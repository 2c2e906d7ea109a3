"""MPI test program with known answers (tests/py/test_mpi.py), mpi4py's
twin of pingpong.c: ranks 0 and 1 exchange ROUNDS buffers each way (rank 0
sends 1024 bytes with tag 7, rank 1 answers with 512 bytes and tag 8),
then one pickled object each way (tag 9, MPI_Mprobe + MPI_Mrecv), and every
rank joins a barrier and an allreduce.

Each rank naps NAP seconds before each of its sends, so the other's receive
waits about that long: `ping` and `pong` each wait in MPI_Recv for about
ROUNDS * NAP (less where a receive begins after the partner's nap did, as
the first round's can), a known answer that outweighs the run's other waits
but MPI_Init's on a loaded machine as on a quiet one."""
import time

from mpi4py import MPI

ROUNDS = 10
NAP = 0.02


def ping(comm, buf):
    time.sleep(NAP)
    comm.Send([buf, MPI.BYTE], dest=1, tag=7)
    comm.Recv([buf, 512, MPI.BYTE], source=1, tag=8)


def pong(comm, buf):
    comm.Recv([buf, MPI.BYTE], source=0, tag=7)
    time.sleep(NAP)
    comm.Send([buf, 512, MPI.BYTE], dest=0, tag=8)


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    buf = bytearray(1024)
    for _ in range(ROUNDS):
        if rank == 0:
            ping(comm, buf)
        elif rank == 1:
            pong(comm, buf)
    if rank == 0:
        comm.send({"hello": 1}, dest=1, tag=9)
    elif rank == 1:
        comm.recv(source=0, tag=9)
    comm.Barrier()
    total = comm.allreduce(1)
    if rank == 0:
        print("ranks", total)


main()
