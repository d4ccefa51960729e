"""The value type that actors hand to the clip compositor.

An actor (person, animal, vehicle) lives on the ground plane in *plate* pixel coordinates and
renders itself, for one frame, straight into *frame* coordinates through the camera pose (a
2x3 similarity, plate px -> frame px). It returns a :class:`Sprite`: a small patch placed at
an integer frame position, holding

* ``alpha``    -- coverage in [0, 1] (anti-aliased by supersampling, edges feathered);
* ``contrast`` -- the actor's luminance in units of the *local plate standard deviation*
  relative to the local plate mean (the compositor turns it into gray levels:
  ``mean + contrast * std``), so a person can be made nearly invisible in L
  (|contrast| < 1) or stand out, whatever the plate;
* ``shadow``   -- an optional cast-shadow coverage patch of its own position and size
  (darkening strength in [0, 1]); a shadow is never part of the box;
* ``box``      -- the tight ``[x, y, w, h]`` box (top-left edge, frame px) of the body
  (alpha > 0.25), without the shadow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Patch:
    """A float32 image patch whose top-left pixel sits at integer frame position (x0, y0)."""

    x0: int
    y0: int
    values: np.ndarray  # (h, w) float32

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]


@dataclass
class Sprite:
    kind: str  # "person", "animal", "vehicle", "bicycle"
    identity: int  # unique per actor within a clip
    alpha: Patch
    contrast: Patch  # same placement and shape as alpha
    box: np.ndarray  # [x, y, w, h] frame px, top-left edge convention
    shadow: Patch | None = None
