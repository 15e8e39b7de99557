"""Turns source text into tokens, lazily (a generator)."""

import re

KEYWORDS = frozenset({"def", "if", "then", "else", "let", "in"})

_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op><=|>=|==|!=|\*\*|[-+*/%^(),<>=])
""", re.VERBOSE)


class TokenError(ValueError):
    """A character that starts no token."""

    def __init__(self, text, pos):
        super().__init__(f"unexpected {text[pos]!r} at column {pos + 1}")
        self.pos = pos


class Token:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind, text, pos):
        self.kind = kind
        self.text = text
        self.pos = pos

    def __repr__(self):
        return f"Token({self.kind}, {self.text!r}, {self.pos})"


def tokenize(text):
    """Yields Token objects, ending with one of kind 'end'."""
    pos = 0
    end = len(text)
    while pos < end:
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise TokenError(text, pos)
        kind = m.lastgroup
        if kind != "ws":
            value = m.group()
            if kind == "op" or (kind == "name" and value in KEYWORDS):
                kind = value
            yield Token(kind, value, pos)
        pos = m.end()
    yield Token("end", "", end)
