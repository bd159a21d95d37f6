"""Split an expression into tokens."""

import threading


class TokenError(ValueError):
    pass


OPERATORS = "+-*/()"

# Decimal literals parsed so far, by their text (the tokenizer may run in several threads).
_DECIMALS = {}
_DECIMALS_LOCK = threading.Lock()


def _decimal(literal):
    with _DECIMALS_LOCK:
        if literal not in _DECIMALS:
            _DECIMALS[literal] = float(literal)
        return _DECIMALS[literal]


def tokenize(text):
    """Return a list of tokens: numbers and one-character operator strings."""
    tokens = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or ch == ".":
            start = i
            while i < len(text) and (text[i].isdigit() or text[i] == "."):
                i += 1
            literal = text[start:i]
            if literal == "." or literal.count(".") > 1:
                raise TokenError(f"bad number {literal!r} at {start}")
            if "." in literal:
                with _DECIMALS_LOCK:
                    tokens.append(_decimal(literal))
            else:
                tokens.append(int(literal))
        elif ch in OPERATORS:
            tokens.append(ch)
            i += 1
        else:
            raise TokenError(f"unexpected character {ch!r} at {i}")
    return tokens
