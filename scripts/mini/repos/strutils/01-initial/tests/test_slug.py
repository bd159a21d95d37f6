from strutils import slugify


def test_simple_words():
    assert slugify("Hello World") == "hello-world"


def test_custom_separator():
    assert slugify("Hello World", sep="_") == "hello_world"


def test_digits_are_kept():
    assert slugify("Top 10") == "top-10"
