"""C callables reached in ways that name them differently unless named as
cProfile names them: a method first seen on a subclass's instance, a method
descriptor called with its self, class methods on a subclass, module
functions, builtins."""
import math
import time


class MyList(list):
    pass


class MyDict(dict):
    pass


class MyStr(str):
    pass


def work():
    m = MyList()
    m.append(0)              # list.append, first seen on a subclass
    plain = []
    for i in range(100):
        plain.append(i)      # the same method on a plain list
    list.append(plain, 1)    # the method descriptor with its self
    d = MyDict(a=1)
    for k in ("a", "b", "c"):
        d.get(k)
    {}.get("x")
    MyDict.fromkeys("xy")    # a class method on a subclass
    dict.fromkeys("z")
    MyStr(",").join(["a", "b"])
    for _ in range(7):
        math.sqrt(4.0)
    time.perf_counter()
    len(plain)
    sorted(plain, key=abs)
    return plain
