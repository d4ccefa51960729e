"""benchmarks/hituav_autolock.py: what counts as a lock on a person."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
hituav_autolock = pytest.importorskip("hituav_autolock")


def test_a_lock_is_on_a_person_within_their_box_grown_by_a_quarter():
    boxes = [np.array([100.0, 50, 8, 20]), np.array([300.0, 200, 10, 10])]
    on = hituav_autolock.on_a_person
    assert on(np.array([104.0, 60]), boxes)  # the first one's centre
    assert on(np.array([109.9, 45.5]), boxes)  # inside the grown box (x to 110, y from 45)
    assert not on(np.array([110.5, 60]), boxes)  # beyond a quarter of the width
    assert on(np.array([305.0, 212.0]), boxes) and not on(np.array([200.0, 100]), boxes)
    assert not on(np.array([104.0, 60]), [])
