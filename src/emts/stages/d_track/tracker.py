"""Stage D's tracker: one locked target, its modes (search, locked, reacquire) and
measurements. The method, the modes and their reasons: :mod:`emts.stages.d_track`."""

from __future__ import annotations

from collections import deque

import numpy as np

from emts.config import WORKING_SIZE, TrackerConfig
from emts.geometry import lift
from emts.io import DEFAULT_FPS
from emts.stages.appearance import AppearanceTemplate, AppearanceView
from emts.stages.d_track.crossing import CrossingHold
from emts.stages.d_track.identity import Refinder, colour_signature
from emts.stages.d_track.kalman import ConstantVelocityKalman
from emts.stages.d_track.loss import LossChecks
from emts.stages.d_track.own_share import OwnShareChecks
from emts.stages.d_track.person_size import PersonSize
from emts.stages.d_track.rebase import ScaleRebase
from emts.stages.d_track.relock import Reacquisition
from emts.stages.d_track.types import Candidate, LockCommand, Mode, TrackState
from emts.stages.own_target import own_share_in_view

_WHOLE_FRAME = (-0.5, -0.5, WORKING_SIZE[0] - 0.5, WORKING_SIZE[1] - 0.5)


def _normalize(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


class TargetTracker(
    Reacquisition, LossChecks, OwnShareChecks, CrossingHold, ScaleRebase, PersonSize
):
    """Tracks one locked target. Stages hold only their own state; the lock and the
    verifier's verdict come in as arguments of :meth:`update`.

    Example:
        >>> import numpy as np
        >>> tracker = TargetTracker()
        >>> e = np.eye(8)[0]
        >>> start = LockCommand(np.array([100., 80.]), np.array([10., 24.]), e, "auto")
        >>> tracker.update(np.eye(2, 3), [], lock=start).mode
        'locked'
        >>> seen = Candidate(np.array([101., 80.]), np.array([10., 24.]), 0.8, e)
        >>> state = tracker.update(np.eye(2, 3), [seen])
        >>> state.mode, state.associated
        ('locked', 0)
    """

    def __init__(self, config: TrackerConfig | None = None) -> None:
        self.config = c = config or TrackerConfig()
        self.kf = ConstantVelocityKalman(c.process_noise, c.measurement_noise, c.appearance_noise)
        self.fps = DEFAULT_FPS  # the stream's frame rate (the pipeline sets it)
        self.reset()

    @property
    def x(self) -> np.ndarray:
        """The Kalman state ``[x, y, vx, vy, w, h]`` (stabilized px)."""
        return self.kf.x

    @x.setter
    def x(self, value: np.ndarray) -> None:
        self.kf.x = value

    @property
    def p(self) -> np.ndarray:
        """The Kalman state's covariance (6x6)."""
        return self.kf.p

    @p.setter
    def p(self, value: np.ndarray) -> None:
        self.kf.p = value

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Drop the lock (mode ``search``)."""
        self.mode: Mode = "search"
        self.x = np.zeros(6)
        self.p = np.eye(6)
        self.g = np.eye(3)  # G_t: stabilized -> current image
        self._g_inverse = np.eye(3)
        self.template = np.zeros(8)
        self.frozen_template = np.zeros(8)
        self.has_embedding = False
        self.appearance = AppearanceTemplate(
            object_weight=self.config.appearance_object_weight, look=self.config.appearance
        )
        # the look when the lock was lost: AppearanceTemplate.state(), (patch, weight)
        self.frozen_appearance: tuple[np.ndarray, np.ndarray | None] | None = None
        # the look at the last measured frame with the template wholly inside the image
        # content (a walker who left the view is searched for by it: at the loss, the
        # template holds the black beyond the edge they walked over)
        self._inside_look: tuple[np.ndarray, np.ndarray | None] | None = None
        self._lost_velocity = np.zeros(2)  # stabilized px/frame when the lock was lost
        self.lock_height = 0.0
        self.misses = 0
        self._spatial_streak = 0
        self._spatial_trail: list[np.ndarray] = []  # path 3's nearest detections (stabilized)
        self._appearance_streak: list[np.ndarray] = []
        self._still_streak: list[np.ndarray] = []  # a strong match standing still, while lost
        self._veto_drops = True
        self._operator = False  # the lock is an operator's (a tap), not an automatic one
        self.typical_peak: float | None = None  # running NCC peak of this track's matches
        self.typical_contrast: float | None = None  # running contrast of the matched region
        self.reference_contrast: float | None = None  # the same, slow: the target's own
        self.reference_peak: float | None = None  # the running NCC peak, slow
        self._content = _WHOLE_FRAME  # this frame's image content (WORKING px)
        self._occluded = False  # the last match dropped suddenly: wait for a strong one
        self._detected_only = 0  # consecutive locked frames measured by a detection alone
        self._appearance_only = 0  # ... by the appearance match alone
        self._lookless = 0  # ... with no colour signature in the box (lost_without_look)
        self._probation = 0  # measured frames left to a colour re-find's probation
        self._unlike = 0  # ... with colours unlike the lock's there (lost_unlike)
        self._merge_hold = 0  # frames left in which the velocity stays (two people merged)
        self._crossing = 0  # measured frames left in which a look-alike crosses: walk held
        self._crossing_walk = np.zeros(2)  # the walk held meanwhile
        self._rival: np.ndarray | None = None  # the look-alike's centre when last searched
        self._rival_distance = np.inf  # ... and its distance from the track then
        self._rival_clock = 0  # locked frames since the last look-alike search
        self._rival_closing = 0  # consecutive searches in which it closed in
        # a look-alike closing in: (its centre when seen, its velocity a frame, frames since)
        self._rival_path: tuple[np.ndarray, np.ndarray, int] | None = None
        self._path_distance = np.inf  # ... its distance from the track on the last frame
        self._outside = 0  # consecutive lost frames with the coasted prediction off the image
        self._left_view = False  # lost: the person walked out of the view
        self._frame_view: AppearanceView | None = None  # this frame's, while it is updated
        self._faint: list[Candidate] = []  # this frame's faint detections (update)
        # the last measured frame's (stabilized position, G): was it at the image's edge?
        self._last_seen: tuple[np.ndarray, np.ndarray] | None = None
        self._colour = False  # the lock was made on a colour frame: no merge hold
        self._forget_person_size()  # (the box reported: PersonSize)
        # the track's box's own-target share this frame, once known (_own_share_here)
        self._own_here: float | None = None
        self._own_known = False
        self._empty = 0  # measured frames in a row with an emptied box (_emptied)
        self._previous: tuple[np.ndarray, np.ndarray] | None = None  # (working, G) at t-1
        # Stall check: (stabilized position, velocity, template, a detection took part) after
        # each of the last stall_frames + 1 measured locked frames.
        self._trail: deque[tuple[np.ndarray, np.ndarray, np.ndarray | None, bool]] = deque(
            maxlen=self.config.stall_frames + 1
        )
        self._walk_pace: float | None = None  # image px/frame while the track walked
        self._vetoes = 0  # consecutive vetoes of this lock
        self._verified = False  # the verifier has passed this lock at least once
        self._anchor_offsets: list[np.ndarray] = []  # re-anchor streak: detection - prediction
        self._first_look: AppearanceTemplate | None = None  # the operator's lock, as tapped
        self._signature: np.ndarray | None = None  # the lock's colour signature (identity)
        # ... relative to its ground (the colour re-find's, TrackerConfig.refind_colour_relative)
        self._relative_signature: np.ndarray | None = None
        c = self.config
        self._refinder = Refinder(c.refind_frames, c.identity_min)
        self._colour_refinder = Refinder(c.refind_frames, c.refind_colour_identity)

    def lock(self, candidate: Candidate | LockCommand, view: AppearanceView | None = None) -> None:
        """Lock now, on the current frame (``G_0 = I``); see also ``update(lock=...)``."""
        if isinstance(candidate, Candidate):
            candidate = LockCommand.from_candidate(candidate, "auto")
        c = self.config
        self.reset()
        if c.tap_person_box and candidate.source == "tap:detection" and view is not None:
            candidate = self._person_in_tapped_box(candidate, view)
        self.mode = "locked"
        self.kf.start(candidate.centre, candidate.size, c.lock_covariance)
        # A veto drops an automatic lock; an operator's lock is the operator's to drop, unless
        # configured otherwise (a veto then only stops template refreshes).
        self._operator = candidate.source.startswith("tap")
        self._colour = candidate.colour
        self._veto_drops = c.veto_drops_operator_locks or not self._operator
        if candidate.embedding is not None:
            self.template = _normalize(np.asarray(candidate.embedding, float))
            self.has_embedding = True
        self.lock_height = float(candidate.size[1])
        if view is not None:
            self._capture(view)
            if not self._veto_drops and self.appearance.patch is not None:
                self._first_look = self.appearance.copy()
            self._signature = colour_signature(view, candidate.centre, candidate.size, c.appearance)
            if c.refind_colour_relative:
                self._relative_signature = colour_signature(
                    view, candidate.centre, candidate.size, c.appearance, relative=True
                )

    @property
    def locked(self) -> bool:
        return self.mode != "search"

    @property
    def _doubted(self) -> bool:
        """The verifier's last classification of this lock was a veto."""
        return self._vetoes > 0

    # -------------------------------------------------------------- geometry
    def _from_image(self, point: np.ndarray) -> np.ndarray:
        inverse = self._g_inverse
        return inverse[:2, :2] @ point + inverse[:2, 2]

    # The appearance lives in image coordinates: in an oblique view a walker's apparent size
    # and orientation follow the camera, not the ground plane that G_t models.
    def _capture(self, view: AppearanceView) -> None:
        centre = self._to_image(self.x[:2])
        # An operator's lock: the upper part (TrackerConfig.appearance_upper); an automatic
        # one keeps the whole box, whose template also drives re-locks only the verifier vets
        # (cut, false verified auto-locks rose: 6 -> 9 on person-free footage, 86 -> 123
        # false-lock frames over person12's 16 auto-lock runs).
        upper = self.config.appearance_upper if self._operator else 1.0
        # On gray views an operator's lock's searches pick among close maxima by the look's
        # detail (AppearanceConfig.gray_detail_band: the cast shadow has the walker's shape,
        # not their detail). Automatic locks keep the plain NCC: on `emts eval reacq`'s
        # synthetic walkers it cost 422 -> 416 of 454 and one identity transfer.
        self.appearance.by_detail = self._operator
        self.appearance.capture(
            view.image, view.from_working, centre, self.x[4:6], self.config, upper
        )
        self._inside_look = None  # (another sampling step and offset)

    def _blend(self, view: AppearanceView, centre: np.ndarray, alpha: float) -> None:
        image_centre = self._to_image(centre)
        self.appearance.blend(view.image, view.from_working, image_centre, alpha)

    def _search(
        self, view: AppearanceView, radius: float, prior_radius: float | None = None
    ) -> tuple[float, np.ndarray, float] | None:
        """(NCC peak, matched centre in stabilized px, contrast) within ``radius`` stabilized
        px; the distance penalty that of a search within ``prior_radius`` (default: the
        same)."""
        prior = self.config.appearance_prior
        if prior_radius is not None and prior_radius > 0:
            prior *= (radius / prior_radius) ** 2
        match = self.appearance.search(
            view.image,
            view.from_working,
            self._to_image(self.x[:2]),
            radius * self._scale(),
            prior,
            self.misses > 0 and self.config.coast_in_image,
        )
        return None if match is None else (match[0], self._from_image(match[1]), match[2])

    def _locked_search_radius(self) -> float:
        """How far a held lock's appearance search reaches (stabilized px): 3 sigma, within
        ``search_radius``. Measured on the frame before, at most ``search_radius[1]`` px of the
        current frame: the stabilized frame's scale drifts on a long flight (person12: 10x by
        frame 450) and a bound in its px had the search reach 100+ px on every frame (the
        coarse-to-fine search, ~1-2 ms). Coasting, the bound stays in stabilized px: on
        person12 that wider reach is part of how a walker is re-found (bounded in current-frame
        px, leave 2 was re-found after 10 frames instead of 5), and at most
        ``relock_max_heights`` body heights, as a re-lock's reach (person12's follow runs: G's
        scale 7.9, 48 stabilized px 380 working px of a 26-px walker)."""
        c = self.config
        upper = c.search_radius[1]
        if not self.misses:
            upper /= self._scale()
        elif c.relock_max_heights > 0:
            upper = min(upper, c.relock_max_heights * float(self.x[5]) / self._scale())
        return self._search_radius(upper)

    def _scale_noise(self) -> None:
        """Q's and R's position terms, given in px of the current frame, in stabilized px
        (divided by G's scale squared); the size terms are in image px already."""
        c = self.config
        k = 1.0 / self._scale() ** 2
        q = c.process_noise
        self.kf.q = np.diag([q * k, q * k, 4 * q * k, 4 * q * k, q / 4, q / 4])
        r = np.array(c.measurement_noise, float)
        r[:2] *= k
        self.kf.r = np.diag(r)
        self.kf.r_appearance = np.eye(2) * c.appearance_noise * k

    def _scale(self) -> float:
        return float(np.sqrt(abs(np.linalg.det(self.g[:2, :2]))))

    def _to_stabilized(self, candidate: Candidate) -> np.ndarray:
        inverse = self._g_inverse
        centre = inverse[:2, :2] @ candidate.centre + inverse[:2, 2]
        return np.array([*centre, *candidate.size])

    def _to_image(self, stabilized: np.ndarray) -> np.ndarray:
        return self.g[:2, :2] @ stabilized + self.g[:2, 2]

    def image_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Current estimate mapped back to the image (WORKING px): (centre, size)."""
        return self._to_image(self.x[:2]), self.x[4:6].copy()

    # ------------------------------------------------------------------ gates
    def embedding_gate(self, height: float) -> float:
        """``eq:scalegate``: tau_e(h), scale-aware."""
        c = self.config
        if height <= c.scale_gate_ratio * self.lock_height:
            return c.embedding_threshold
        return max(
            c.embedding_floor,
            c.scale_gate_ratio * c.embedding_threshold * self.lock_height / height,
        )

    def _search_radius(self, upper: float) -> float:
        low, _ = self.config.search_radius
        sigma = np.sqrt(max(self.p[0, 0], self.p[1, 1]) + self.kf.r_appearance[0, 0])
        return float(min(max(3.0 * sigma, low), upper))  # (np.clip on a scalar: ~10 us)

    # ------------------------------------------------------------------ update
    def update(
        self,
        motion: np.ndarray,
        candidates: list[Candidate],
        verdict: bool | None = None,
        lock: LockCommand | None = None,
        release: bool = False,
        view: AppearanceView | None = None,
        content: tuple[float, float, float, float] | None = None,
        faint: list[Candidate] | None = None,
    ) -> TrackState:
        """Advance one frame.

        Args:
            motion: Stage A's ``M_t`` (2x3, WORKING px, frame t-1 -> t).
            candidates: this frame's detections.
            verdict: the verifier's verdict on this track: True (moves like a human), False
                (veto) or None (not classified).
            lock: lock on this target, given in this frame's coordinates (applied after
                ``M_t``, which then plays no part).
            release: drop the lock (before ``lock``, if both are given).
            view: the image the appearance measurement samples (None: detections only).
            content: ``(x0, y0, x1, y1)`` of the image content in WORKING px (the letterbox
                area); the target leaving it is lost. None: the whole working frame.
            faint: this frame's detections below the detector's threshold (down to
                ``TrackerConfig.refind_faint``): used only to re-find a walker who left the view.
        """
        self._faint = faint or []
        state = self._update(motion, candidates, verdict, lock, release, view, content)
        # kept for the next frame: local ground motion around a re-lock candidate
        self._previous = None if view is None or view.working is None else (view.working, self.g)
        return state

    def _update(self, motion, candidates, verdict, lock, release, view, content) -> TrackState:
        content = content or _WHOLE_FRAME
        self._content = content
        if release:
            self.reset()
        if lock is not None and lock.moves and self._holds_less(lock, motion, view):
            lock = None  # the tap's lock holds more of the person than the detection does
        if lock is not None:
            self.lock(lock, view)
            return self._state(None, None, None, content, event="lock")
        if self.mode == "search":
            return TrackState("search", None, None, None, None, 0)
        self._frame_view = view  # (a re-lock looks for the person in its box)
        c = self.config
        self.g = lift(motion) @ self.g  # G_t = H(M_t) G_{t-1}
        self._g_inverse = np.linalg.inv(self.g)  # once per frame, for every measurement
        if c.rebase_scale:
            self._rebase()
        if c.scale_aware_noise:
            self._scale_noise()
        if self.mode == "reacquire":  # coasting: a stop is likelier than a straight line
            self.x[2:4] *= c.coast_velocity_keep
        self.kf.predict()
        measurements = [self._to_stabilized(k) for k in candidates]
        gammas = [self.kf.innovation(m) for m in measurements]
        if verdict is not None:
            self._vetoes = self._vetoes + 1 if verdict is False else 0
            self._verified = self._verified or verdict is True
        # a lock the verifier has passed before is dropped after vetoes_to_drop vetoes in a
        # row; one it never passed, at the first
        vetoed = (
            verdict is False
            and self.mode == "locked"
            and self._veto_drops
            and self._vetoes >= (c.vetoes_to_drop if self._verified else 1)
        )
        event = None
        if vetoed:  # the verifier says this track does not move like a human: coast
            self._enter_reacquire()
            event = "lost"
        if self.mode == "locked":
            anchor = self._reanchor(candidates, measurements, view)
            if anchor is not None:
                return self._state(anchor, candidates, "relock", content, None, "relock")
            chosen, peak, measured_by = self._locked_step(
                candidates, measurements, gammas, verdict, view
            )
            if measured_by is not None:
                self._last_seen = (self.x[:2].copy(), self.g)
                if c.refind_colour and not self._overhangs(self.x[:2]):
                    self._inside_look = self.appearance.state()
            if measured_by is not None and self._stalled(measured_by):
                self._enter_reacquire_before_stall()
                return self._state(chosen, candidates, None, content, peak, "lost")
            if measured_by is not None and self._failed_probation(view):
                self._enter_reacquire()
                return self._state(chosen, candidates, None, content, peak, "lost")
            if measured_by is not None and self._without_look(view, measured_by):
                self._enter_reacquire()
                return self._state(chosen, candidates, None, content, peak, "lost")
            if measured_by is not None and self._emptied(view):
                self._enter_reacquire()
                return self._state(chosen, candidates, None, content, peak, "lost")
            if measured_by is None or not self._inside(content):
                self.misses += 1
                if self.misses >= c.reacquire_after_misses or not self._inside(content):
                    self._enter_reacquire()
                    event = "lost"
            return self._state(chosen, candidates, measured_by, content, peak, event)
        if self.mode == "reacquire" and not vetoed:
            chosen, peak = self._try_relock(candidates, measurements, gammas, view)
            if self.mode == "locked":
                return self._state(chosen, candidates, "relock", content, peak, "relock")
            # an automatic lock whose person walked off the image is not waited for long:
            # nobody chose them, and auto-lock is free again once the track is dropped
            self._outside = 0 if self._inside(content) else self._outside + 1
            self._left_view = self._left_view or self._outside > 0
            outside = (
                not self._operator
                and c.auto_give_up_outside is not None
                and self._outside >= max(1.0, c.auto_give_up_outside * self.fps)
            )
            if self.misses >= c.give_up_after or outside:  # lost for good: say so, stop
                self.reset()
                return TrackState("search", None, None, None, None, 0, peak, None, "dropped")
            return self._state(None, None, None, content, peak, event)
        return self._state(None, None, None, content, None, event)

    def _inside(self, content: tuple[float, float, float, float]) -> bool:
        x, y = self._to_image(self.x[:2])
        return content[0] <= x <= content[2] and content[1] <= y <= content[3]

    def _state(self, chosen, candidates, measured_by, content, peak=None, event=None):
        centre, size = self.image_box()
        # never report a box off the image (np.clip's wrapper costs ~4x its ufuncs here)
        centre = np.minimum(np.maximum(centre, content[:2]), content[2:])
        score = candidates[chosen].score if chosen is not None else None
        mode = self.mode
        # not seen for a while: the person may not be in the box; at once where the
        # appearance match was refused as an occluder (a sudden drop, a flattened, surged or
        # fading region)
        unseen = self.config.unseen_frames_locked
        if self._occluded:
            unseen = min(unseen, self.config.unseen_frames_occluded)
        if mode == "locked" and self.misses >= unseen:
            mode = "reacquire"
        person = self._person_size(size)  # (the box reported: PersonSize)
        return TrackState(
            mode, centre, size, score, chosen, self.misses, peak, measured_by, event, person
        )

    def _locked_step(self, candidates, measurements, gammas, verdict, view):
        c = self.config
        chosen, best = None, np.inf
        self._own_known = False  # (a new frame: _own_share_here)
        # Coasting widens the Kalman gate; no walker gets farther from the prediction than
        # a re-lock would search (a body height, growing per unmeasured frame).
        reach = self._relock_radius() if self.misses else np.inf
        for i, (k, gamma) in enumerate(zip(candidates, gammas, strict=True)):
            if gamma >= c.gate_mahalanobis:
                continue
            if np.hypot(*(measurements[i][:2] - self.x[:2])) > reach:
                continue
            similarity = float(self.template @ k.embedding) if self.has_embedding else 0.0
            if self.has_embedding and similarity <= self.embedding_gate(k.size[1]):
                continue
            cost = gamma - c.association_embedding_weight * similarity
            if cost < best and not self._a_shadow(view, k):
                best, chosen = cost, i
        # Unseen for unseen_frames_locked frames, the track is reported `reacquire`: what
        # measures it again re-locks it, and on colour frames a re-lock needs the person's
        # colours (after a look-alike took the lock, the template matched the walker's legs
        # and shadow 25 px below them and said `locked` there)
        unseen = (
            c.unseen_needs_identity
            and self.misses >= c.unseen_frames_locked
            and self._identity_on
            and view is not None
        )
        if unseen and chosen is not None:
            k = candidates[chosen]
            if not self._like(self._similarity_at(view, k.centre, k.size)):
                chosen = None
        match = None
        if view is not None:
            self.appearance.forget_search()
            unbounded = self._search_radius(c.search_radius[1])
            match = self._search(view, self._locked_search_radius(), unbounded)
            # (operator locks only: on person12's 16 auto-lock runs it cost lock recall,
            # 0.718 -> 0.631 mean)
            if c.crossing_hold and self._operator and match is not None:
                match = self._through_crossing(view, match)
        peak = None if match is None else match[0]
        # Occlusion: a match suddenly much weaker than the last accepted one is an occluder
        # (or the target gone), not the target. Until a match as strong as before the drop
        # returns, the appearance gives no measurement and learns nothing.
        previous = self.typical_peak
        if match is None or previous is None:
            needed = c.appearance_threshold
        elif self._occluded:
            needed = max(c.appearance_threshold, c.relock_appearance * previous)
        else:
            needed = max(c.appearance_threshold, c.occlusion_ratio * previous)
        # A match whose region lost most of its contrast is the person replaced by flatter
        # ground or an occluder, even where the NCC peak stays moderate (the template's margin
        # of ground still matches).
        contrast = self.typical_contrast
        flattened = (
            match is not None and contrast is not None and match[2] < c.contrast_drop * contrast
        )
        # NCC ignores contrast: a faint target's template also matches the edge of a bright,
        # textured occluder sliding over it, and a slowly refreshed template absorbs it. A
        # region far more contrasted than the target has been is not the target.
        surged = match is not None and self._surged(match[2])
        # A person walking out of the view: the template runs off the image content and its
        # match fades frame by frame (the running peak follows it down; the slow one does not)
        faded = (
            c.edge_fade > 0
            and match is not None
            and self.reference_peak is not None
            and match[0] < c.edge_fade * self.reference_peak
            and self._overhangs(match[1])
        )
        appearance_ok = (
            match is not None
            and match[0] >= needed
            and not flattened
            and not surged
            and not faded
            and self.kf.innovation(match[1], self.kf.r_appearance) < c.gate_mahalanobis
            and not (unseen and not self._is_them(view, match[1], self.x[4:6]))
        )
        # The frame the appearance drops (an occluder, the target gone): a detection there may
        # be the residual of where the target *was* (R holds frame t-1 as well as t), so it
        # may move the estimate but not turn the walk that coasting will follow.
        onset = match is not None and previous is not None and not appearance_ok
        onset = onset and not self._occluded
        if match is not None and previous is not None and not appearance_ok:
            self._occluded = True
        # Two people merged into the chosen detection (one walks past or crosses the target):
        # the blob moves as the pair does, and the NCC match may slide onto the other person.
        # For a while the measurements move the estimate, not the walk it carries on with.
        if chosen is not None and c.merge_area_ratio and not self._colour:
            width, height = candidates[chosen].size
            if width * height >= c.merge_area_ratio * self.x[4] * self.x[5]:
                self._merge_hold = c.merge_hold_frames
        walk = self.x[2:4].copy() if self._merge_hold else None
        self._merge_hold = max(self._merge_hold - 1, 0)
        if chosen is None and not appearance_ok:
            return None, peak, None
        # Measured again after unseen_frames_locked frames unseen (reported `reacquire`), the
        # lock is the person found again, as at a re-lock: the running peak and contrast of
        # the look's matches restart from here. They came back in other light or pose, and the
        # values from before refused them (`emts eval reacq`: back at 0.66x the contrast, at
        # more than the slow contrast's 1.5x, or fading at the view's edge against the slow
        # peak, and the next frame said `reacquire` on them).
        if c.match_restarts_on_return and self.misses >= c.unseen_frames_locked:
            self._restart_running_match()
            previous = contrast = None
        # The first measurement after a coast moves the estimate, not the walk: the position
        # jump spans the coasted frames (their covariance lets it turn the velocity)
        coasted = c.coast_keeps_walk and self.misses >= c.coast_keeps_walk
        before = self.x[2:4].copy() if coasted else None
        if chosen is not None:
            velocity = self.x[2:4].copy()
            self._accept(candidates[chosen], measurements[chosen], verdict)
            if onset:
                self.x[2:4] = velocity
        if appearance_ok:
            self.kf.update(match[1], self.kf.h_position, self.kf.r_appearance)
            self.misses = 0
        if before is not None:
            self.x[2:4] = before
        if walk is not None:
            self.x[2:4] = walk
        if self._crossing:  # a look-alike crossing: the walk is held
            self.x[2:4] = self._crossing_walk
            self._crossing -= 1
        # Template hygiene: a vetoed track never teaches the template. (Teaching verified
        # frames faster, as the paper does for the embedding, made the template drift on
        # person12.) At the matched position, not the filtered one: a lag would creep in.
        teach = appearance_ok and match[0] >= c.refresh_similarity and verdict is not False
        teach = teach and not self._crossing
        if appearance_ok:
            self._occluded = False
            keep = c.typical_peak_keep
            self.typical_peak = (
                match[0] if previous is None else keep * previous + (1 - keep) * match[0]
            )
            self.typical_contrast = (
                match[2] if contrast is None else keep * contrast + (1 - keep) * match[2]
            )
            slow, reference = c.reference_contrast_keep, self.reference_contrast
            self.reference_peak = (
                match[0]
                if self.reference_peak is None
                else slow * self.reference_peak + (1 - slow) * match[0]
            )
            self.reference_contrast = (
                match[2] if reference is None else slow * reference + (1 - slow) * match[2]
            )
        if view is not None and teach:
            self._blend(view, match[1], c.template_refresh)
        measured_by = (
            "both" if chosen is not None and appearance_ok else
            "detection" if chosen is not None else "appearance"
        )  # fmt: skip
        # The look changed (the person turned, left the shade) and only the detector follows
        # them: after relearn_after such frames the template is taken afresh where they are.
        self._detected_only = self._detected_only + 1 if measured_by == "detection" else 0
        self._appearance_only = self._appearance_only + 1 if measured_by == "appearance" else 0
        relearn = c.relearn_after
        if relearn and self._detected_only >= relearn and view is not None and verdict is not False:
            self._retake_look(view)
        return chosen, peak, measured_by

    def _restart_running_match(self) -> None:
        """Forget the running peak and contrast of the matches (a new look or origin)."""
        self.typical_peak = self.typical_contrast = self.reference_contrast = None
        self.reference_peak = None

    def _overhangs(self, position: np.ndarray, g: np.ndarray | None = None) -> bool:
        """Does the template placed at stabilized ``position`` (mapped by ``g``, default the
        current G) run off the image content?"""
        if self.appearance.patch is None:
            return False
        g = self.g if g is None else g
        low, high = self.appearance.bounds(g[:2, :2] @ position + g[:2, 2])
        content = self._content
        return bool(np.any(low < content[:2]) or np.any(high > content[2:]))

    def _retake_look(self, view: AppearanceView) -> None:
        """Take the appearance afresh where the track is; its running values restart."""
        self._capture(view)
        self._restart_running_match()
        self._occluded = False
        self._detected_only = 0
        self._appearance_only = 0

    def _reanchor(self, candidates, measurements, view) -> int | None:
        """Move a vetoed operator's lock -- or one measured by its appearance match alone for
        ``reanchor_after_appearance`` frames -- onto a detection that stays beside it (see
        ``TrackerConfig.reanchor_frames``); the index of that detection if it was done.

        The detection continuing the streak (its offset from the prediction changed by at most
        ``reanchor_consistency`` body heights), or else the best-scored one within a body
        height (``reanchor_appearance_reach`` heights when only the appearance run opened it),
        extends it. At ``reanchor_frames`` the detection becomes the new origin
        (position and size; the walk's velocity is kept) and the appearance is taken afresh
        there.
        """
        c = self.config
        first = self._first_look
        drifting = 0 < c.reanchor_after_appearance <= self._appearance_only
        if not (
            c.reanchor_frames
            and (self._doubted or drifting)
            and first is not None
            and view is not None
        ):
            self._anchor_offsets = []
            return None
        height = max(float(self.x[5]) / self._scale(), 1.0)
        reach = c.reanchor_appearance_reach if drifting and not self._doubted else 1.0
        if drifting and self._doubted and c.reanchor_reach_growth > 0:  # longer: farther
            longer = (self._appearance_only - c.reanchor_after_appearance) * c.pace_fps / self.fps
            reach = min(reach + c.reanchor_reach_growth * max(longer, 0.0), c.reanchor_reach_max)
        reach *= height
        offsets = {i: m[:2] - self.x[:2] for i, m in enumerate(measurements)}
        # A detection of the whole person (a head alone would shrink the track onto it) ...
        least = c.reanchor_min_height * float(self.x[5])
        near = [
            i
            for i, d in offsets.items()
            if np.hypot(*d) <= reach and candidates[i].size[1] >= least
        ]
        # ... and only where the operator's target, as tapped, fits better than where the
        # track is: the walker's shadow is detected beside them too, and walks with them.
        radius = c.reanchor_consistency * float(self.x[5])

        def fit(point: np.ndarray) -> float:
            match = first.search(view.image, view.from_working, self._to_image(point), radius)
            return -1.0 if match is None else match[0]

        if near:
            here = fit(self.x[:2])
            near = [i for i in near if fit(measurements[i][:2]) > here + c.reanchor_margin]
        # ... and, on colour frames, not onto a box with far less of a target in it than the
        # track's own: the walker's cast shadow, detected below them, is the ground darkened
        share_ratio = c.reanchor_own_share
        if near and share_ratio > 0:
            own = own_share_in_view(view, self._to_image(self.x[:2]), self.x[4:6], c.appearance)
            if own is not None and own > 0:
                box = [(candidates[i].centre, candidates[i].size) for i in near]
                near = [
                    i
                    for i, (centre, size) in zip(near, box, strict=True)
                    if (own_share_in_view(view, centre, size, c.appearance) or 0.0)
                    >= share_ratio * own
                ]
        best = None
        if self._anchor_offsets and near:
            last = self._anchor_offsets[-1]
            best = min(near, key=lambda i: np.hypot(*(offsets[i] - last)))
            if np.hypot(*(offsets[best] - last)) > c.reanchor_consistency * height:
                best = None
        if best is None:
            self._anchor_offsets = []
            if not near:
                return None
            best = max(near, key=lambda i: candidates[i].score)
        self._anchor_offsets.append(offsets[best])
        if len(self._anchor_offsets) < c.reanchor_frames:
            return None
        velocity = self.x[2:4].copy()
        self._relock(measurements[best][:2], measurements[best][2:], None, rebuild=False)
        self.x[2:4] = velocity
        self._retake_look(view)
        return best

    def _surged(self, contrast: float) -> bool:
        """Has the matched region far more contrast than the target's own (slow) value?"""
        reference = self.reference_contrast
        return reference is not None and contrast > self.config.contrast_rise * reference

    def _accept(self, candidate: Candidate, measurement: np.ndarray, verdict: bool | None) -> None:
        c = self.config
        shown = float(self._reported_size(self.x[4:6])[1])  # the height reported before
        self.kf.update(measurement, self.kf.h, self.kf.r)
        e = candidate.embedding
        if not self.has_embedding:  # a lock without a detection: the first one sets it
            self.template, self.has_embedding = _normalize(e), True
        self.template = _normalize(
            c.slow_template_keep * self.template + (1 - c.slow_template_keep) * e
        )
        if verdict:  # fast update only on verifier-approved frames (template hygiene)
            self.template = _normalize(
                c.fast_template_keep * self.template + (1 - c.fast_template_keep) * e
            )
        keep = c.lock_height_keep
        self.lock_height = keep * self.lock_height + (1 - keep) * float(candidate.size[1])
        self.misses = 0
        self._measure_person(candidate, shown)

    def _enter_reacquire(self) -> None:
        self.mode = "reacquire"
        self._merge_hold = 0
        self._lookless = self._unlike = self._empty = 0
        self._crossing = 0
        self._rival = None
        self._rival_path = None
        self._outside = 0
        # lost out of the view: the prediction off the image, or last seen at its edge
        seen = self._last_seen
        self._left_view = not self._inside(self._content) or (
            seen is not None and self._overhangs(*seen)
        )
        self._trail.clear()
        self._walk_pace = None
        self._lost_velocity = self.x[2:4].copy()  # the walk before the loss
        self.frozen_template = self.template.copy()
        self.frozen_appearance = None if self.appearance.patch is None else self.appearance.state()
        self._spatial_streak = 0
        self._appearance_streak = []
        self._still_streak = []
        self._refinder.reset()
        self._colour_refinder.reset()
