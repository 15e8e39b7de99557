import sys

N = int(sys.argv[1])


class Widget:
    pass


keep = [Widget() for _ in range(N)]
print(len(keep))
