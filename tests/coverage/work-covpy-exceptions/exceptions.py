"""Exceptions through frames, handlers, finally, with."""


class Resource:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return exc_type is KeyError


def fails(n):
    if n > 1:
        raise ValueError("too big: %d" % n)
    return n


def catcher(n):
    try:
        value = fails(n)
    except ValueError as e:
        value = str(e)
    except TypeError:
        value = "type"
    else:
        value = "ok %s" % value
    finally:
        value += "!"
    return value


def finally_return():
    try:
        return "body"
    finally:
        print("cleanup")


def suppressed():
    with Resource():
        raise KeyError("gone")
    return "suppressed"


def reraise():
    try:
        fails(5)
    except ValueError:
        raise


def nested(depth):
    if depth == 0:
        raise RuntimeError("bottom")
    return nested(depth - 1)


def main():
    print(catcher(1), catcher(2))
    print(finally_return())
    print(suppressed())
    try:
        reraise()
    except ValueError as e:
        print("reraised", e)
    try:
        nested(3)
    except RuntimeError as e:
        print(e)


main()
