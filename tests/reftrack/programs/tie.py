"""Two leak groups that tie on count, type, file and line and differ only
in the function: make and the lambda written on make's line."""
class Widget:
    pass


keep = []


def make():
    keep.append(Widget()); keep.append((lambda: Widget())())  # TIE-LINE


make()
print("kept", len(keep))
