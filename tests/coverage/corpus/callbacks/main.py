import sys
sys.path.insert(0, sys.argv[1])
import helper


def square(x):
    return x * x


def numbers(n):
    for i in range(n):
        if i % 2:
            yield i
        else:
            yield -i


def fail():
    raise ValueError("no")


def count(n):
    if n <= 0:
        return 0
    return 1 + helper.down(count, n)


def work(i):
    total = 0
    for j in range(50):
        total += square(j) if j % 3 else j
    return total


def profiled():
    return sum(square(i) for i in range(10))


def main():
    out = [helper.apply(square, 7), helper.relay(numbers(6)),
           sum(helper.produce(square, 5)), helper.catch(fail)]
    try:
        helper.passthrough(fail)
    except ValueError:
        out.append("caught")
    out.append(count(20))
    out.append(helper.with_profile(profiled))
    helper.in_threads(work, 4)
    for x in helper.produce(square, 4):
        if x > 1:
            out.append(x)
    print(out)


main()
