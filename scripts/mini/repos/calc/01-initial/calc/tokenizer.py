"""Split an expression into tokens."""


class TokenError(ValueError):
    pass


OPERATORS = "+-*/()"


def tokenize(text):
    """Return a list of tokens: ints and one-character operator strings."""
    tokens = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit():
            start = i
            while i < len(text) and text[i].isdigit():
                i += 1
            tokens.append(int(text[start:i]))
        elif ch in OPERATORS:
            tokens.append(ch)
            i += 1
        else:
            raise TokenError(f"unexpected character {ch!r} at {i}")
    return tokens
