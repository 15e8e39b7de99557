"""Exceptions unwinding many frames, raised by Python and by C code."""


def deep(n):
    if n == 0:
        raise ValueError("bottom")
    return deep(n - 1)


def c_raise(s):
    return int(s)


def reraise(n):
    try:
        deep(n)
    except ValueError:
        raise KeyError("again")


def cleanup(n):
    try:
        return deep(n)
    finally:
        tidy()


def tidy():
    return 0


class Suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return True


def suppressed():
    with Suppress():
        deep(3)


def gen_fail():
    yield 1
    raise RuntimeError("in generator")


def main():
    for n in (0, 5, 40):
        try:
            deep(n)
        except ValueError:
            pass
    for s in ("1", "x", "2", "y"):
        try:
            c_raise(s)
        except ValueError:
            pass
    try:
        reraise(10)
    except KeyError:
        pass
    try:
        cleanup(7)
    except ValueError:
        pass
    suppressed()
    try:
        list(gen_fail())
    except RuntimeError:
        pass


main()
