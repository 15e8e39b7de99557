import sys
sys.path.insert(0, sys.argv[1])
import helper


def inner():
    try:
        yield
    except KeyboardInterrupt:
        return "PASSED"
    else:
        return "FAILED"


def outer():
    return (yield from inner())


def tick():
    return 1


def main():
    results = []
    for i in range(3):
        gen = outer()
        gen.send(None)
        results.append(helper.interrupt(gen, tick))
    print(results)


main()
