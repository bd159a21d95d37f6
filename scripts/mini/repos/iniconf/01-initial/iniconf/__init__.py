"""A small INI-style configuration parser."""

from .parser import Config, ParseError, parse

__all__ = ["Config", "ParseError", "parse"]
