"""Methods, properties, class and static methods, lambdas, closures,
decorators and comprehensions."""


class Base:
    def __init__(self, v):
        self._v = v

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        self._v = value

    def twice(self):
        return self.v * 2

    @classmethod
    def make(cls, v):
        return cls(v)

    @staticmethod
    def helper(x):
        return x + 1

    def __len__(self):
        return self._v

    def __eq__(self, other):
        return self._v == other._v

    __hash__ = None


class Child(Base):
    def __init__(self, v):
        super().__init__(v)

    def twice(self):
        return super().twice() + 1


def decorate(fn):
    def wrapper(*a):
        return fn(*a)
    return wrapper


@decorate
def decorated(x):
    return x


def closure(n):
    def inner(i):
        return i + n
    return [inner(i) for i in range(n)]


def comprehensions(n):
    a = [i for i in range(n)]
    b = {i: i for i in range(n)}
    c = {i for i in range(n)}
    return a, b, c


def main():
    objs = [Child(i) for i in range(5)] + [Base.make(7)]
    for o in objs:
        o.v = o.v + 1
        o.twice()
        Base.helper(o.v)
        len(o)
    objs[0] == objs[1]
    sorted(objs, key=lambda o: -o.v)
    list(map(lambda x: x * 2, range(6)))
    decorated(3)
    closure(4)
    comprehensions(5)


main()
