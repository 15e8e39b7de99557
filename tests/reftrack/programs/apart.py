"""Python calls and C method calls: under the legacy hooks each call gets a
frame object and each method call a bound method, only because of tracing."""
import sys

M = int(sys.argv[1])


def f(x):
    return x


lst = []
for i in range(M):
    f(i)
    lst.append(i)
print(len(lst))
