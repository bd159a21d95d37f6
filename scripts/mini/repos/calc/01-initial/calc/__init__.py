"""A tiny arithmetic expression evaluator."""

from .evaluator import evaluate

__all__ = ["evaluate"]
