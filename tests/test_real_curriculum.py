"""Issue 8's curriculum pieces: urban plates, static clutter, the drone's shadow, L appearance
randomization and standing persons as ignore regions (small inputs, fast)."""

from __future__ import annotations

import numpy as np
import pytest

from emts.synth.clips import DroneShadow
from emts.synth.common import FRAME_SIZE
from emts.synth.plates import PROCEDURAL_SIZE, URBAN_KINDS, draw_clutter, procedural_plate
from emts.train.data import _ground_speeds, flatten_light, randomize_appearance


@pytest.mark.parametrize("kind", URBAN_KINDS)
def test_urban_plates_are_textured_gray_images(kind):
    plate = procedural_plate(np.random.default_rng(1), kind)
    assert plate.image.shape == (PROCEDURAL_SIZE[1], PROCEDURAL_SIZE[0])
    assert plate.image.dtype == np.float32
    assert plate.image.min() >= 0 and plate.image.max() <= 255
    assert plate.image.std() > 3  # not a flat plate
    assert plate.source.startswith(f"procedural:{kind}")


def test_clutter_is_drawn_only_inside_the_region():
    image = np.full((200, 300), 120, np.float32)
    region = (np.array([100.0, 50.0]), np.array([200.0, 150.0]))
    drawn = draw_clutter(np.random.default_rng(0), image, 30.0, region, count=25)
    assert drawn == 25
    changed = np.abs(image - 120) > 1
    assert changed.any()
    ys, xs = np.nonzero(changed)  # objects are centred in the region, at most ~0.6 H beyond
    assert xs.min() >= 100 - 25 and xs.max() <= 200 + 25
    assert ys.min() >= 50 - 25 and ys.max() <= 150 + 25


def test_drone_shadow_darkens_the_frame_where_it_is():
    shadow = DroneShadow(
        centre=np.array([320.0, 256.0]),
        velocity=np.zeros(2),
        size=60.0,
        angle=0.3,
        strength=0.5,
    )
    frame = np.full((FRAME_SIZE[1], FRAME_SIZE[0]), 200, np.float32)
    shadow.apply(frame, np.random.default_rng(0))
    assert frame.min() < 150  # darkened ...
    assert frame[256, 320] < 200 and frame[10, 10] == 200  # ... near its centre only


def test_appearance_randomization_flips_polarity_consistently():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (2, 3, 8, 8)).astype(np.float32)
    x[:, 2] = x[:, 2] - 0.5
    flipped = randomize_appearance(x, np.random.default_rng(1), invert=1.0, gain=(1.0, 1.0))
    np.testing.assert_allclose(flipped[:, 0], 1 - x[:, 0], atol=1e-6)
    np.testing.assert_allclose(flipped[:, 1], x[:, 1])  # R = |difference| keeps its sign
    np.testing.assert_allclose(flipped[:, 2], -x[:, 2], atol=1e-6)
    scaled = randomize_appearance(x, np.random.default_rng(2), invert=0.0, gain=(0.5, 0.6))
    ratio = np.abs(scaled[:, 2]).sum() / np.abs(x[:, 2]).sum()
    assert 0.45 < ratio < 0.65  # D scales with the contrast gain


def test_l_dropout_flattens_each_frames_light_and_keeps_the_motion_channels():
    x = np.random.default_rng(0).uniform(0, 1, (3, 3, 8, 8)).astype(np.float32)
    flat = flatten_light(x)
    for t in range(3):
        np.testing.assert_allclose(flat[t, 0], x[t, 0].mean(), rtol=1e-6)  # that frame's mean
    np.testing.assert_array_equal(flat[:, 1:], x[:, 1:])
    assert not np.array_equal(flat[:, 0], x[:, 0])  # the input is left as it was


def test_standing_persons_have_no_ground_speed():
    labels = {
        "frames": [
            {"persons": [{"id": 0, "box": [10, 10, 5, 20]}, {"id": 1, "box": [50, 50, 5, 20]}]},
            {
                "camera_motion": [[1, 0, 3], [0, 1, -2]],  # the camera moved by (3, -2)
                "persons": [
                    {"id": 0, "box": [13, 8, 5, 20]},  # carried by the camera only: standing
                    {"id": 1, "box": [54, 48, 5, 20]},  # walked 1 px beyond the camera motion
                ],
            },
        ]
    }
    speeds = _ground_speeds(labels, 1)
    assert speeds[0] == pytest.approx(0.0, abs=1e-9)
    assert speeds[1] == pytest.approx(1.0)
