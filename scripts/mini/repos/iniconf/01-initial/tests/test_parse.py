import pytest

from iniconf import ParseError, parse

SAMPLE = """
; a comment
[server]
host = example.org
port = 8080

# another comment
[client]
retries=3
"""


def test_sections_and_values():
    cfg = parse(SAMPLE)
    assert cfg.get("server", "host") == "example.org"
    assert cfg.get("client", "retries") == "3"


def test_getint():
    assert parse(SAMPLE).getint("server", "port") == 8080


def test_missing_key_default():
    assert parse(SAMPLE).get("server", "user", "nobody") == "nobody"


def test_key_outside_section():
    with pytest.raises(ParseError):
        parse("a = 1")


def test_value_may_contain_equals():
    assert parse("[x]\nexpr = a=b").get("x", "expr") == "a=b"
