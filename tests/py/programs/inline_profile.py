"""A program for tests/py/test_inline.py: before() runs untraced, then a
`with ulma.profile(TRACE):` block calls inside(), which forks a child that
runs forked() and leaves by os._exit, runs this file again as a Python
subprocess ("child": child_main()), and maps pool_work() over 6 items in a
multiprocessing pool of each start method; after() runs untraced again.
Prints what it did, whether ULMA_SESSION_PATH is left in the environment
after the block, and exits with code 3."""
import multiprocessing as mp
import os
import subprocess
import sys


def before():
    return sum(range(1000))


def after():
    return sum(range(1000))


def forked():
    return sum(range(100))


def pool_work(x):
    return x * 3


def child_main():
    print("child", sum(range(10)))


def inside():
    pid = os.fork()
    if pid == 0:
        forked()
        os._exit(0)
    os.waitpid(pid, 0)
    out = subprocess.run([sys.executable, __file__, "child"], capture_output=True, text=True).stdout
    print("subprocess said", out.strip())
    for method in ("fork", "spawn", "forkserver"):
        with mp.get_context(method).Pool(2) as pool:
            print(method, sum(pool.map(pool_work, range(6))))


def main():
    import ulma

    before()
    with ulma.profile(sys.argv[1], summary=sys.argv[2]):
        inside()
    after()
    print("session path left:", "ULMA_SESSION_PATH" in os.environ)
    sys.stdout.flush()
    sys.exit(3)


if __name__ == "__main__":
    if sys.argv[1:] == ["child"]:
        child_main()
        sys.exit(0)
    main()
