"""URL slugs."""


def slugify(text, sep="-"):
    """Lower-case `text`, keep letters and digits, and join the runs between them with `sep`."""
    out = []
    pending_sep = False
    for ch in text.lower():
        if ch.isalnum():
            if pending_sep and out:
                out.append(sep)
            pending_sep = False
            out.append(ch)
        else:
            pending_sep = True
    return "".join(out)
