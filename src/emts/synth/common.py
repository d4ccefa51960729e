"""Small shared pieces of the curriculum."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRAME_SIZE = (640, 512)  # (w, h) of every generated frame: the 640x512 working frame

# Every mover's part contrasts are multiplied by this in the default sets (issue 8). At 1 (the
# sets before it) the curriculum's median person stood 13.8 gray levels off its ground, real
# persons 31.5 (HIT-UAV train), 30.4 (val) and 40.5 (uav123-person12); 2.6 gives 32.9,
# calibrated on HIT-UAV train only (benchmarks/person_contrast.py, reports/real/candidates/
# h_wide_i_contrast.md). `emts synth SET --contrast-scale 1` renders the older sets.
CONTRAST_SCALE = 2.6


def log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    """A draw whose logarithm is uniform on [log low, log high]."""
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


@dataclass(frozen=True)
class SetKind:
    clip_kind: str  # "tier1" or "negative"
    split: str  # "train" or "heldout"
    default_clips: int  # the paper's sizes (§4)
    description: str


SETS = {
    "tier1": SetKind(
        "tier1", "train", 400, "Tier-1 training clips: persons (and crowds) with distractors"
    ),
    "bench": SetKind("tier1", "heldout", 300, "held-out Tier-1 bench (disjoint seeds and plates)"),
    "negatives": SetKind("negative", "train", 640, "person-free hard-negative training clips"),
    "fpbench": SetKind("negative", "heldout", 300, "held-out person-free false-positive bench"),
}
