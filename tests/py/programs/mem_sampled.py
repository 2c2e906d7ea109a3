"""Known allocation volumes for --memory=sample (test_memory_sample.py):
make_bytes keeps N bytes objects of LENGTH bytes, churn makes and drops
C lists of 100 items, big makes B bytearrays of 100000 bytes."""
import sys

N, LENGTH, C, B = (int(a) for a in sys.argv[1:5])
KEEP = []


def make_bytes(n, length):
    for _ in range(n):
        KEEP.append(bytes(length))


def churn(n):
    for _ in range(n):
        x = [0] * 100
        del x


def big(n):
    return [bytearray(100000) for _ in range(n)]


def main():
    make_bytes(N, LENGTH)
    churn(C)
    big(B)


main()
