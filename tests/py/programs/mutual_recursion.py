"""Recursion of both kinds for the callgrind export: even/odd call each
other up to 29 deep (past the export's 8 levels), fib calls itself.
even is called 1550 times, odd 1450, fib 1973 (2*F(16)-1)."""


def even(n):
    return True if n == 0 else odd(n - 1)


def odd(n):
    return False if n == 0 else even(n - 1)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    for i in range(200):
        even(i % 30)
    fib(15)


if __name__ == "__main__":
    main()
