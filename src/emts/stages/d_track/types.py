"""What Stage D takes and says (WORKING px, centre and size): a detection as the tracker sees
it, a lock command, and the tracker's per-frame state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Mode = Literal["search", "locked", "reacquire"]


@dataclass(frozen=True)
class Candidate:
    """A detection as the tracker sees it (WORKING px, centre and size)."""

    centre: np.ndarray  # (2,)
    size: np.ndarray  # (2,) w, h
    score: float
    embedding: np.ndarray  # (8,) unit vector


@dataclass(frozen=True)
class LockCommand:
    """Lock on a target on the frame being updated (WORKING px, centre and size).

    Attributes:
        centre, size: the target on this frame.
        embedding: the detector's embedding of it, or None (a tap with no detection there).
        source: how the lock was made: ``"tap:detection"``, ``"tap:blob"``, ``"tap:faint"``,
            ``"tap:box"`` or ``"auto"``.
        colour: the camera sees colour (:func:`emts.modality.frame_modality`; the pipeline
            sets it): the merge hold (``TrackerConfig.merge_area_ratio``) is off.
        moves: a tap's lock moving onto the detection found under the tapped point after
            the tap (``AcquisitionConfig.tap_wait_frames``), not a new lock: on colour frames
            the tracker keeps the lock it has where that detection holds far less of the
            person than its box does (``TrackerConfig.associate_own_share``).
    """

    centre: np.ndarray
    size: np.ndarray
    embedding: np.ndarray | None
    source: str
    colour: bool = False
    moves: bool = False

    @classmethod
    def from_candidate(cls, candidate: Candidate, source: str) -> LockCommand:
        return cls(candidate.centre, candidate.size, candidate.embedding, source)


@dataclass(frozen=True)
class TrackState:
    """The tracker's output for one frame.

    Attributes:
        mode: ``"search"``, ``"locked"`` or ``"reacquire"``.
        centre, size: the estimate in WORKING px (None in search); the centre is kept inside
            the image content.
        score: score of the associated detection, None when no detection was associated.
        associated: index of the associated candidate, if any.
        misses: consecutive frames without a measurement.
        appearance: the NCC peak of the appearance match this frame (None: not searched).
        measured_by: ``"detection"``, ``"appearance"``, ``"both"`` or None (coasting).
        event: ``"lock"``, ``"relock"``, ``"lost"`` (locked -> reacquire) or ``"dropped"``
            (reacquire gave up -> search) on the frame where that happened, else None.
        person_size: the person's own size about ``centre`` (WORKING px), the box reported,
            where the tracker measured it narrower than ``size`` (colour frames,
            ``TrackerConfig.person_width``); None: ``size``.
    """

    mode: Mode
    centre: np.ndarray | None
    size: np.ndarray | None
    score: float | None
    associated: int | None
    misses: int
    appearance: float | None = None
    measured_by: str | None = None
    event: str | None = None
    person_size: np.ndarray | None = None

    @property
    def reported_size(self) -> np.ndarray | None:
        """The size of the box reported: ``person_size`` where measured, else ``size``."""
        return self.size if self.person_size is None else self.person_size
