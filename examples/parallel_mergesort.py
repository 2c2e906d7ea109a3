"""Seed 000's experiment: a merge sort split over 2 workers, as threads or as
processes.  Run it under ulma to see whether the workers really ran in
parallel (the report's `parallelism`), without kernel tracing or root:

    ulma run examples/parallel_mergesort.py threads     # the GIL: ~1 thread on a CPU
    ulma run examples/parallel_mergesort.py processes   # ~2 on this 2-core machine

Each worker builds its half (seeded, so nothing big is pickled) and sorts
it eight times, so the parallel part dominates; the parent merges the two
sorted halves and checks the result.
"""
import random
import sys
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

SIZE = 200_000
ROUNDS = 8


def merge(left, right):
    out = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


def mergesort(xs):
    if len(xs) <= 1:
        return xs
    mid = len(xs) // 2
    return merge(mergesort(xs[:mid]), mergesort(xs[mid:]))


def sort_half(seed):
    rng = random.Random(seed)
    half = [rng.randrange(1_000_000) for _ in range(SIZE // 2)]
    for _ in range(ROUNDS - 1):
        mergesort(half)
    return mergesort(half)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "threads"
    pool = {"threads": ThreadPoolExecutor, "processes": ProcessPoolExecutor}[mode]
    with pool(max_workers=2) as ex:
        left, right = ex.map(sort_half, [1, 2])
    result = merge(left, right)
    assert all(result[k] <= result[k + 1] for k in range(len(result) - 1))
    print(mode, len(result), result[0], result[-1])


if __name__ == "__main__":
    main()
