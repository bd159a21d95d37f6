from strutils import slugify


def test_simple_words():
    assert slugify("Hello World") == "hello-world"


def test_custom_separator():
    assert slugify("Hello World", sep="_") == "hello_world"


def test_digits_are_kept():
    assert slugify("Top 10") == "top-10"


def test_collapses_runs_of_separators():
    assert slugify("Hello,  World!! Again") == "hello-world-again"


def test_strips_separators_at_the_ends():
    assert slugify("  --Hello World?  ") == "hello-world"
