"""URL slugs."""

import re

_WORD = re.compile(r"[^\W_]+")


def slugify(text, sep="-"):
    """Lower-case `text` and join its runs of letters and digits with `sep`."""
    return sep.join(_WORD.findall(text.lower()))
