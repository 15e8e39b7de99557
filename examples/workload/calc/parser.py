"""A recursive-descent parser from tokens to a small tree of nodes.

Grammar (lowest precedence first):
    program  := 'def' NAME '(' params ')' '=' expr | expr
    expr     := 'if' expr 'then' expr 'else' expr
              | 'let' NAME '=' expr 'in' expr
              | compare
    compare  := sum (('<'|'<='|'>'|'>='|'=='|'!=') sum)?
    sum      := term (('+'|'-') term)*
    term     := unary (('*'|'/'|'%') unary)*
    unary    := '-' unary | power
    power    := atom (('**'|'^') unary)?
    atom     := NUM | NAME | NAME '(' args ')' | '(' expr ')'
"""

from .tokens import tokenize


class ParseError(SyntaxError):
    pass


class Node:
    __slots__ = ()
    fields = ()

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, f) == getattr(other, f) for f in self.fields)

    def __repr__(self):
        args = ", ".join(repr(getattr(self, f)) for f in self.fields)
        return f"{type(self).__name__}({args})"


class Num(Node):
    __slots__ = fields = ("value",)

    def __init__(self, value):
        self.value = value


class Var(Node):
    __slots__ = fields = ("name",)

    def __init__(self, name):
        self.name = name


class Unary(Node):
    __slots__ = fields = ("op", "operand")

    def __init__(self, op, operand):
        self.op = op
        self.operand = operand


class Binary(Node):
    __slots__ = fields = ("op", "left", "right")

    def __init__(self, op, left, right):
        self.op = op
        self.left = left
        self.right = right


class If(Node):
    __slots__ = fields = ("cond", "then", "other")

    def __init__(self, cond, then, other):
        self.cond = cond
        self.then = then
        self.other = other


class Let(Node):
    __slots__ = fields = ("name", "value", "body")

    def __init__(self, name, value, body):
        self.name = name
        self.value = value
        self.body = body


class Call(Node):
    __slots__ = fields = ("name", "args")

    def __init__(self, name, args):
        self.name = name
        self.args = tuple(args)


class FuncDef(Node):
    __slots__ = fields = ("name", "params", "body")

    def __init__(self, name, params, body):
        self.name = name
        self.params = tuple(params)
        self.body = body


_COMPARE = frozenset({"<", "<=", ">", ">=", "==", "!="})


class Parser:
    def __init__(self, text):
        self.tokens = tokenize(text)
        self.tok = next(self.tokens)

    def advance(self):
        tok = self.tok
        if tok.kind != "end":
            self.tok = next(self.tokens)
        return tok

    def expect(self, kind):
        if self.tok.kind != kind:
            raise ParseError(f"expected {kind!r}, found {self.tok.text or 'end'!r}"
                             f" at column {self.tok.pos + 1}")
        return self.advance()

    def program(self):
        if self.tok.kind == "def":
            self.advance()
            name = self.expect("name").text
            self.expect("(")
            params = []
            if self.tok.kind != ")":
                params.append(self.expect("name").text)
                while self.tok.kind == ",":
                    self.advance()
                    params.append(self.expect("name").text)
            self.expect(")")
            self.expect("=")
            node = FuncDef(name, params, self.expr())
        else:
            node = self.expr()
        self.expect("end")
        return node

    def expr(self):
        if self.tok.kind == "if":
            self.advance()
            cond = self.expr()
            self.expect("then")
            then = self.expr()
            self.expect("else")
            return If(cond, then, self.expr())
        if self.tok.kind == "let":
            self.advance()
            name = self.expect("name").text
            self.expect("=")
            value = self.expr()
            self.expect("in")
            return Let(name, value, self.expr())
        return self.compare()

    def compare(self):
        left = self.sum()
        if self.tok.kind in _COMPARE:
            op = self.advance().kind
            left = Binary(op, left, self.sum())
        return left

    def sum(self):
        left = self.term()
        while self.tok.kind in ("+", "-"):
            op = self.advance().kind
            left = Binary(op, left, self.term())
        return left

    def term(self):
        left = self.unary()
        while self.tok.kind in ("*", "/", "%"):
            op = self.advance().kind
            left = Binary(op, left, self.unary())
        return left

    def unary(self):
        if self.tok.kind == "-":
            self.advance()
            return Unary("-", self.unary())
        return self.power()

    def power(self):
        base = self.atom()
        if self.tok.kind in ("**", "^"):
            self.advance()
            return Binary("**", base, self.unary())
        return base

    def atom(self):
        tok = self.tok
        if tok.kind == "num":
            self.advance()
            text = tok.text
            return Num(float(text) if any(c in text for c in ".eE") else int(text))
        if tok.kind == "name":
            self.advance()
            if self.tok.kind != "(":
                return Var(tok.text)
            self.advance()
            args = []
            if self.tok.kind != ")":
                args.append(self.expr())
                while self.tok.kind == ",":
                    self.advance()
                    args.append(self.expr())
            self.expect(")")
            return Call(tok.text, args)
        if tok.kind == "(":
            self.advance()
            node = self.expr()
            self.expect(")")
            return node
        raise ParseError(f"unexpected {tok.text or 'end'!r} at column {tok.pos + 1}")


def parse(text):
    """Parses one line of the language into a node."""
    return Parser(text).program()
