"""Split an expression into tokens with one regular expression."""

import re


class TokenError(ValueError):
    pass


OPERATORS = "+-*/()"

_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\.\d+|\d+)|([-+*/()]))")


def tokenize(text):
    """Return a list of tokens: numbers (int or float) and operator strings."""
    tokens = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise TokenError(f"unexpected character {text[pos:].lstrip()[:1]!r} at {pos}")
        number, op = m.groups()
        if number is not None:
            if m.end() < len(text) and text[m.end()] == ".":
                raise TokenError(f"bad number at {m.start(1)}")
            tokens.append(float(number) if "." in number else int(number))
        else:
            tokens.append(op)
        pos = m.end()
    return tokens
