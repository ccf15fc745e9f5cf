"""Real files: ``.npy``, ``.npz``, safetensors and GGUF as checked views over one
mapped file (:func:`load`), written with aligned tensors (:func:`save`),
and described without reading their data (:func:`inspect`).

Every file is read, checked and mapped by the Rust file layer
(``bytelens::files``, through ``_native.load_file`` and
``_native.describe_file``): every length, shape and byte range is checked
against the file before any view exists, and only a file's first bytes are
read to describe it. This package turns what it gives into numpy arrays and
framework tensors, and keeps Python's argument checks.

The modules, each importing only those listed before it:

- ``_headers``: the header limit, and the core's file rules typed
  (``view_layout``, ``read_elements``).
- ``_report``: :class:`ArrayInfo` and :class:`FileReport`, and text from a
  file escaped for messages (``_short``, ``_printable``).
- ``_opening``: opening a regular file, and the messages of its errors.
- ``_sharded``: the longest sharded checkpoint's index read (``MAX_INDEX``).
- ``_raw``: raw files for ``inspect(dtype=...)``, ``inspect(plan=...)``
  and the command's ``--dump``: a view or a plan's fields over a file of
  no format, and the elements in a range of bytes.
- ``_inspect``: :func:`inspect`.
- ``_quantized``: :class:`Quantized`, a GGUF tensor's quantised blocks.
- ``_load``: :func:`load` and :class:`FileArrays`.
- ``_save``: :func:`save` and its atomic write.

The names the rest of bytelens (and its tests) use are re-exported here, as
``bytelens._files.<name>``. A test that patches a module's global patches it
in the module that reads it (``_sharded.MAX_INDEX``): a name re-exported
here is a second binding, which no module reads.
"""

from ._headers import MAX_HEADER, _file_dtype, read_elements, view_layout
from ._inspect import inspect
from ._load import FileArrays, load
from ._opening import _open, _reason
from ._quantized import Quantized
from ._report import COMPRESSED, ArrayInfo, FileReport, _itemsize, _naming, _printable, _short
from ._save import ALIGN, MAX_ALIGN, _name_start, save
from ._sharded import MAX_INDEX

# `doctest.testmod(bytelens._files)` (tests/python/test_files.py) finds only
# what this module defines: the examples in these docstrings run through here.
__test__ = {"inspect": inspect, "load": load, "FileArrays": FileArrays, "save": save, "Quantized": Quantized}
