"""A subclass declared in another directory: relative func_files resolve against this file."""

from expand_ops import DoubleIt


class RelocatedDoubleIt(DoubleIt):
    """Inherits `double_it.c` from DoubleIt, and so loads subclass/double_it.c (it triples)."""
