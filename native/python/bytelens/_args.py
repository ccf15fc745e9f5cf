"""Argument errors that name the argument.

pyo3 (0.30) converts a native function's arguments before calling it and,
when one has the wrong type, raises a ``TypeError`` that says what it
takes (``'None' is not an instance of 'str'``) and names the argument only
in a note (PEP 678: ``while processing 'dimension'``), which tracebacks
print under the message but ``str(err)`` leaves out. The Python functions
that pass their arguments on to the extension put the name into the
message itself: ``argument 'dimension': 'None' is not an instance of 'str'``.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

#: The note pyo3 adds to an argument's conversion error.
_NOTE = re.compile(r"while processing '([A-Za-z_][A-Za-z0-9_]*)'")


def named(err: TypeError) -> TypeError:
    """``err`` with the argument its note names at the start of its message
    (``err`` itself where no note names one, or the message already does)."""
    for note in getattr(err, "__notes__", ()):
        found = _NOTE.fullmatch(str(note))
        if found is not None and not str(err).startswith("argument "):
            out = TypeError(f"argument {found.group(1)!r}: {err}")
            out.__notes__ = [n for n in err.__notes__ if n is not note]
            return out
    return err


def naming_arguments(call: _F) -> _F:
    """``call``, its pyo3 argument errors naming the argument (:func:`named`)."""

    @functools.wraps(call)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except TypeError as err:
            better = named(err)
            if better is err:
                raise
            raise better from None

    return wrapper  # type: ignore[return-value]
