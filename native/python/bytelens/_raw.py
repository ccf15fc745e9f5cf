"""The name ``bytelens._raw`` kept for the tests that import it
(``tests/python/test_inspect_cli.py``: ``from bytelens._raw import
_inspect_raw, elements`` and its doctests): the raw-file inspector lives in
``bytelens._files._raw``, and nothing in the package imports this module."""

from ._files import _raw as _moved
from ._files._raw import _inspect_raw, _quote, elements

__all__ = ["_inspect_raw", "_quote", "elements"]

# `doctest.testmod(bytelens._raw)` runs the moved module's examples (the
# finder skips what another module defines, unless it is listed here).
__test__ = {
    name: value
    for name, value in vars(_moved).items()
    if callable(value) and getattr(value, "__module__", None) == _moved.__name__
}
