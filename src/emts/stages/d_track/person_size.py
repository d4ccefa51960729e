"""Stage D's reported box: the person's own size about the track's centre
(:class:`PersonSize`, a part of :class:`~emts.stages.d_track.tracker.TargetTracker`;
``TrackerConfig.person_width``, ``person_height``). The track's own box -- what the checks,
the searches and Stage E read -- stays the detector's; only the box reported
(``TrackState.person_size``, the pipeline's ``Target.box``) takes the person's size.
"""

from __future__ import annotations

import numpy as np

from emts.stages.d_track.types import Candidate


class PersonSize:
    """The reported box of :class:`~emts.stages.d_track.tracker.TargetTracker` (its state
    lives there: ``_width_share``, ``_width_clock``, ``_height_share``)."""

    def _forget_person_size(self) -> None:
        """A new origin: the box reported is the track's until detections measure it."""
        self._width_share: float | None = None  # the person's width over the detections'
        self._width_clock = 0  # detections that measured the lock since then
        self._height_share = 1.0  # the height reported over the track's (person_height)

    def _person_size(self, size: np.ndarray) -> np.ndarray | None:
        """The box reported for the track's ``size`` (WORKING px); None: ``size`` itself."""
        if self._width_share is None and self._height_share == 1.0:
            return None
        width = 1.0 if self._width_share is None else self._width_share
        return size * np.array([width, self._height_share])

    def _reported_size(self, size: np.ndarray) -> np.ndarray:
        """The box reported for the track's ``size``, whether or not it differs from it."""
        person = self._person_size(size)
        return size if person is None else person

    def _measure_person(self, candidate: Candidate, shown: float) -> None:
        """After ``candidate`` measured the track (the box reported ``shown`` px tall before
        the update): its height followed (:meth:`_follow_height`) and, on a lock made on a
        colour frame, its width looked into (:meth:`_measure_width_share`; gray video in
        three equal channels has no own-target pixels and would be looked into on every
        detection) on every ``person_width_every``-th detection, the first at once (~1 ms a
        look at 1280x720)."""
        c = self.config
        self._follow_height(float(candidate.size[1]), shown)
        if c.person_width and self._colour and self._frame_view is not None:
            if self._width_share is None or self._width_clock % c.person_width_every == 0:
                self._measure_width_share(candidate)
            self._width_clock += 1

    def _follow_height(self, detected: float, shown: float) -> None:
        """The height reported after a detection ``detected`` px tall measured the track (the
        box reported ``shown`` px tall before): a detection off it by more than
        ``person_height_band`` either way -- a part of the person (their upper body, their
        legs), or them with something else -- leaves it as it was; any other draws it back to
        the track's own (``person_width_keep`` a detection). The track's own box follows
        every detection (keeping its size on parts of the person lost the plain follow's
        walker in the shade, 1.000 -> 0.777 lock recall)."""
        c = self.config
        height = max(float(self.x[5]), 1e-6)
        low, high = c.person_height_band
        if c.person_height and not (low * shown <= detected <= high * shown):
            self._height_share = shown / height
        else:
            keep = c.person_width_keep
            self._height_share = keep * self._height_share + (1.0 - keep)

    def _measure_width_share(self, candidate: Candidate) -> None:
        """The person's width over ``candidate``'s on colour frames, from the one person in its
        box (:meth:`_one_person_in`: the largest region of own-target samples overlapping it)
        where that region is at least ``person_width_least`` of the box's height, as a running
        value (``person_width_keep``): the detector's box of a walker takes in what moves with
        them -- person12's long shadow: boxes 1.6x the walker's width."""
        c = self.config
        found = self._one_person_in(
            self._frame_view, candidate.centre, candidate.size, float(self.x[5])
        )
        if found is None or found[1][1] < c.person_width_least * float(candidate.size[1]):
            return
        share = min(float(found[1][0]) / float(candidate.size[0]), 1.0)
        before = self._width_share
        keep = c.person_width_keep
        self._width_share = share if before is None else keep * before + (1 - keep) * share
