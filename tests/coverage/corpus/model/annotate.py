"""Shapes whose figures on 3.14+ follow coverage.py's sysmon core: a bare
annotation (only in __annotate__), one-line class and def bodies, and a
comprehension's loop ending inside a multi-line call that raises."""
from dataclasses import dataclass, fields


@dataclass
class Point:
    x: int
    y: int = 0


class Base: pass
class Child(Base): pass


def one(): return 1


class Reject(dict):
    def update(self, *a, **k):
        raise TypeError("no")


def fails():
    r = Reject()
    try:
        r.update({
            k: v
            for k, v in {"a": 1, "": 2}.items()
            if k
        },
            **{"b": 2},
        )
        after = 1
    except TypeError:
        after = 2
    return after


print(len(fields(Point(1))), one(), fails(), Child.__name__)
