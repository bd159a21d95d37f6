"""Small string helpers."""

from .case import camel_case, snake_case
from .slug import slugify
from .wrap import wrap

__all__ = ["camel_case", "slugify", "snake_case", "wrap"]
