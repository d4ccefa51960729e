"""Stage C at run time: decoding (numpy only)."""

import numpy as np
import pytest

from emts.detector import Detector, decode
from emts.errors import BadInputError


def _heads(peaks):
    heat = np.zeros((1, 24, 32), np.float32)
    size = np.zeros((2, 24, 32), np.float32)
    offset = np.full((2, 24, 32), 0.5, np.float32)
    embedding = np.ones((8, 24, 32), np.float32)
    for (y, x), score in peaks.items():
        heat[0, y, x] = score
    return heat, size, offset, embedding


def test_decode_keeps_local_maxima_above_threshold_best_first():
    heat, size, offset, embedding = _heads({(5, 5): 0.9, (5, 6): 0.5, (10, 20): 0.6, (20, 3): 0.2})
    detections = decode(heat, size, offset, embedding, threshold=0.3)
    assert [round(d.score, 2) for d in detections] == [0.9, 0.6]  # (5,6) is not a local max


def test_decode_geometry_and_unit_embeddings():
    heat, size, offset, embedding = _heads({(10, 20): 0.8})
    size[:, 10, 20] = np.log([2.0, 4.0])  # box = 8 * exp(S) = 16 x 32
    offset[:, 10, 20] = [0.25, 0.75]
    (d,) = decode(heat, size, offset, embedding, threshold=0.3)
    cx, cy = (20 + 0.25) * 8, (10 + 0.75) * 8
    np.testing.assert_allclose(d.box, [cx - 8, cy - 16, 16, 32], rtol=1e-6)
    assert abs(np.linalg.norm(d.embedding) - 1) < 1e-6


def test_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(BadInputError):
        Detector(tmp_path / "none.onnx")
