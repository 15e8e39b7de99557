def imported_but_not_called():
    value = 1
    return value


CONSTANT = 3
