from iniconf import parse


def test_true_and_false():
    cfg = parse("[f]\na = true\nb = false")
    assert cfg.getbool("f", "a") is True
    assert cfg.getbool("f", "b") is False


def test_missing_bool_default():
    assert parse("[f]").getbool("f", "x", default=True) is True
