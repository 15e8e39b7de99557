"""An exception nobody catches: it leaves every frame and ends the program
(exit status 1, a traceback on stderr)."""


def un_inner(n):
    if n == 0:
        raise ZeroDivisionError("never caught")
    return un_inner(n - 1) + 1


def un_outer():
    try:
        return un_inner(3)
    finally:
        un_note()


def un_note():
    return None


un_outer()
