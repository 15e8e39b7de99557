"""Exceptions caught in the frame, caught frames above, re-raised,
chained, in finally and with blocks, in a loop."""


class ExGuard:
    def __init__(self, swallow):
        self.swallow = swallow

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return self.swallow


def ex_raise(n):
    if n == 0:
        raise ValueError("bottom")
    return ex_raise(n - 1)


def ex_catch_here():
    try:
        raise KeyError("here")
    except KeyError:
        return 1


def ex_catch_above():
    try:
        ex_raise(3)
    except ValueError as e:
        return len(str(e))


def ex_reraise():
    try:
        ex_raise(1)
    except ValueError:
        raise


def ex_chain():
    try:
        ex_raise(0)
    except ValueError as e:
        raise RuntimeError("chained") from e


def ex_finally():
    out = []
    try:
        try:
            ex_raise(2)
        finally:
            out.append("finally")
    except ValueError:
        out.append("caught")
    return out


def ex_with():
    with ExGuard(True):
        ex_raise(1)
    try:
        with ExGuard(False):
            ex_raise(0)
    except ValueError:
        pass
    with ExGuard(False) as g:
        return g.swallow


def ex_loop():
    n = 0
    for i in range(4):
        try:
            if i % 2:
                raise IndexError(i)
            n += 1
        except IndexError:
            n += 10
        else:
            n += 100
    return n


def ex_main():
    total = ex_catch_here() + ex_catch_above()
    for f in (ex_reraise, ex_chain):
        try:
            f()
        except (ValueError, RuntimeError):
            total += 1
    total += len(ex_finally())
    ex_with()
    total += ex_loop()
    return total


ex_main()
