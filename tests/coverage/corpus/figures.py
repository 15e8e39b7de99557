import sys


def classify(n):
    if n < 0:
        return "negative"
    if n == 0:
        return "zero"
    return "positive"


def odd_sum(items):
    total = 0
    for x in items:
        if x % 2:
            total += x
    return total


def never(a):
    if a:
        return 1
    return 2


def countdown(n):
    while n > 0:
        n -= 1
    return n


print(classify(5), classify(-1))
print(odd_sum([1, 3, 5]))
print(countdown(3))
if len(sys.argv) > 5:
    print("many")
