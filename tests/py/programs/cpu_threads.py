"""CPU-bound work in the main thread and three threads, all at once:
naive fib, a fixed amount of it per thread."""
import threading

REPS = 60


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(reps, out, i):
    total = 0
    for _ in range(reps):
        total += fib(17)
    out[i] = total


def main():
    out = [0] * 4
    threads = [threading.Thread(target=work, args=(REPS, out, i)) for i in range(3)]
    for t in threads:
        t.start()
    work(REPS, out, 3)
    for t in threads:
        t.join()
    print(sum(out))


if __name__ == "__main__":
    main()
