"""Identifier case conversion."""


def snake_case(name):
    """`HelloWorld` -> `hello_world`."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i > 0:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def camel_case(name):
    """`hello_world` -> `helloWorld`."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)
