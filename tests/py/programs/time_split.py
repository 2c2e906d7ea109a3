"""Known answers for the time split: sleeper() sleeps 400 ms (blocked),
burner() spins until it has used 300 ms of thread CPU time (on a CPU), and
four threads each run spin() with the GIL (mostly waiting)."""
import threading
import time


def sleeper():
    time.sleep(0.4)


def burner():
    start = time.thread_time()
    while time.thread_time() - start < 0.3:
        pass


def spin(n):
    total = 0
    for i in range(n):
        total += i
    return total


def main():
    sleeper()
    burner()
    threads = [threading.Thread(target=spin, args=(2_000_000,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("done")


if __name__ == "__main__":
    main()
