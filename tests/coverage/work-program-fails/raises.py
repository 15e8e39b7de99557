def f():
    raise ValueError(1)

x = 1
f()
y = 2
