"""Stage D's reacquire mode: where a lost target can be by now and the ways it is found
again (:class:`Reacquisition`, a part of :class:`~emts.stages.d_track.tracker.TargetTracker`;
the modes and their reasons: :mod:`emts.stages.d_track`).

The re-lock paths, in the order tried each lost frame: the frozen look matched near the
coasted prediction by a region that walks (or, not for a walker who left the view, stands);
the places anywhere in the view with the lock's colours chained as a walk (for a walker who
left the view at once, for one lost inside it after ``refind_colour_after`` seconds);
a detection anywhere with the lock's colours chained over frames (:mod:`.identity`; for a
walker who left the view, faint detections too, a chain of them starting at its edge); a
detection near the prediction with the frozen embedding; one held there for 3 frames. On
colour frames each needs the lock's colours, and the re-lock is made at the person inside
the box (:func:`person_box`: not at their legs and long shadow).
"""

from __future__ import annotations

import cv2
import numpy as np

from emts.config import AppearanceConfig
from emts.stages.a_ego_motion import local_ground_motion
from emts.stages.appearance import AppearanceView
from emts.stages.d_track.identity import (
    colour_proposals,
    colour_signature,
    half_similarities,
    similarity,
)
from emts.stages.own_target import own_share_of_weight, own_target

_LOOK = AppearanceConfig()


def _normalize(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def person_box(
    view: AppearanceView,
    centre: np.ndarray,
    size: np.ndarray,
    height: float,
    look: AppearanceConfig | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """(centre, size), WORKING px, of the person in the box ``size`` around ``centre``: the
    largest connected region of own-target samples (:func:`~emts.stages.own_target.own_target`:
    neither the lit ground nor a darker sample of its colour, a shadow) that overlaps the box,
    looked for in the box grown by half its size each way. None on gray views, or where no
    such region is at least half ``height`` (the track's, WORKING px) tall."""
    grow = 0.5
    w, h = (max(int(round(float(v) * (1 + 2 * grow))), 4) for v in size)
    top_left = np.asarray(centre, float) - 0.5 * np.array([w, h], float)
    mask = own_target(view.image, view.from_working, top_left, (w, h), 1.0, look or _LOOK)
    if mask is None:
        return None
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8))
    x0, y0 = int(round(grow * float(size[0]))), int(round(grow * float(size[1])))
    x1, y1 = x0 + max(int(round(float(size[0]))), 1), y0 + max(int(round(float(size[1]))), 1)
    overlapping = np.unique(labels[y0:y1, x0:x1])
    overlapping = overlapping[overlapping > 0]
    if count < 2 or overlapping.size == 0:
        return None
    best = int(overlapping[np.argmax(stats[overlapping, cv2.CC_STAT_AREA])])
    left, top, width, tall = (int(v) for v in stats[best, :4])
    if tall < 0.5 * height:
        return None
    return top_left + np.array([left + 0.5 * width, top + 0.5 * tall]), np.array(
        [width, tall], float
    )


