"""Plain functions, classes and statements; some never run."""
import json
import sys

GLOBAL = [1, 2, 3]


def add(a, b):
    return a + b


def never_called(x):
    y = x * 2
    if y > 3:
        return y
    return -y


def dead_code():
    return 1
    unreachable = 2  # removed by the compiler
    return unreachable


def classify(n):
    if n < 0:
        return "negative"
    elif n == 0:
        return "zero"
    else:
        return "positive"


def multi_line_call(a,
                    b,
                    c=3):
    total = add(a,
                b) + \
        c
    data = {
        "a": a,
        "b": b,
    }
    return total, data


class Shape:
    sides = 0

    def __init__(self, name):
        self.name = name

    def describe(self):
        return "%s with %d sides" % (self.name, self.sides)

    def unused_method(self):
        return None

    @property
    def label(self):
        return self.name.upper()

    @staticmethod
    def static_helper():
        return 42

    @classmethod
    def make(cls, name):
        return cls(name)


class Square(Shape):
    sides = 4


def decorator(fn):
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@decorator
def decorated(x):
    return x + 1


def early_exit(values):
    for v in values:
        if v is None:
            return "none found"
    return "all present"


def main():
    print(add(1, 2), dead_code())
    print([classify(n) for n in (-1, 0, 5)])
    print(multi_line_call(1, 2))
    sq = Square.make("square")
    print(sq.describe(), sq.label, Shape.static_helper())
    print(decorated(1))
    print(early_exit([1, None]), early_exit([1, 2]))
    f = lambda z: z * 3
    print(f(2))
    assert add(2, 2) == 4, "arithmetic"
    print(json.dumps({"ok": True}))
    if len(sys.argv) > 5:
        print("many arguments")


if __name__ == "__main__":
    main()
