"""The leg cycle shared by the articulated actors (walker and quadruped).

Phase 0 of a leg's cycle is heel strike; the foot is planted for the first ``duty`` share of
the cycle (stance) and swings forward for the rest.
"""

from __future__ import annotations

import math

import numpy as np

MAX_HIP_AMPLITUDE_RAD = math.radians(32.0)  # cap of the no-slip hip flexion/extension
KNEE_STANCE_FRACTION = 0.15  # loading-response knee flexion, as a fraction of the peak


def _unit(x: float, y: float, z: float) -> np.ndarray:
    vector = np.array([x, y, z])
    return vector / np.linalg.norm(vector)


def _hip_angle(phase: float, amplitude: float, duty: float) -> float:
    """Hip flexion (+ forward) over a leg cycle; phase 0 = heel strike.

    Stance (phase < duty): the foot, planted, moves backwards relative to the hip at constant
    speed, ``sin(angle)`` falling linearly from ``sin(A)`` to ``-sin(A)``. Swing: the thigh
    leaves toe-off fast and eases into heel strike at ``+A`` (a quarter sine).
    """
    if phase < duty:
        return math.asin(math.sin(amplitude) * (1.0 - 2.0 * phase / duty))
    swing = (phase - duty) / (1.0 - duty)
    return -amplitude + 2.0 * amplitude * math.sin(0.5 * math.pi * swing)


def _knee_flexion(phase: float, peak: float, duty: float) -> float:
    """Knee flexion over a leg cycle: a small loading bump, then the swing peak (~73 %)."""
    preswing = duty - 0.1
    if phase >= preswing:
        return peak * math.sin(math.pi * (phase - preswing) / (1.0 - preswing)) ** 2
    if phase < 0.3:
        return KNEE_STANCE_FRACTION * peak * math.sin(math.pi * phase / 0.3) ** 2
    return 0.0
