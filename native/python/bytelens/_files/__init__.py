"""Real files: ``.npy``, ``.npz``, safetensors and GGUF as checked views over one
mapped file (:func:`load`), written with aligned tensors (:func:`save`),
and described without reading their data (:func:`inspect`). The Rust file
layer (``bytelens::files``) reads, checks, maps and plans every file; this
package turns what it gives into numpy arrays and framework tensors, and
keeps Python's argument checks.

The modules, each importing only those listed before it: ``_headers``
(the header limit, the core's dtype rules typed), ``_report``
(:class:`ArrayInfo`, :class:`FileReport`, text escaped for messages),
``_opening`` (a regular file opened, its errors' messages), ``_sharded``
(``MAX_INDEX``), ``_raw`` (raw files: a view or a plan's fields, and the
elements in a range of bytes), ``_inspect``, ``_load``
(:func:`load`, :class:`FileArrays`), ``_save``. A test patches a global
in the module that reads it (``_sharded.MAX_INDEX``), not here.
"""

from ._headers import MAX_HEADER, _file_dtype, read_elements
from ._inspect import inspect
from ._load import FileArrays, load
from ._opening import _open, _reason
from .._native import Quantized
from ._report import COMPRESSED, ArrayInfo, FileReport, _itemsize, _printable, _short
from ._save import ALIGN, MAX_ALIGN, save
from ._sharded import MAX_INDEX

# `doctest.testmod(bytelens._files)` (tests/python/test_files.py) finds only
# what this module defines: the examples in these docstrings run through here.
__test__ = {"inspect": inspect, "load": load, "FileArrays": FileArrays, "save": save, "Quantized": Quantized}
