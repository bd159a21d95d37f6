"""Evaluate expressions."""

from .parser import parse
from .tokenizer import tokenize


def eval_node(node):
    if isinstance(node, (int, float)):
        return node
    if node[0] == "neg":
        return -eval_node(node[1])
    op, left, right = node
    a, b = eval_node(left), eval_node(right)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            raise ZeroDivisionError("division by zero")
        return a / b
    raise ValueError(f"unknown operator {op!r}")


def evaluate(text):
    """Evaluate an arithmetic expression and return its value."""
    return eval_node(parse(tokenize(text)))
