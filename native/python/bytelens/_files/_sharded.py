"""Sharded checkpoints: Hugging Face's index (``model.safetensors.index.json``:
``{"metadata": {...}, "weight_map": {tensor: shard file name}}``) beside
its shards, found and read and checked against the shards' headers by the
Rust file layer (``bytelens::files``), up to :data:`MAX_INDEX` bytes."""

from __future__ import annotations

from ._headers import MAX_HEADER

#: The longest sharded checkpoint's index :func:`load` and :func:`inspect`
#: read (Hugging Face's are a few MB for the largest models): the header
#: limit again. Read at each call, so that a test may patch it here.
MAX_INDEX = MAX_HEADER
