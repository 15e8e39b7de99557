import sys
sys.path.insert(0, sys.argv[1])
import helper


def never(a):
    b = a + 1
    c = b + 1
    return c


def displaced(hub):
    sys.settrace(None)
    helper.noop()
    x = 1
    y = x + 1
    return y


hub = sys.gettrace()
for i in range(20):
    displaced(hub)
    helper.restore(hub)
print("done")
