"""A small calculator language: tokenizer, parser and evaluator.

    def fib(n) = if n < 2 then n else fib(n - 1) + fib(n - 2)
    fib(15) * sqrt(16)

The workload that pytracekit's examples and docs trace: it has classes,
generators, exceptions, recursion, threads and calls into C builtins, and it
prints the same thing on every run.
"""

from .tokens import Token, TokenError, tokenize
from .parser import ParseError, parse
from .evaluator import EvalError, Evaluator

__all__ = ["Token", "TokenError", "tokenize", "ParseError", "parse",
           "EvalError", "Evaluator"]
