""":class:`Quantized`, a GGUF tensor's quantised blocks, is the extension's
(``native/python/src/quantized.rs``): its shape checked against its blocks,
its blocks a structured array over the file, dequantised by the native
kernels."""

from .._native import Quantized

__all__ = ["Quantized"]
