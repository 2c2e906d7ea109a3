"""Call-heavy: naive fib(20), ten times (10 * 21891 Python calls)."""


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    total = 0
    for _ in range(10):
        total += fib(20)
    print("fib", total)


if __name__ == "__main__":
    main()
