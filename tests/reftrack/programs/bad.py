"""Raises and catches exceptions, some of them in C code that makes objects
while the exception is pending (int() of a bad literal), and makes Widgets;
prints what it saw."""


class Widget:
    pass


def fail(i):
    raise ValueError("bad %d" % i)


keep = []
caught = parsed = 0
for i in range(300):
    keep.append(Widget())
    try:
        fail(i)
    except ValueError as e:
        if str(e) == "bad %d" % i and e.__traceback__ is not None:
            caught += 1
    try:
        int("x%d" % i)
    except ValueError as e:
        if str(e) == "invalid literal for int() with base 10: 'x%d'" % i:
            parsed += 1
print("caught", caught, "parsed", parsed, "kept", len(keep))
