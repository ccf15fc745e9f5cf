"""Issue 40, quantised GPU uploads: blocks that went up recorded as
holding any ``values_shape`` (one Q8_0 block as a million values, for a
shader to read past), and a size mismatch that named no tensor."""

from __future__ import annotations

import numpy as np
import pytest

import bytelens as bl
from bytelens import _native
from _support import gpu_or_skip


@pytest.mark.parametrize("dtype", [None, "float32"])
def test_a_quantised_upload_must_hold_its_values_shape(dtype):
    gpu = gpu_or_skip()
    one_block = np.zeros(34, np.uint8)
    says = r"34 bytes of Q8_0 blocks do not hold values of shape \(1000000,\): 1 block holds 32 values, not 1000000"
    with pytest.raises(gpu.GpuError, match=says):  # went up recorded as values_shape=(1000000,)
        _native.gpu_upload_all([one_block], dtype, [("q8_0", (1000000,))])
    with pytest.raises(gpu.GpuError, match=r'array "w\.q8_0": 34 bytes .* rows of 16 values cut blocks of 32 .*uploaded nothing'):
        _native.gpu_upload_all([np.zeros(4, np.float32), one_block], dtype, [None, ("q8_0", (2, 16))], ["b", "w.q8_0"])
    with pytest.raises(gpu.GpuError, match="35 bytes of Q8_0 blocks .* 1 byte over whole blocks of 34"):
        _native.gpu_upload_all([np.zeros(35, np.uint8)], dtype, [("q8_0", (32,))])
    q = bl.Quantized.from_blocks("q8_0", one_block, (32,))
    up = gpu.upload(q, dtype=dtype)
    assert up.nbytes == (34 if dtype is None else 128)
    assert (up.values_shape, up.qtype) == (((32,), "q8_0") if dtype is None else (None, None))
