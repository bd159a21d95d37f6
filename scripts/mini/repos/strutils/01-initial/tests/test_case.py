from strutils import camel_case, snake_case


def test_snake_case():
    assert snake_case("HelloWorld") == "hello_world"


def test_camel_case():
    assert camel_case("hello_big_world") == "helloBigWorld"
