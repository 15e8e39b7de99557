"""Classes, properties, class and static methods, dunder methods,
comprehensions of every kind, lambdas, closures, decorators."""
import functools


def ob_trace(fn):
    @functools.wraps(fn)
    def ob_wrapper(*a, **k):
        return fn(*a, **k)
    return ob_wrapper


class ObVec:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    @property
    def ob_norm1(self):
        return abs(self.x) + abs(self.y)

    @ob_norm1.setter
    def ob_norm1(self, v):
        self.x = v

    def __add__(self, other):
        return ObVec(self.x + other.x, self.y + other.y)

    def __eq__(self, other):
        return (self.x, self.y) == (other.x, other.y)

    __hash__ = None

    @classmethod
    def ob_zero(cls):
        return cls(0, 0)

    @staticmethod
    def ob_unit():
        return ObVec(1, 1)

    @ob_trace
    def ob_scaled(self, k):
        return ObVec(self.x * k, self.y * k)


class ObVec3(ObVec):
    def __init__(self, x, y, z):
        super().__init__(x, y)
        self.z = z


def ob_closure(k):
    def ob_inner(v):
        return v + k
    return ob_inner


def ob_main():
    v = ObVec.ob_zero()
    for i in range(4):
        v = v + ObVec.ob_unit().ob_scaled(i)
    total = v.ob_norm1
    v.ob_norm1 = 3
    total += v.ob_norm1 + (v == ObVec(3, 6))
    total += ObVec3(1, 2, 3).z
    sq = [i * i for i in range(6) if i % 2]
    st = {i % 3 for i in range(9)}
    dc = {i: str(i) for i in range(4)}
    nested = [[j for j in range(i)] for i in range(3)]
    total += sum(sq) + len(st) + len(dc) + len(nested)
    total += sum(map(lambda x: x + 1, range(5)))
    key = lambda s: -len(s)
    total += len(sorted(["a", "bbb", "cc"], key=key))
    add2 = ob_closure(2)
    total += add2(3)
    total += functools.reduce(lambda a, b: a * b, range(1, 6))
    return total


ob_main()
