"""Shared fixtures: seeded textured scenes and exact warps of them."""

from __future__ import annotations

import logging
import os

import cv2
import numpy as np
import pytest

from emts.synth.still_clip import load_demo_still


@pytest.fixture(scope="session")
def aerial_scene() -> np.ndarray:
    """A real aerial still (HIT-UAV), padded with reflection so warps stay inside it."""
    image, _ = load_demo_still()
    return cv2.copyMakeBorder(image, 80, 80, 80, 80, cv2.BORDER_REFLECT_101).astype(np.float32)


def render(scene: np.ndarray, pose: np.ndarray, size=(640, 512)) -> np.ndarray:
    """Frame seen through a 2x3 ``pose`` (scene px -> frame px), bilinear, uint8."""
    frame = cv2.warpAffine(scene, np.asarray(pose, np.float64), size, flags=cv2.INTER_LINEAR)
    return np.clip(frame, 0, 255).astype(np.uint8)


def similarity(
    angle: float, scale: float, tx: float, ty: float, centre=(320.0, 256.0)
) -> np.ndarray:
    """2x3 similarity about ``centre`` followed by a translation."""
    m = cv2.getRotationMatrix2D(centre, np.degrees(angle), scale)
    m[:, 2] += (tx, ty)
    return m


def compose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """2x3 of ``a`` after ``b``."""
    return (np.vstack([a, [0, 0, 1]]) @ np.vstack([b, [0, 0, 1]]))[:2]


def snow_scene(rng: np.random.Generator, size=(700, 800)) -> np.ndarray:
    """Low-texture scene: flat bright field, faint undulation and three small dark objects."""
    undulation = cv2.GaussianBlur(rng.normal(0, 1, size).astype(np.float32), (0, 0), 40)
    scene = 200 + undulation / undulation.std() * 2
    for _ in range(3):
        x, y = rng.integers(150, size[1] - 150), rng.integers(150, size[0] - 150)
        w, h = rng.integers(6, 14, 2)
        cv2.rectangle(scene, (int(x), int(y)), (int(x + w), int(y + h)), 120.0, -1)
    return scene


@pytest.fixture(scope="module")
def ray_session():
    """One small, quiet local Ray instance for a test file, shut down at its end (skipped
    without ray, the distributed extra)."""
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(
        "local",  # a new instance, whatever RAY_ADDRESS or an earlier `ray start` say
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
        object_store_memory=80 * 1024 * 1024,
    )
    try:
        yield ray
    finally:
        ray.shutdown()
