"""Stage D's crossing hold: a tapped lock held through a look-alike walking across the person
(:class:`CrossingHold`, a part of :class:`~emts.stages.d_track.tracker.TargetTracker`;
``TrackerConfig.crossing_*``; the modes and their reasons: :mod:`emts.stages.d_track`).
"""

from __future__ import annotations

import numpy as np

from emts.stages.appearance import AppearanceView


class CrossingHold:
    """The crossing hold of :class:`~emts.stages.d_track.tracker.TargetTracker` (its state
    lives there)."""

    def _through_crossing(self, view: AppearanceView, match):
        """The appearance ``match`` (peak, stabilized centre, contrast) seen through a
        look-alike crossing the track (operator locks): on every ``crossing_every``-th locked
        frame (at ``pace_fps``) a wide half-resolution search looks for a second match of the
        template closing in on the track (:meth:`_look_for_rival`); its path, carried on at
        its walk, opens a hold where it meets the track (:meth:`_follow_rival`). While held,
        the walk before the crossing is kept and the match nearest the prediction (of the
        search's local maxima) measures the track, or nothing within ``crossing_reach``
        heights does (None: it coasts). Found on person12 with a pasted copy of the walker
        crossing them: the copy lies on top of the walker for 3-5 frames, and the plain
        match followed it away in 2 of 3 crossings."""
        c = self.config
        height = float(self.x[5]) / self._scale()  # (the size is kept in WORKING px)
        prediction = self.x[:2]
        self._rival_clock += 1
        every = max(int(round(c.crossing_every * self.fps / c.pace_fps)), 1)
        if not self._crossing and self._rival_clock >= every:
            self._rival_clock = 0
            self._look_for_rival(view, match, height, every)
        self._follow_rival(prediction, height)
        if not self._crossing:
            return match
        near = [
            (p, self._from_image(centre), match[2])
            for p, centre in self.appearance.other_maxima(c.crossing_rival)
        ]
        nearest = min([match, *near], key=lambda m: np.hypot(*(m[1] - prediction)))
        if np.hypot(*(nearest[1] - prediction)) > c.crossing_reach * height:
            return None
        return nearest

    def _look_for_rival(self, view: AppearanceView, match, height: float, every: int) -> None:
        """Search for a look-alike around the track; one that walked towards it since the
        last search (``every`` frames ago) sets the path :meth:`_follow_rival` carries on. A
        look-alike matches the template (at half resolution) at least ``crossing_rival``
        times as well as the person does there, and closes in on them on
        ``crossing_confirm`` searches in a row: the person's own shadow, which walks beside
        them, keeps its distance (but for a step of the search's jitter); and has their colours
        (:meth:`_is_them`). ``height``: the track's, in stabilized px like every distance
        here."""
        c = self.config
        prediction = self.x[:2]
        found = self.appearance.coarse_maxima(
            view.image,
            view.from_working,
            self._to_image(prediction),
            c.crossing_look * float(self.x[5]),  # (WORKING px, as the view is sampled)
            0.0,
        )
        found = [(p, self._from_image(centre)) for p, centre in found]
        apart = c.crossing_apart * height
        own = [p for p, centre in found if np.hypot(*(centre - match[1])) < apart]
        others = [
            centre
            for p, centre in found
            if own and p >= c.crossing_rival * own[0] and np.hypot(*(centre - match[1])) >= apart
        ]
        if not others:
            self._rival, self._rival_distance, self._rival_closing = None, np.inf, 0
            return
        if self._rival is None:  # the strongest first
            self._rival, self._rival_closing = others[0], 0
            self._rival_distance = float(np.hypot(*(others[0] - prediction)))
            return
        rival = min(others, key=lambda o: np.hypot(*(o - self._rival)))
        step = float(np.hypot(*(rival - self._rival)))
        distance = float(np.hypot(*(rival - prediction)))
        rate = c.pace_fps / self.fps
        # (at least one half-resolution sample: the search's positions jitter by about that)
        sample = 2.0 * self.appearance.step / self._scale()
        least = max(c.crossing_min_step * height * rate * every, sample)
        closing = step >= least and self._rival_distance - distance >= least
        # with the person's colours: the canopy of a tree also "walks" in the ground's frame
        # (parallax), and matched the striped shirt at half resolution on person12
        if closing and self._is_them(view, rival, self.x[4:6]):
            self._rival_closing += 1
            if self._rival_closing >= self.config.crossing_confirm:
                self._rival_path = (rival, (rival - self._rival) / every, 0)
        else:
            self._rival_closing = 0
        self._rival, self._rival_distance = rival, distance

    def _follow_rival(self, prediction: np.ndarray, height: float) -> None:
        """Carry a look-alike's walk on between searches: the hold opens when its path
        meets the track (``crossing_apart`` heights), and closes once it has passed (twice
        that away) or after ``crossing_hold`` frames (at ``pace_fps``)."""
        if self._rival_path is None:
            return
        c = self.config
        seen, velocity, frames = self._rival_path
        frames += 1
        self._rival_path = (seen, velocity, frames)
        now = seen + velocity * frames
        distance = float(np.hypot(*(now - prediction)))
        longest = max(int(round(c.crossing_hold * self.fps / c.pace_fps)), 1)
        meets = distance < c.crossing_apart * height
        if not self._crossing and meets:
            self._crossing = longest
            self._crossing_walk = self.x[2:4].copy()
        elif self._crossing and distance > 2 * c.crossing_apart * height > self._path_distance:
            self._crossing = 0  # it has passed (and left the person's box)
            self._rival_path = self._rival = None
        elif frames > 2 * longest:
            self._crossing = 0
            self._rival_path = self._rival = None
        self._path_distance = distance
