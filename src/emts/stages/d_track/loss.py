"""Stage D's honest loss: when a lock that is still measured has stopped seeing its person
(:class:`LossChecks`, a part of :class:`~emts.stages.d_track.tracker.TargetTracker`; the modes
and their reasons: :mod:`emts.stages.d_track`).

Two checks on every measured locked frame: a *stall* (a track followed by its appearance alone
that stops dead after walking has slid onto a static look-alike: the look and walk from before
the stall are restored) and, on colour frames, a box the appearance match alone holds with
none of a person's own colours in or around it (a cast shadow, flat ground) or with colours
unlike the lock's (a bush) for a few frames (:meth:`LossChecks._without_look`).
"""

from __future__ import annotations

import numpy as np

from emts.stages.appearance import AppearanceView
from emts.stages.d_track.identity import colour_signature, has_signature, similarity
from emts.stages.own_target import own_share_of_weight


class LossChecks:
    """The loss checks of :class:`~emts.stages.d_track.tracker.TargetTracker` (its state
    lives there)."""

    def _stalled(self, measured_by: str) -> bool:
        """Add this measured frame to the trail; has the track, followed by its appearance
        alone, stopped dead after walking (see ``TrackerConfig.stall_frames``)?

        Paces are image px per frame over ``stall_frames``; the walking pace is a running
        value over the windows in which the track walked (updated here).
        """
        self._trail.append(
            (
                self.x[:2].copy(),
                self.x[2:4].copy(),
                self.appearance.state(),
                measured_by != "appearance",
            )
        )
        c = self.config
        k = c.stall_frames
        if len(self._trail) <= k:
            return False
        trail = list(self._trail)
        now = float(np.hypot(*(trail[-1][0] - trail[-1 - k][0]))) / k * self._scale()
        walk = self._walk_pace
        if now >= c.walk_speed[0]:
            self._walk_pace = now if walk is None else 0.9 * walk + 0.1 * now
        detected = sum(d for *_, d in trail[-k:])
        return walk is not None and detected <= k // 4 and now < c.stall_ratio * walk

    def _failed_probation(self, view: AppearanceView | None) -> bool:
        """On the first measured frames after an operator's lock was re-found by its colours
        alone (``refind_colour_probation`` at ``pace_fps``): has the box lost the colours that
        re-found it (its likeness to the lock's signature, relative where the re-find's is,
        under ``refind_colour_identity``, or none)? Then it was not held on the person: on
        person12 the frozen look slid off a walker re-found in canopy shade (shade 230) and
        off one coming into the view (leave 1), `locked` on 3 and 4 frames."""
        if self._probation <= 0 or view is None:
            return False
        self._probation -= 1
        if self._refind_signature is None:
            return False
        here = self._similarity_at(view, *self.image_box(), refind=True)
        failed = here is None or here < self.config.refind_colour_identity
        if failed:
            self._probation = 0
        return failed

    def _without_look(self, view: AppearanceView | None, measured_by: str) -> bool:
        """Count this measured frame: has the appearance match alone followed the lock with
        none of a person's own colours in or around the box (no colour signature) on
        ``lost_without_look`` frames in a row, or with colours unlike the lock's (similarity
        below ``lost_unlike``) on ``lost_unlike_frames`` (both at ``pace_fps``)?"""
        c = self.config
        if not (c.lost_without_look or c.lost_unlike_frames) or not self._identity_on:
            return False
        if view is None:
            return False
        empty = unlike = measured_by == "appearance"
        if empty:  # (a detection's support: the detector sees a person here)
            centre, size = self.image_box()
            signature = colour_signature(view, centre, size, c.appearance)
            if signature is not None:
                empty = False
                unlike = similarity(signature, self._signature) < c.lost_unlike
            else:  # none in the box nor around it (the box's test first: the cheaper one)
                unlike = False
                reach = c.lost_without_look_reach * size
                empty = not has_signature(view, centre, reach, c.appearance)
        self._lookless = self._lookless + 1 if empty else 0
        self._unlike = self._unlike + 1 if unlike else 0
        rate = self.fps / c.pace_fps
        return (
            c.lost_without_look > 0
            and self._lookless >= max(int(round(c.lost_without_look * rate)), 1)
        ) or (
            c.lost_unlike_frames > 0
            and self._unlike >= max(int(round(c.lost_unlike_frames * rate)), 1)
        )

    def _emptied(self, view: AppearanceView | None) -> bool:
        """Count this measured frame: has an operator's lock's box held almost none of the
        person's own-target samples (under ``lost_empty`` x the share its look held as tapped)
        on ``lost_empty_frames`` measured frames in a row (at ``pace_fps``)? Colour frames."""
        c = self.config
        first = self._first_look
        if not c.lost_empty_frames or first is None or first.weight is None:
            return False
        if view is None or view.image.ndim != 3:
            return False
        tapped = own_share_of_weight(first.weight, first.look)
        here = self._own_share_here(view)
        empty = here is not None and here < c.lost_empty * tapped
        self._empty = self._empty + 1 if empty else 0
        rate = self.fps / c.pace_fps
        return self._empty >= max(int(round(c.lost_empty_frames * rate)), 1)

    def _enter_reacquire_before_stall(self) -> None:
        """Lost at a stall: the walk and the look from before it, coasting on from here."""
        k = self.config.stall_frames
        _, velocity, look, _ = self._trail[-1 - k]
        if look[0] is not None:
            self.appearance.restore(look)
        self.x[2:4] = velocity
        self._trail.clear()
        self._enter_reacquire()
