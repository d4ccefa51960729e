"""benchmarks/pets_movers.py: what it counts as movers on a still camera, and its matching."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
pets_movers = pytest.importorskip("pets_movers")


def _clip(frames=20):
    """A still textured scene (BGR, 160x120) and a 10x30 walker crossing it 3 px a frame;
    a 10x30 bright post that never moves."""
    rng = np.random.default_rng(0)
    scene = (100 + rng.normal(0, 3, (120, 160, 3))).clip(0, 255).astype(np.uint8)
    scene[20:50, 140:150] = 250  # the post: part of the median, never a mover
    clip, truth = [], []
    for t in range(frames):
        frame = scene.copy()
        x = 10 + 3 * t
        frame[60:90, x : x + 10] = (30, 40, 160)
        clip.append(frame)
        truth.append(np.array([x, 60, 10, 30], float))
    return clip, truth


def test_on_a_still_camera_only_what_moves_is_a_mover():
    clip, truth = _clip()
    movers = pets_movers.movers(clip)
    for boxes, person in zip(movers, truth, strict=True):
        assert len(boxes) == 1  # the walker; the post is background
        np.testing.assert_allclose(boxes[0], person, atol=3)


def test_a_detection_counts_where_its_centre_lies_in_a_grown_mover_box():
    mover = np.array([[100.0, 100.0, 20.0, 50.0]])
    centres = np.array([[110.0, 125.0], [97.0, 95.0], [90.0, 125.0], [300.0, 300.0]])
    # inside; inside the box grown by a fifth (4 x 10 px); outside it; far away
    np.testing.assert_array_equal(pets_movers.inside(centres, mover)[:, 0], [1, 1, 0, 0])
    assert pets_movers.inside(centres, np.zeros((0, 4))).shape == (4, 0)


def test_movers_follow_the_camera_path_they_are_warped_along():
    pose = np.array([[1.0, 0.0, 5.0], [0.0, 1.0, -3.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(pets_movers.warped(np.array([10.0, 20, 4, 8]), pose), [15, 17, 4, 8])
    zoom = np.diag([2.0, 2.0, 1.0])
    np.testing.assert_allclose(
        pets_movers.warped(np.array([10.0, 20, 4, 8]), zoom), [20, 40, 8, 16]
    )


def test_the_autolock_paths_shake_each_frame_and_its_movers_alike():
    pets_autolock = pytest.importorskip("pets_autolock")
    clip, truth = _clip(frames=8)
    movers = [t[None] for t in truth]
    still = pets_autolock.shaken_clip(clip, movers, None)
    assert all(f is g and m is n for (f, m), g, n in zip(still, clip, movers, strict=True))
    for frame, boxes in pets_autolock.shaken_clip(clip, movers, 1):  # the walker moved with it
        for x, y, w, h in boxes:
            cx, cy = int(round(x + w / 2)), int(round(y + h / 2))
            assert frame[cy, cx, 2] > 140 and frame[cy, cx, 0] < 60
