"""C calls: builtins, bound built-in methods, method descriptors called
bound and unbound (list.append, str.join), C calls that raise, C code that
calls back into Python."""


class BiKey:
    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return self.v < other.v


def bi_raising():
    n = 0
    try:
        [].pop()
    except IndexError:
        n += 1
    try:
        "abc".index("z")
    except ValueError:
        n += 1
    try:
        next(iter(()))
    except StopIteration:
        n += 1
    try:
        getattr(BiKey(1), "missing")
    except AttributeError:
        n += 1
    try:
        divmod(1, 0)
    except ZeroDivisionError:
        n += 1
    return n


def bi_main():
    words = []
    for i in range(6):
        words.append(str(i))
    list.append(words, "x")
    s = ",".join(words)
    s2 = str.join("-", words)
    total = len(s) + len(s2)
    d = {}
    for w in words:
        d.setdefault(w, len(w))
        d.get(w)
    total += max(d.values()) + min(len(w) for w in words)
    total += len(sorted([BiKey(3), BiKey(1), BiKey(2)]))
    total += sum(map(len, words)) + abs(-3) + round(2.5)
    total += isinstance(s, str) + hasattr(d, "keys")
    total += bi_raising()
    b = bytearray(b"ab")
    b.extend(b"cd")
    total += len(b.upper())
    return total


bi_main()
