"""A program for the line-level tests (tests/py/test_lines_*.py): loops,
`while` one-liners, comprehensions, generators and `yield from`,
try/except/finally, with, a return inside a loop, statements over several
lines, a method, a nested function and a lambda.  lines_truth.py runs
main() under line_profiler for the hits to compare with; run as a script
it calls main() itself."""


def loops(n):
    s = 0
    for i in range(n):
        s += i
    j = 0
    while j < n: j += 1
    k = 0
    while k < 3:
        k += 1
    return s


def comp(n):
    a = [i * 2 for i in range(n)]
    b = {i: i for i in range(n)}
    c = sum(x for x in range(n))
    return (a,
            b,
            c)


def gen(n):
    for i in range(n):
        yield i
    yield from range(2)


def usegen(n):
    t = 0
    for v in gen(n):
        t += v
    return t


def tryf(n):
    out = 0
    for i in range(n):
        try:
            if i % 2:
                raise ValueError(i)
            out += 1
        except ValueError:
            out -= 1
        finally:
            out += 10
    return out


class CM:
    def __enter__(self): return self
    def __exit__(self, *a): return False


def withf(n):
    with CM() as c:
        x = n
    for i in range(n):
        if i == 3:
            return i
    return -1


def multiline(n):
    x = (n +
         1 +
         2)
    y = max(
        x,
        n)
    return x + y


class Shape:
    def area(self, w, h):
        total = 0
        for _ in range(h):
            total += w
        return total


def outer(n):
    def inner(k):
        return k * 2
    twice = lambda k: inner(k) + 1
    return [twice(i) for i in range(n)]


def unrelated(n):
    return sum(range(n))


def counted(n):
    total = 0
    for i in range(n):
        total += i
    return total


# functions whose hits lines_truth.py takes from line_profiler
MEASURED = [loops, comp, gen, usegen, tryf, withf, multiline, Shape.area, outer, counted]


def main():
    loops(5); comp(4); usegen(3); tryf(4); withf(6); multiline(2)
    Shape().area(3, 4); outer(3); unrelated(10); counted(7)


if __name__ == "__main__":
    main()
