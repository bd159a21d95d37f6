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
        elif ch.isdigit() or ch == ".":
            start = i
            seen_dot = False
            while i < len(text) and (text[i].isdigit() or text[i] == "."):
                if text[i] == ".":
                    seen_dot = True
                    continue
                i += 1
            literal = text[start:i]
            if literal == "." or literal.count(".") > 1:
                raise TokenError(f"bad number {literal!r} at {start}")
            tokens.append(float(literal) if seen_dot else int(literal))
        elif ch in OPERATORS:
            tokens.append(ch)
            i += 1
        else:
            raise TokenError(f"unexpected character {ch!r} at {i}")
    return tokens
