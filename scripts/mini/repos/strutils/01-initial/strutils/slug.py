"""URL slugs."""


def slugify(text, sep="-"):
    """Lower-case `text`, keep letters and digits, and join the rest with `sep`."""
    out = []
    for ch in text.lower():
        if ch.isalnum():
            out.append(ch)
        else:
            out.append(sep)
    return "".join(out)
