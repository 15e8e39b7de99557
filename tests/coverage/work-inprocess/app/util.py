def parse(text):
    parts = text.split(",")
    return [p.strip() for p in parts if p.strip()]


def mode_a(items):
    out = []
    for item in items:
        out.append(item.upper())
    return out


def mode_b(items):
    if not items:
        return None
    return items[::-1]


def never_used():
    return "never"
