def w_helper(x):
    return x + 1


def w_gen(n):
    for i in range(n):
        yield w_helper(i)


class Acc:
    def __init__(self):
        self.total = 0

    def add(self, v):
        self.total += v
        return self.total
