"""Direct, mutual and indirect recursion."""


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def even(n):
    return True if n == 0 else odd(n - 1)


def odd(n):
    return False if n == 0 else even(n - 1)


def indirect(n):
    helper(n)


def helper(n):
    if n:
        indirect(n - 1)


def tree(depth):
    if depth == 0:
        return 1
    return sum(tree(depth - 1) for _ in range(2))


def main():
    for _ in range(3):
        fact(30)
    fib(16)
    even(101)
    odd(50)
    indirect(20)
    tree(5)


main()