class Reacquisition:
    """The reacquire mode's methods of :class:`~emts.stages.d_track.tracker.TargetTracker`
    (its state lives there)."""

    def _relock_radius(self) -> float:
        """How far from the coasted prediction the target can be by now (stabilized px): a
        body height, growing per frame since the last measurement by ``relock_growth``
        heights or ``relock_walk`` times the walk's speed (before the loss, when lost),
        whichever is more, at most ``relock_max_radius`` and ``relock_max_heights`` body
        heights (the first is in stabilized px, which G's scale drifts away from the image's)."""
        c = self.config
        height = max(float(self.x[5]) / self._scale(), 1.0)
        velocity = self._lost_velocity if self.mode == "reacquire" else self.x[2:4]
        walk = c.relock_walk * float(np.hypot(*velocity))
        most = c.relock_max_radius
        if c.relock_max_heights > 0:
            most = min(most, c.relock_max_heights * height)
        return min(most, height + max(c.relock_growth * height, walk) * self.misses)

    def _try_relock(self, candidates, measurements, gammas, view):
        c = self.config
        self.misses += 1
        peak = None
        # 1. Appearance: the frozen template matched near the coasted prediction, by a region
        # that *moves* the same way over consecutive frames. An occluder, or ground that looks
        # like the target, stays put in stabilized coordinates and never re-locks.
        if view is not None and self.frozen_appearance is not None:
            self.appearance.restore(self.frozen_appearance)
            floor = max(c.appearance_threshold, c.relock_floor * (self.typical_peak or 1.0))
            found = self._peaks(view, self._search_radius(self._relock_radius()), floor)
            if self.typical_contrast is not None:  # flat ground or a smooth occluder: not them
                least = c.contrast_drop * self.typical_contrast
                found = [f for f in found if f[2] >= least and not self._surged(f[2])]
            found = [f for f in found if self._ahead_of_the_walk(f[1])]
            # ... without colours, farther than relock_look_alone_reach from the prediction
            # only where the detector sees someone too
            found = [f for f in found if self._look_alone_reaches(f[1], candidates)]
            # ... on colour frames, by a region holding a good part of the look's own-target
            # samples: the parallax of a canopy's edge moves it over the ground like a walker
            if found and c.relock_own_share > 0:
                found = [f for f in found if self._own_enough(view, f[1], c.relock_own_share)]
            peak = max((f[0] for f in found), default=None)
            moving = self._moving_match([f[1] for f in found], view)
            if moving is not None and not self._is_them(view, moving[0], self.x[4:6]):
                moving = None
            if moving is None:
                still = self._still_match(found, view)
                moving = None if still is None else (still, None)
            if moving is not None:  # at the chain's own velocity: it is walking (or stood)
                self._relock_with_frozen_look(moving[0], self.x[4:6], moving[1])
                return None, peak
        # ... and by their colours anywhere in the view, chained as a walk (a walker who left
        # the view at once; one lost inside it after refind_colour_after seconds)
        after = max(int(round(c.refind_colour_after * self.fps)), 1)
        lost_long = self._walked_out() or self.misses >= after
        if c.refind_colour and lost_long and self._identity_on and view is not None:
            refound = self._refind_by_colour(view)
            if refound is not None:  # with the look from inside the view, placed by it
                position, size, velocity = refound
                self.appearance.restore(self._inside_look or self.frozen_appearance)
                # (absolute colours: their mass sits on the shirt, not the box's centre, and
                # the look places the box; relative ones place it themselves: the look, taken
                # in other light, pulled it off the walker in the shade, and at the view's edge)
                if not c.refind_colour_relative:
                    match = self.appearance.search(
                        view.image, view.from_working, self._to_image(position),
                        0.5 * float(size[1]),
                    )  # fmt: skip
                    if match is not None:
                        position = self._from_image(match[1])
                self._relock_with_frozen_look(position, size, velocity)
                if self._operator:  # (TrackerConfig.refind_colour_probation)
                    rate = self.fps / c.pace_fps
                    self._probation = int(round(c.refind_colour_probation * rate))
                return None, peak
        # a walker who left the view comes back cut by its edge, first seen faintly: their
        # faint detections may re-find them too (the chain, the look and the walk as below)
        faint = self._faint if c.refind_faint and self._walked_out() else []
        if not candidates and not faint:
            self._spatial_streak = 0
            self._refinder.step([], [], lambda before, after: False)  # (a frame passes)
            return None, peak
        # the identity of every detection (colour frames): is it the person locked?
        similarities = self._similarities(view, candidates)
        refound = self._refind_with_faint(measurements, similarities, candidates, faint, view)
        if refound is not None and (
            self._holds_more_than_them(view, refound[2])
            or not self._like_in_both_halves(view, refound[2])
        ):
            refound = None
        if refound is not None:
            index, velocity, m = refound
            self._relock_with_frozen_look(m[:2], m[2:], velocity, detected=True)
            return (index if index < len(candidates) else None), peak
        if not candidates:
            self._spatial_streak = 0
            return None, peak
        inside = [
            i
            for i, (g, m) in enumerate(zip(gammas, measurements, strict=True))
            if g < c.relock_gate
            and np.hypot(*(m[:2] - self.x[:2])) <= self._relock_radius()
            and self._like(similarities[i])
        ]
        if not inside:
            self._spatial_streak = 0
            return None, peak
        strong = c.relock_identity_strong
        if strong > 0 and self._identity_on:
            # ... of the whole person (a detection of the upper body alone re-locked 18 px
            # above them, and the appearance then walked the lock away: occlude 60:69)
            least = c.reanchor_min_height * float(self.x[5])
            sure = [
                i for i in inside if similarities[i] >= strong and candidates[i].size[1] >= least
            ]
            if sure:
                best = max(sure, key=lambda i: similarities[i])
                m = measurements[best]
                self._relock_with_frozen_look(m[:2], m[2:], detected=True)
                return best, peak
        # Paths 2 and 3 re-lock on the detector's box and embedding, which a box of the
        # walker's legs and cast shadow shares: on colour frames they need more of the lock's
        # colours than the chains above (the shadow has none of them)
        least = c.relock_detection_identity
        if self._identity_on and least > c.identity_min:
            inside = [i for i in inside if (similarities[i] or 0.0) >= least]
            if not inside:
                self._spatial_streak = 0
                return None, peak
        # 2. A detection with the frozen embedding, inside the re-lock gate (never anywhere).
        if self.has_embedding:
            similarities = {
                i: float(self.frozen_template @ candidates[i].embedding) for i in inside
            }
            best = max(similarities, key=similarities.get)
            if similarities[best] > c.relock_similarity:
                m = measurements[best]
                self._relock(m[:2], m[2:], candidates[best].embedding, False, detected=True)
                return best, peak
        # 3. Spatial persistence inside the re-lock gate for 3 frames (template rebuilt).
        if self._spatial_streak == 0:
            self._spatial_trail = []
        self._spatial_streak += 1
        nearest = min(inside, key=lambda i: gammas[i])
        self._extend_spatial_trail(measurements[nearest][:2])
        if self._spatial_streak >= c.relock_frames and self._spatial_trail_walks():
            m = measurements[nearest]
            self._relock(m[:2], m[2:], candidates[nearest].embedding, True, detected=True)
            if view is not None:
                self._capture(view)
                self._restart_running_match()
            return nearest, peak
        return None, peak

    def _extend_spatial_trail(self, position: np.ndarray) -> None:
        """Path 3's trail: the nearest detection's stabilized ``position`` this frame, the last
        ``relock_frames`` kept; a step farther than a walker goes in a frame (``walk_speed``'s
        most, at ``pace_fps``) starts it afresh (another detection, not a walk)."""
        trail = self._spatial_trail
        fastest = self.config.walk_speed[1] * self.config.pace_fps / self.fps
        if trail and float(np.hypot(*(position - trail[-1]))) > fastest:
            trail = []
        self._spatial_trail = [*trail, position.copy()][-self.config.relock_frames :]

    def _spatial_trail_walks(self) -> bool:
        """May path 3's streak re-lock? An operator's lock without colours to tell who a
        detection is (``relock_spatial_walks``), only where its nearest detections walked: a
        trail of ``relock_frames`` frames at ``relock_min_pace`` or more (stabilized px a
        frame, at ``pace_fps``). A detection that stays put beside a hidden walker -- a statue,
        an occluder's edge -- re-locked there after 3 frames (gray person12 hidden on frames
        60-79: the lock went to a white statue 40 px above them and said ``locked`` there for
        67 frames). An automatic lock's re-lock is vetted by the verifier (a statue does not
        move like a person), and where people walk slowly in the image (PETS 2009 in gray,
        auto-lock) waiting for the pace cost frames on them."""
        trail = self._spatial_trail
        if not self.config.relock_spatial_walks or self._identity_on or not self._operator:
            return True
        if len(trail) < max(self.config.relock_frames, 2):
            return False
        pace = float(np.hypot(*(trail[-1] - trail[0]))) / (len(trail) - 1)
        return pace >= self.relock_min_pace()

    def _look_alone_reaches(self, position: np.ndarray, candidates) -> bool:
        """May the frozen look alone re-lock at stabilized ``position``? With colours (the
        identity checks it), always; without, within ``relock_look_alone_reach`` track heights
        of the prediction, or beside a detection (within a track height) farther away."""
        reach = self.config.relock_look_alone_reach
        if reach <= 0 or self._identity_on:
            return True
        height = max(float(self.x[5]) / self._scale(), 1.0)
        if float(np.hypot(*(np.asarray(position, float) - self.x[:2]))) <= reach * height:
            return True
        centre = self._to_image(np.asarray(position, float))
        near = float(self.x[5])  # (WORKING px, as the candidates)
        return any(float(np.hypot(*(k.centre - centre))) <= near for k in candidates)

    @property
    def _identity_on(self) -> bool:
        """Is there a colour signature of the lock to compare regions with (colour frames)?"""
        return self._signature is not None and self.config.identity_min > 0

    def _similarity_at(
        self, view, centre: np.ndarray, size: np.ndarray, refind: bool = False
    ) -> float | None:
        """The colour-signature similarity of the box ``size`` around ``centre`` (WORKING px)
        to the lock's (``refind``: to the colour re-find's, :attr:`_refind_signature`); None
        where the box has no signature (too few of a person's own colours: flat ground, a
        shadow)."""
        relative = refind and self.config.refind_colour_relative
        lock = self._refind_signature if refind else self._signature
        signature = colour_signature(view, centre, size, self.config.appearance, relative)
        return None if signature is None else similarity(signature, lock)

    @property
    def _refind_signature(self) -> np.ndarray | None:
        """The lock's signature the colour re-find compares with (relative to its ground
        with ``refind_colour_relative``)."""
        return self._relative_signature if self.config.refind_colour_relative else self._signature

    def _similarities(self, view, candidates) -> list[float | None]:
        """Each candidate's :meth:`_similarity_at` (all None without an identity check)."""
        if not self._identity_on or view is None:
            return [None] * len(candidates)
        return [self._similarity_at(view, k.centre, k.size) for k in candidates]

    def _like(self, similarity_: float | None) -> bool:
        """Is a region of this similarity to the lock's signature (None: it has none) the
        person locked? Without a signature of the lock (gray frames), any region may be."""
        if not self._identity_on:
            return True
        return similarity_ is not None and similarity_ >= self.config.identity_min

    def _is_them(self, view, position: np.ndarray, size: np.ndarray) -> bool:
        """Does the region at stabilized ``position`` (WORKING ``size``) have the lock's
        colour signature? True where there is none to compare."""
        if not self._identity_on or view is None:
            return True
        return self._like(self._similarity_at(view, self._to_image(position), size))

    def _refind_with_faint(self, measurements, similarities, candidates, faint, view):
        """:meth:`_refind` over the candidates and the ``faint`` ones after them: (index, velocity,
        its measurement) or None. A faint chain must start near the view's edge (within
        ``refind_faint_edge`` body heights: a person coming in is cut by it); it may then go on
        inside."""
        starts = None
        if faint:
            measurements = measurements + [self._to_stabilized(k) for k in faint]
            similarities = similarities + self._similarities(view, faint)
            x0, y0, x1, y1 = self._content
            near = self.config.refind_faint_edge * float(self.x[5])
            starts = [True] * len(candidates) + [
                min(k.centre[0] - x0, k.centre[1] - y0, x1 - k.centre[0], y1 - k.centre[1]) <= near
                for k in faint
            ]
        refound = self._refind(measurements, similarities, view, starts)
        return None if refound is None else (*refound, measurements[refound[0]])

    def _refind(
        self, measurements, similarities, view, starts=None
    ) -> tuple[int, np.ndarray] | None:
        """(candidate, velocity) where the person is found again anywhere in the frame."""
        if not self.config.refind_frames or not self._identity_on or view is None:
            return None
        positions = [m[:2] for m in measurements]

        def walks(before: np.ndarray, after: np.ndarray) -> bool:
            return self._moves_on_its_ground([before, after], view)

        self._pace_the_refinder(self._refinder)
        return self._refinder.step(positions, similarities, walks, starts)

    def _pace_the_refinder(self, refinder) -> None:
        """A walker (at least walk_speed[0] stabilized px a frame at pace_fps), moving at most
        refind_step body heights a frame at pace_fps (1.5 m/s is ~0.1 h at 10 fps), plus a
        quarter height of detection jitter."""
        c = self.config
        rate = c.pace_fps / self.fps
        height = max(float(self.x[5]) / self._scale(), 1.0)
        refinder.pace = c.walk_speed[0] * rate
        refinder.reach = (0.25 * height, c.refind_step * height * rate)

    def _ahead_of_the_walk(self, position: np.ndarray) -> bool:
        """Is ``position`` (stabilized px) where a person hidden while walking can be now?

        The re-lock region grows along the walk before the loss, not isotropically: the coast
        slows down (``coast_velocity_keep``), so a person who kept walking is ahead of the
        prediction, up to the re-lock radius; behind it by at most half a body height, and
        aside by at most a body height (or half the radius once that is larger).
        """
        speed = float(np.hypot(*self._lost_velocity))
        if speed < self.config.walk_speed[0]:  # no walk to follow: the isotropic radius
            return True
        height = max(float(self.x[5]) / self._scale(), 1.0)
        radius = self._relock_radius()
        along_unit = self._lost_velocity / speed
        offset = position - self.x[:2]
        along = float(offset @ along_unit)
        aside = abs(float(offset[0] * along_unit[1] - offset[1] * along_unit[0]))
        return -height / 2 <= along <= radius and aside <= max(height, radius / 2)

    def _own_enough(self, view: AppearanceView, centre: np.ndarray, ratio: float) -> bool:
        """Does the template's region at stabilized ``centre`` hold at least ``ratio`` x the
        (frozen) template's share of own-target samples? True without a colour mask."""
        look = self.appearance
        if look.weight is None:
            return True
        here = look.own_share_at(view.image, view.from_working, self._to_image(centre))
        return here is None or here >= ratio * own_share_of_weight(look.weight, look.look)

    def _peaks(self, view: AppearanceView, radius: float, floor: float):
        """Local NCC maxima (peak, stabilized centre) within ``radius`` stabilized px."""
        found = self.appearance.peaks(
            view.image,
            view.from_working,
            self._to_image(self.x[:2]),
            radius * self._scale(),
            floor,
        )
        return [(p, self._from_image(centre), contrast) for p, centre, contrast in found]

    def _refind_by_colour(self, view: AppearanceView):
        """(position, size, velocity) where the person is found again by their colours alone
        (:func:`~.identity.colour_proposals`: the detector misses a person larger than it was
        trained for, or cut by the view's edge), or None: the places whose colours most
        resemble the lock's signature, each with its own similarity (at least
        ``relock_identity_strong``), chained over ``refind_frames`` frames as a walk
        (:class:`~.identity.Refinder`, as detections are)."""
        c = self.config
        size = self.x[4:6]
        signature = self._refind_signature
        if signature is None:
            return None
        places = colour_proposals(
            view, signature, self._content, size, c.refind_colour, c.refind_colour_relative
        )
        similarities = [self._similarity_at(view, place, size, refind=True) for place in places]
        positions = [self._from_image(place) for place in places]
        self._pace_the_refinder(self._colour_refinder)
        # (a walker's pace, as the look's chains: places on paving and shade with a grey
        # walker's colours crept at 1-3 px a frame; refind_colour_pace: in body heights)
        pace = self.relock_min_pace()
        if c.refind_colour_pace > 0:
            height = max(float(self.x[5]) / self._scale(), 1.0)
            pace = c.refind_colour_pace * height * c.pace_fps / self.fps
        self._colour_refinder.pace = max(self._colour_refinder.pace, pace)
        found = self._colour_refinder.step(
            positions, similarities, lambda a, b: self._moves_on_its_ground([a, b], view)
        )
        return None if found is None else (positions[found[0]], size.copy(), found[1])

    def _moving_match(
        self, positions: list[np.ndarray], view: AppearanceView
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """(position, velocity) of a match that continues a chain of matches moving like a
        walker, or None.

        A match extends the previous frame's chain whose predicted next position (last
        position + last step) is nearest, within ``TrackerConfig.relock_consistency`` px plus a
        third of
        the step; every step must be between ``walk_speed`` bounds (stabilized px/frame).
        ``relock_appearance_frames`` consistent steps re-lock. Hopping between static
        look-alikes gives steps that disagree; an occluder gives no step at all.
        """
        c = self.config
        low, high = c.walk_speed
        chains = []
        for position in positions:
            best = None
            for chain in self._appearance_streak:
                step = position - chain[-1]
                speed = float(np.hypot(*step))
                if not low <= speed <= high:
                    continue
                if len(chain) >= 2:
                    expected = chain[-1] - chain[-2]
                    miss = float(np.hypot(*(step - expected)))
                    if miss > self.config.relock_consistency + speed / 3:
                        continue
                else:
                    miss = 0.0
                if best is None or miss < best[0]:
                    best = (miss, chain)
            chain = [*(best[1] if best else []), position]
            chains.append(chain[-(c.relock_appearance_frames + 1) :])
        self._appearance_streak = chains
        for chain in chains:
            if len(chain) <= c.relock_appearance_frames:
                continue
            # A walker covers ground; a look-alike edge swaying with parallax creeps.
            pace = float(np.hypot(*(chain[-1] - chain[0]))) / (len(chain) - 1)
            if pace >= self.relock_min_pace() and self._moves_on_its_ground(chain, view):
                return chain[-1], chain[-1] - chain[-2]
        return None

    def _still_match(self, found, view: AppearanceView) -> np.ndarray | None:
        """The position of a strong match with the lock's colours that has stayed in one place
        for ``relock_still_frames`` frames (a person who stopped while hidden), or None."""
        c = self.config
        # (an operator's lock: an automatic one re-locks only once the verifier sees it walk)
        on = c.relock_still_frames and self._operator and self._identity_on
        on = on and (c.still_after_exit or not self._walked_out())
        if not on or self.typical_peak is None:
            return None
        strong = [f for f in found if f[0] >= c.relock_appearance * self.typical_peak]
        best = max(strong, key=lambda f: f[0], default=None)
        if best is None or not self._is_them(view, best[1], self.x[4:6]):
            self._still_streak = []
            return None
        streak = self._still_streak
        if streak and np.hypot(*(best[1] - streak[-1])) > c.relock_consistency:
            streak = []
        self._still_streak = [*streak, best[1]]
        if len(self._still_streak) < c.relock_still_frames:
            return None
        return best[1]

    def _walked_out(self) -> bool:
        """Was the lost person walking when they went out of the view (not a person who
        stood while the camera swung away)?"""
        walking = float(np.hypot(*self._lost_velocity)) >= self.config.walk_speed[0]
        return self._left_view and walking

    def relock_min_pace(self) -> float:
        """Least stabilized px/frame of an appearance re-lock chain at the stream's frame rate
        (the same walking speed covers fewer px a frame at a higher rate)."""
        return self.config.relock_min_pace * self.config.pace_fps / self.fps

    def _moves_on_its_ground(self, chain: list[np.ndarray], view: AppearanceView) -> bool:
        """Does the match move relative to the ground around it (not only in stabilized
        coordinates, which drift off the ground plane in oblique views)?

        The ground's own motion from t-1 to t is the median LK flow of corners in a ring
        around the match; the match must differ from it by ``walk_speed[0]`` (image px).
        """
        if self._previous is None or view.working is None:
            return False
        previous_working, previous_g = self._previous
        before = previous_g[:2, :2] @ chain[-2] + previous_g[:2, 2]  # image px at t-1
        after = self._to_image(chain[-1])
        size = (float(self.x[4]), float(self.x[5]))
        ground = local_ground_motion(previous_working, view.working, before, size)
        if ground is None:
            return False
        return float(np.hypot(*((after - before) - ground))) >= self.config.walk_speed[0]

    def _relock_with_frozen_look(self, centre, size, velocity=None, detected=False) -> None:
        """Re-lock at ``centre`` (stabilized px), ``size``, moving at ``velocity`` (None: still);
        ``detected``: the box is a detection's (see :meth:`_relock`).

        The template stays the frozen one, the look from before the loss (captured afresh at a
        re-lock in tree shade, it drifted off the person as they left the shade); its running
        peak and contrast restart from here.
        """
        self._relock(centre, size, None, rebuild=False, detected=detected)
        if velocity is not None:
            self.x[2:4] = velocity
        self._restart_running_match()

    def _holds_more_than_them(self, view, measurement: np.ndarray) -> bool:
        """Is the detection ``measurement`` (stabilized centre, WORKING size) more than
        ``relock_wider_max`` times the person's width (the box reported: the track's, narrowed
        to the person where measured) with no one person in it to narrow it to
        (:meth:`_one_person_in`): the walker merged with their long shadow, a group? False
        on gray views (no one person can be looked for there)."""
        most = self.config.relock_wider_max
        if most <= 0 or view is None or view.image.ndim != 3:
            return False
        if float(measurement[2]) <= most * float(self._reported_size(self.x[4:6])[0]):
            return False
        centre = self._to_image(np.asarray(measurement[:2], float))
        return self._one_person_in(view, centre, measurement[2:], float(self.x[5])) is None

    def _like_in_both_halves(self, view, measurement: np.ndarray) -> bool:
        """Does each half of the detection ``measurement`` (stabilized centre, WORKING size)
        hold some of the colours of that half of the lock (``refind_half_identity``)? A
        person's cast shadow, dark throughout, shares at most their dark half's colours.
        True where there is nothing to compare (gray views, no signature)."""
        least = self.config.refind_half_identity
        if least <= 0 or not self._identity_on or view is None:
            return True
        centre = self._to_image(np.asarray(measurement[:2], float))
        look = self.config.appearance
        signature = colour_signature(view, centre, np.asarray(measurement[2:], float), look)
        if signature is None:
            return True
        return min(half_similarities(signature, self._signature)) >= least

    def _one_person_in(self, view, centre, size, height: float):
        """:func:`person_box` of the box ``size`` around ``centre`` (WORKING px, in the
        image), None where it finds none or a region more than ``relock_person_max`` times
        the box's width: no one person in it (a group, a patch of non-ground; PETS
        vtest.avi's auto-locks re-locked on twice their width)."""
        c = self.config
        found = person_box(view, centre, size, height, c.appearance)
        widest = c.relock_person_max * float(size[0])
        if found is None or (c.relock_person_max > 0 and found[1][0] > widest):
            return None
        return found

    def _relock(self, centre, size, embedding, rebuild: bool, detected: bool = False) -> None:
        """Re-initialize at a new origin: position from the measurement, velocity zero.

        A re-lock on a detector's box (``detected``) on colour frames (``relock_person_box``)
        is first narrowed or moved to the person in it (:func:`person_box`): a detection of
        their legs and long shadow, or of half of them, re-locked the track beside them and
        its next searches walked off. (Not a match of the look, nor a re-anchor: on person12's
        auto-lock runs that cost lock recall, 0.718 -> 0.683.)"""
        c = self.config
        view = self._frame_view
        if detected:  # a detection's box or the person's region in it: measured afresh
            self._forget_person_size()
        if detected and c.relock_person_box and view is not None:
            found = self._one_person_in(
                view, self._to_image(np.asarray(centre, float)), np.asarray(size, float),
                float(self.x[5]),
            )  # fmt: skip
            if found is not None:
                centre, size = self._from_image(found[0]), found[1]
            if float(np.asarray(size, float)[1]) < c.relock_whole_person * float(self.x[5]):
                size = self.x[4:6].copy()  # a part of the person: their size, at its centre
        covariance = np.array(c.lock_covariance, float)
        if c.relock_covariance_in_image:  # as uncertain in the image as at the lock
            covariance[:4] /= max(self._scale(), 1.0) ** 2
        self.mode = "locked"
        self.kf.start(centre, size, covariance)
        if embedding is not None and (rebuild or not self.has_embedding):
            self.template, self.has_embedding = _normalize(embedding), True
        self._spatial_streak = 0
        self._appearance_streak = []
        self._refinder.reset()
        self._colour_refinder.reset()
        self._anchor_offsets = []
        self._vetoes = 0  # a veto of the track before is not one of this new origin
        self._verified = False
        self._trail.clear()
        # (a re-anchor re-locks while locked: counted afresh)
        self._lookless = self._unlike = self._empty = 0
        self._probation = 0
        self.misses = 0
