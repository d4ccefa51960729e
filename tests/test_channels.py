import cv2
import numpy as np
import pytest

from conftest import compose, render, similarity
from emts.channels import CHANNEL_RANGES, MotionChannels, motion_in_network, network_image
from emts.config import ChannelConfig
from emts.ego_motion import EgoMotion
from emts.geometry import WORKING_TO_NETWORK

BASE = similarity(0.0, 1.0, -80.0, -80.0)
# Away from the borders: 16 network px (two stride-8 cells) in from each side of the content.
INTERIOR = (slice(16, 192 - 16), slice(8 + 16, 256 - 8 - 16))


def _pair(scene, motion):
    return render(scene, BASE), render(scene, compose(motion, BASE))


def _channels(first, second, motion, config=None):
    stage_b = MotionChannels(config)
    stage_b.update(first, EgoMotion())
    return stage_b.update(second, EgoMotion(np.asarray(motion, np.float64)))


def test_channels_have_the_documented_shape_dtype_and_ranges(aerial_scene):
    motion = similarity(0.01, 1.01, 5.0, -3.0)
    stack = _channels(*_pair(aerial_scene, motion), motion)
    assert stack.shape == (3, 192, 256) and stack.dtype == np.float32
    for index, name in enumerate(("L", "R", "D")):
        low, high = CHANNEL_RANGES[name]
        assert low <= stack[index].min() and stack[index].max() <= high


def test_first_frame_has_no_motion():
    stack = MotionChannels().update(np.full((512, 640), 90, np.uint8), EgoMotion())
    assert not stack[1:].any()
    np.testing.assert_allclose(stack[0][:, 8:248], 90 / 255, atol=1e-6)


@pytest.mark.parametrize(
    "motion", [(0.0, 1.0, 15.0, 0.0), (0.02, 1.0, 0.0, 0.0), (-0.01, 1.02, 6.0, 9.0)]
)
def test_exact_warp_of_a_static_scene_leaves_no_residual_away_from_borders(aerial_scene, motion):
    m = similarity(*motion)
    stack = _channels(*_pair(aerial_scene, m), m)
    residual, difference = stack[1][INTERIOR], stack[2][INTERIOR]
    # Bilinear resampling of real texture leaves a little; motion itself would be ~0.1+.
    assert np.percentile(residual, 99) < 0.02 and residual.mean() < 0.005
    assert np.abs(difference).mean() < 0.005


def test_without_ego_compensation_camera_motion_lights_up_everything(aerial_scene):
    m = similarity(0.0, 1.0, 15.0, 0.0)
    first, second = _pair(aerial_scene, m)
    compensated = _channels(first, second, m)
    raw = _channels(first, second, m, ChannelConfig(ego_compensation=False))
    assert raw[1][INTERIOR].mean() > 10 * compensated[1][INTERIOR].mean()


def test_a_moving_square_lights_up_r_and_nothing_else(aerial_scene):
    m = similarity(0.0, 1.0, 8.0, 3.0)
    first, second = _pair(aerial_scene, m)
    first, second = first.copy(), second.copy()
    cv2.rectangle(first, (300, 240), (320, 270), 255, -1)  # 20x30 working px square...
    cv2.rectangle(second, (306, 240), (326, 270), 255, -1)  # ...moved 6 px right in the frame
    stack = _channels(first, second, m)
    residual = stack[1]
    # The square spans network x ~ 8 + 0.375 * (300..326) = 120..130, y = 90..101.
    square = residual[86:106, 114:136]
    elsewhere = residual[INTERIOR].copy()
    elsewhere[86 - 16 : 106 - 16, 114 - 24 : 136 - 24] = 0
    assert square.max() > 0.2
    assert square.max() > 10 * np.percentile(elsewhere, 99.5)
    assert np.unravel_index(np.argmax(residual), residual.shape)[1] in range(114, 136)


def test_padding_columns_carry_no_motion(aerial_scene):
    m = similarity(0.0, 1.0, 12.0, 5.0)
    stack = _channels(*_pair(aerial_scene, m), m, ChannelConfig(ego_compensation=False))
    assert not stack[1:, :, :8].any() and not stack[1:, :, 248:].any()


def test_motion_in_network_coordinates_scales_the_translation():
    m = motion_in_network(np.array([[1.0, 0.0, 16.0], [0.0, 1.0, -8.0]]))
    np.testing.assert_allclose(m, [[1, 0, 6.0], [0, 1, -3.0]])


@pytest.mark.parametrize("kind", ["noise", "scene", "flat"])
def test_network_image_equals_the_opencv_area_letterbox_bit_for_bit(aerial_scene, kind):
    rng = np.random.default_rng(7)
    frame = {
        "noise": rng.integers(0, 256, (512, 640), np.uint8),
        "scene": render(aerial_scene, BASE),
        "flat": np.full((512, 640), 255, np.uint8),
    }[kind]
    expected = WORKING_TO_NETWORK.apply(frame).astype(np.float32) * np.float32(1.0 / 255.0)
    np.testing.assert_array_equal(network_image(frame), expected)
