"""Known allocations for tests/py/test_memory.py: make_bytes keeps N bytes
objects of LENGTH bytes each (no free list, one block each, the allocator's
size is sys.getsizeof's); make_lists keeps N lists of LENGTH items (an
array of 8 * LENGTH bytes each, and a list object unless the list free list
gave one); hold keeps K plain objects; churn allocates and
frees; peak_phase holds PEAK_MB blocks of 1 MiB at once, then frees them.
Argument: N LENGTH K PEAK_MB.  Prints the sizes the test expects."""
import sys

N, LENGTH, K, PEAK_MB = (int(a) for a in sys.argv[1:5])
KEEP = []
HELD = []


def make_bytes(n, length):
    for _ in range(n):
        KEEP.append(bytes(length))


def make_lists(n, length):
    for _ in range(n):
        KEEP.append([None] * length)


def hold(k):
    for _ in range(k):
        HELD.append(object())


def churn(n):
    for i in range(n):
        x = bytes(200 + i % 7)
        del x


def peak_phase(mb):
    chunks = []
    for _ in range(mb):
        chunks.append(bytes(1 << 20))
    return len(chunks)


def main():
    make_bytes(N, LENGTH)
    make_lists(N, LENGTH)
    hold(K)
    churn(1000)
    peak_phase(PEAK_MB)
    churn(1000)


main()
print(sys.getsizeof(bytes(LENGTH)), sys.getsizeof(object()), sys.getsizeof(bytes(1 << 20)), sys.getsizeof([]))
