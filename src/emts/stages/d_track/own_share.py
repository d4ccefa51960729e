"""Stage D's weighing of the person's own samples (:mod:`emts.stages.own_target`: neither the
lit ground nor a shadow on it) on colour frames (:class:`OwnShareChecks`, a part of
:class:`~emts.stages.d_track.tracker.TargetTracker`; its state lives there): a tap's detection
narrowed to the person in it, a detection holding far less of them than the track's box (their
cast shadow) kept from measuring the lock, and a tap's lock kept from moving onto one.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from emts.stages.appearance import AppearanceView
from emts.stages.d_track.types import Candidate, LockCommand
from emts.stages.own_target import own_share_in_view


class OwnShareChecks:
    """The own-sample checks of :class:`~emts.stages.d_track.tracker.TargetTracker`."""

    def _person_in_tapped_box(self, candidate: LockCommand, view: AppearanceView) -> LockCommand:
        """A tap's detection box narrowed to the person in it on colour frames (as a re-lock's:
        :func:`~emts.stages.d_track.relock.person_box`), where that region holds the box's
        centre, is no wider than ``relock_person_max`` x the box and leaves a good part of the
        box out (``tap_person_cut``: a long shadow; a box a little larger than the region is
        the detector's slack around dark trousers or hair, which the region leaves out)."""
        size = np.asarray(candidate.size, float)
        found = self._one_person_in(view, candidate.centre, size, float(size[1]))
        if found is None:
            return candidate
        (x, y), (w, h) = found
        cx, cy = candidate.centre
        if not (abs(cx - x) <= w / 2 and abs(cy - y) <= h / 2):
            return candidate
        cut = self.config.tap_person_cut
        if w >= cut * size[0] and h >= cut * size[1]:
            return candidate
        return dataclasses.replace(candidate, centre=np.asarray(found[0], float), size=found[1])

    def _holds_less(self, lock: LockCommand, motion: np.ndarray, view) -> bool:
        """Does the detection a tap's lock would move onto (``lock``, this frame) hold a
        smaller share of own-target samples than the lock's own box (carried by the camera
        ``motion``), times ``tap_wait_own_share``? Colour frames, a lock held. The move is
        there to replace a box the tap took off the person; a detection holding less of
        them than that box holds their shadow or ground beside them: on person12 with a 2x
        window whose top edge cut the walker, the tap's box held the walker (a share of
        0.36) and the detection under the tapped point 3 frames later the walker with their
        long shadow (51x97 px for a 24x53 box, 0.25), and the lock moved onto it slid onto
        the shadow; the four other moves of those runs went to detections holding 1.6-8.6x
        the share of the tap's box."""
        ratio = self.config.tap_wait_own_share
        if ratio <= 0 or self.mode != "locked" or view is None or view.image.ndim != 3:
            return False
        centre, size = self.image_box()
        centre = motion[:, :2] @ centre + motion[:, 2]
        own = own_share_in_view(view, centre, size, self.config.appearance)
        return self._holds_less_than(view, lock.centre, lock.size, own, ratio)

    def _a_shadow(self, view, candidate: Candidate) -> bool:
        """Does ``candidate`` hold far less of a target than the track's own box (under
        ``associate_own_share`` of its share of own-target samples, colour frames): the
        walker's cast shadow, detected beside them? Never on gray views."""
        ratio = self.config.associate_own_share
        if ratio <= 0 or view is None or view.image.ndim != 3:
            return False
        own = self._own_share_here(view)
        return self._holds_less_than(view, candidate.centre, candidate.size, own, ratio)

    def _own_share_here(self, view: AppearanceView) -> float | None:
        """The share of own-target samples in the track's box (None on gray views), computed
        once a frame: the shadow check weighs it before the update, the emptied box's check
        reads it after (where no detection was weighed, it is taken there)."""
        if not self._own_known:
            self._own_here = own_share_in_view(
                view, self._to_image(self.x[:2]), self.x[4:6], self.config.appearance
            )
            self._own_known = True
        return self._own_here

    def _holds_less_than(self, view, centre, size, own: float | None, ratio: float) -> bool:
        """Does the box ``size`` around ``centre`` (WORKING px) hold a share of own-target
        samples under ``ratio`` x ``own`` (the track's box's)? False where either has none
        to weigh (gray views, an empty track box)."""
        if own is None or own <= 0:
            return False
        share = own_share_in_view(view, centre, size, self.config.appearance)
        return share is not None and share < ratio * own
