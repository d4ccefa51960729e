import numpy as np
import pytest

from emts.errors import BadInputError
from emts.preprocess import Preprocessor


@pytest.mark.parametrize(
    "frame",
    [
        np.zeros((480, 640), np.float32),
        np.zeros((480, 640), np.int16),
        np.zeros((480, 640, 2), np.uint8),
        np.zeros((2, 480, 640, 3), np.uint8),
        np.zeros((0, 640), np.uint8),
        np.zeros((10, 10), np.uint8),
        [[1, 2], [3, 4]],
    ],
    ids=["float32", "int16", "two-channel", "batch", "empty", "tiny", "list"],
)
def test_unusable_frames_raise_bad_input(frame):
    with pytest.raises(BadInputError):
        Preprocessor()(frame)


@pytest.mark.parametrize("shape", [(512, 640), (512, 640, 1), (512, 640, 3), (512, 640, 4)])
def test_gray_and_colour_frames_become_the_same_working_frame(shape):
    rng = np.random.default_rng(0)
    gray = rng.integers(0, 256, (512, 640), dtype=np.uint8)
    frame = np.repeat(gray[:, :, None], shape[2], axis=2) if len(shape) == 3 else gray
    working, _, _ = Preprocessor()(frame)
    assert working.shape == (512, 640) and working.dtype == np.uint8
    np.testing.assert_array_equal(working, gray)


def test_any_size_is_letterboxed_to_640x512():
    working, geometry, _ = Preprocessor()(np.full((1080, 1920, 3), 77, np.uint8))
    assert working.shape == (512, 640)
    assert geometry.input_to_working.pad == (0, 76)


def test_uint16_thermal_frames_are_stretched_with_a_slowly_adapting_range():
    rng = np.random.default_rng(1)
    base = rng.normal(30000, 200, (512, 640)).clip(0, 65535).astype(np.uint16)
    pre = Preprocessor()
    first, _, _ = pre(base)
    assert first.dtype == np.uint8 and first.std() > 20  # a narrow raw range fills 0..255
    # A hot vehicle enters (5 % of the frame at a far higher raw level). A per-frame stretch
    # would re-map the whole background (a flicker Stage B reads as motion everywhere).
    hot = base.copy()
    hot[:128, :128] = 60000
    second, _, _ = pre(hot)
    background = (slice(200, 512), slice(200, 640))
    change = np.abs(second[background].astype(int) - first[background].astype(int)).mean()
    assert change < 3.0


def test_size_change_is_reported():
    pre = Preprocessor()
    _, _, changed = pre(np.zeros((512, 640), np.uint8))
    assert not changed
    _, _, changed = pre(np.zeros((512, 640), np.uint8))
    assert not changed
    _, geometry, changed = pre(np.zeros((720, 1280), np.uint8))
    assert changed and geometry.input_size == (1280, 720)
