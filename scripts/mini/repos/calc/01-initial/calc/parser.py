"""Recursive-descent parser producing a small AST of tuples.

Grammar:
    expr   := term (('+' | '-') expr)?
    term   := factor (('*' | '/') term)?
    factor := NUMBER | '-' factor | '(' expr ')'
"""


class ParseError(ValueError):
    pass


class Parser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self):
        tok = self.peek()
        self.pos += 1
        return tok

    def parse(self):
        node = self.expr()
        if self.peek() is not None:
            raise ParseError(f"unexpected token {self.peek()!r}")
        return node

    def expr(self):
        left = self.term()
        if self.peek() in ("+", "-"):
            op = self.take()
            return (op, left, self.expr())
        return left

    def term(self):
        left = self.factor()
        if self.peek() in ("*", "/"):
            op = self.take()
            return (op, left, self.term())
        return left

    def factor(self):
        tok = self.take()
        if tok is None:
            raise ParseError("unexpected end of input")
        if tok == "-":
            return ("neg", self.factor())
        if tok == "(":
            node = self.expr()
            if self.take() != ")":
                raise ParseError("missing ')'")
            return node
        if isinstance(tok, (int, float)):
            return tok
        raise ParseError(f"unexpected token {tok!r}")


def parse(tokens):
    return Parser(tokens).parse()
