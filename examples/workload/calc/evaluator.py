"""Evaluates parsed nodes: a tree-walking interpreter with user functions."""

import math

from .parser import Binary, Call, FuncDef, If, Let, Num, Unary, Var, parse


class EvalError(ArithmeticError):
    pass


BUILTINS = {
    "sqrt": math.sqrt,
    "floor": math.floor,
    "gcd": math.gcd,
    "abs": abs,
    "min": min,
    "max": max,
}

_BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "%": lambda a, b: a % b,
    "**": pow,
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
}


class Function:
    __slots__ = ("name", "params", "body")

    def __init__(self, name, params, body):
        self.name = name
        self.params = params
        self.body = body


class Evaluator:
    """Runs programs; functions defined with `def` stay for later lines."""

    max_depth = 200

    def __init__(self):
        self.functions = {}
        self.depth = 0

    def run(self, text):
        node = parse(text)
        if isinstance(node, FuncDef):
            self.functions[node.name] = Function(node.name, node.params, node.body)
            return None
        return self.eval(node, {})

    def eval(self, node, env):
        method = getattr(self, "eval_" + type(node).__name__)
        return method(node, env)

    def eval_Num(self, node, env):
        return node.value

    def eval_Var(self, node, env):
        try:
            return env[node.name]
        except KeyError:
            raise EvalError(f"unknown name {node.name!r}") from None

    def eval_Unary(self, node, env):
        return -self.eval(node.operand, env)

    def eval_Binary(self, node, env):
        left = self.eval(node.left, env)
        right = self.eval(node.right, env)
        try:
            return _BINARY[node.op](left, right)
        except ZeroDivisionError as exc:
            raise EvalError(f"{node.op} by zero") from exc

    def eval_If(self, node, env):
        if self.eval(node.cond, env):
            return self.eval(node.then, env)
        return self.eval(node.other, env)

    def eval_Let(self, node, env):
        inner = dict(env)
        inner[node.name] = self.eval(node.value, env)
        return self.eval(node.body, inner)

    def eval_Call(self, node, env):
        args = [self.eval(a, env) for a in node.args]
        fn = self.functions.get(node.name)
        if fn is None:
            builtin = BUILTINS.get(node.name)
            if builtin is None:
                raise EvalError(f"unknown function {node.name!r}")
            try:
                return builtin(*args)
            except (TypeError, ValueError) as exc:
                raise EvalError(f"{node.name}: {exc}") from exc
        if len(args) != len(fn.params):
            raise EvalError(f"{fn.name} takes {len(fn.params)} arguments, got {len(args)}")
        if self.depth >= self.max_depth:
            raise EvalError(f"{fn.name}: recursion deeper than {self.max_depth}")
        self.depth += 1
        try:
            return self.eval(fn.body, dict(zip(fn.params, args)))
        finally:
            self.depth -= 1
