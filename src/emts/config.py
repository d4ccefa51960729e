"""Every default of the method in one place, each with the paper section it comes from.

Sizes are ``(width, height)`` in pixels, as OpenCV takes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# §3.1: the system works on 640x512 frames; any input is letterboxed into this.
WORKING_SIZE = (640, 512)
# §3.2: Stage A runs on a 320x256 downsample.
STAGE_A_SIZE = (320, 256)
# §3.3/§3.4: Stage B and the detector run at 256x192 (stride 8 -> a 32x24 grid).
NETWORK_SIZE = (256, 192)
# §3.2 runs the phase-correlation fallback at 96x72. We use 160x128 by default (see
# EgoMotionConfig.phase_size): measured on low-texture and real scenes it halves the error of
# the recovered shift (mean 1.1-1.2 -> 0.5 working px) and runs faster (0.16 vs 0.24 ms),
# since 160x128 keeps the 5:4 aspect of the frame and has FFT-friendly sizes.
PAPER_PHASE_SIZE = (96, 72)
PHASE_SIZE = (160, 128)


@dataclass(frozen=True)
class EgoMotionConfig:
    """Stage A, §3.2 (eq. 1)."""

    max_corners: int = 120  # §3.2: up to 120 Shi-Tomasi corners
    corner_quality: float = 0.01  # Shi-Tomasi relative quality level
    corner_min_distance: float = 8.0  # px at 320x256; spreads corners over the frame
    corner_block_size: int = 3  # measured: sharper corners, lower registration error than 5-7
    # Corners are re-detected every this many frames (1: every frame, as §3.2); in between,
    # the previous frame's RANSAC inliers, where LK found them, are tracked on (saves the
    # Shi-Tomasi pass, a third of Stage A). Measured at 4: gust accuracy within noise. On the
    # real 10-fps clip uav123-person12 it first cost the detector of 2026-11-26 AP@0.25
    # (0.087 -> 0.074), so the default was every frame; with the detector and Stage C's
    # temporal mode that ship since 2026-11-27 it costs nothing there (recall / FP per frame /
    # AP@0.25 0.468 / 0.090 / 0.532 -> 0.463 / 0.060 / 0.543) and every tracking suite is
    # unchanged or better, hence 4 (docs/history.md, "Latency and robustness").
    corner_refresh_every: int = 4
    corner_refresh_fraction: float = 0.5  # ... and sooner when fewer inliers than this x max
    lk_window: int = 11  # px at 320x256 (odd); measured: 11 beats 15-21 in error and time
    lk_levels: int = 3  # pyramid levels above the base: reach ~ window * 2**levels
    lk_iterations: int = 20
    lk_epsilon: float = 0.03
    ransac_threshold: float = 2.0  # §3.2: 2-pixel reprojection threshold (at 320x256)
    ransac_confidence: float = 0.995
    ransac_max_iters: int = 500
    refine_iters: int = 10  # Levenberg-Marquardt refinement on the inliers
    min_tracks: int = 15  # §3.2: fall back below 15 surviving tracks ...
    min_inlier_ratio: float = 0.4  # §3.2: ... or below an inlier ratio of 0.4
    phase_size: tuple[int, int] = PHASE_SIZE  # fallback resolution; PAPER_PHASE_SIZE = §3.2's
    phase_min_response: float = 0.08  # phase-correlation peak below this -> identity
    min_texture_std: float = 1.0  # gray levels; a flatter frame has no usable motion -> identity
    max_translation_fraction: float = 0.25  # a shift beyond this fraction of the frame is rejected
    # Stage B's registration (not in the paper, whose Stage B warps by the similarity): a
    # homography fitted by RANSAC to the same LK tracks, the exact motion of flat ground under
    # any camera rotation and translation. An oblique camera that pans, tilts or rolls changes
    # the ground's perspective from frame to frame, which a similarity leaves in R and D as
    # misregistration that grows towards the frame's edges: on the real 10-fps clip
    # uav123-person12 the homography departs from the similarity by 3.8 px at the frame's
    # corners (median; 7.0 p90), and R's 90th percentile falls 0.036 -> 0.025. Everything else
    # (the tracker's stabilized frame, Stage C's memory, the verifier) keeps the similarity.
    homography: bool = True
    # ... rejected (Stage B falls back to the similarity) when it moves a frame corner farther
    # than this from where the similarity puts it (WORKING px; person12's max 11.8), or when it
    # explains under 90 % of the tracks the similarity does
    homography_max_deviation: float = 32.0
    # ... and used only where it explains the similarity's inliers clearly better: its mean
    # squared reprojection error at least this share below the similarity's. Eight parameters
    # fit noisy tracks a little better than four even where the motion is a similarity
    # (synthetic camera paths: 1-10 % lower, p10-p90), and that overfit only adds noise to R
    # (the demo's tap runs: 32 -> 29 of 36 seeds followed without this test); a real change
    # of perspective halves it (person12: median ratio 0.52; the homography is used on 152 of
    # the 200 motions of frames 1-201).
    homography_min_gain: float = 0.2


@dataclass(frozen=True)
class ChannelConfig:
    """Stage B, §3.3 (eq. 2)."""

    ego_compensation: bool = True  # False -> identity warp (the "w/o ego compensation" ablation)
    residual_blur: int = 5  # §3.3: G_5x5 Gaussian on |I_t - warped|
    # Where the previous frame is resampled onto the current one: "network" = its
    # network-size image, warped bilinearly (the paper's eq. 2 as written; the default, the
    # channels the shipped models were trained on); "working" = both 640x512 working frames
    # box-filtered over 3 px (about the area shrink's footprint) and sampled at the network
    # pixels' centres, the previous one through the camera motion. A sub-pixel warp at the
    # network size smooths the ground's texture by an amount that depends on the motion's
    # fraction of a pixel, and that texture stays in R wherever the camera moves; "working"
    # leaves far less (R's level on the synthetic sets 0.0108 -> 0.0076). Candidate U: the
    # thermal model runs it (each model records its warp, Detector.stage_b_warp, and the
    # pipeline builds Stage B for it); reports/real/candidates/u_stage_b_working_warp.md.
    warp_at: str = "network"
    # Frames between the two images R is the residual of: 1 = the previous frame (eq. 2, R =
    # G * |D|); n > 1 = the frame n back, brought onto this one through the product of Stage
    # A's last n motions, while D stays the previous frame's difference (a person walking
    # v px/frame leaves n x v px of residual in R, and D still says where they are now: the
    # slow walker's lever, issue 8). The first frames of a stream use the oldest they have.
    residual_baseline: int = 1


@dataclass(frozen=True)
class AppearanceConfig:
    """The target's look (:mod:`emts.stages.appearance`; SPEC §0, not in the paper): which
    samples of a colour view are the target's own, and how wide searches are run.

    The target's own pixels (colour views). A walker's cast shadow joins them at the feet,
    walks with them and, dark and sharp on sunlit paving, matched a gray or colour template
    of the walker better than the walker did: person12 beyond its labels, tapped at frame
    200, the lock slid down onto the shadow by frame ~250 whatever the template's extent. A
    shadow is the ground darkened with its colour kept; the person's shirt, skin and hair
    are not.
    """

    ground_percentiles: tuple[int, int] = (50, 90)  # the lit ground: samples in this band
    object_contrast: float = 30.0  # a sample differs from the ground by this much somewhere ...
    shadow_ratio: float = 0.85  # ... and is a shadow when darker than this share of the ground
    shadow_chroma: float = 0.25  # ... with its channel ratios to the ground this close together
    min_chroma: float = 2.0  # a context whose channels never differ by this much is gray
    min_object_samples: int = 12  # a mask needs this many own-target samples ...
    min_object_share: float = 0.03  # ... and this share of the template
    weight_every: int = 4  # the own-target weight is refreshed on every 4th blend of the patch
    own_weight: float = 0.5  # a sample is the target's own where its running weight reaches this
    # Searches wider than this many positions look at half resolution first: late in person12
    # (G_t scaled ~3x) a reacquire frame matched the frozen template over most of the image
    # and cost 60-140 ms, and a locked search widened by the Kalman uncertainty up to 92 ms.
    fine_search_max: int = 161 * 161
    coarse_slack: float = 0.15  # half-resolution candidates may score this much under the floor
    coarse_candidates: int = 5  # a wide locked search refines this many half-resolution maxima


@dataclass(frozen=True)
class TrackerConfig:
    """Stage D, §3.5 (eqs. 6-7)."""

    process_noise: float = 1.0  # §3.5: q; Q = diag(q, q, 4q, 4q, q/4, q/4)
    measurement_noise: tuple[float, float, float, float] = (4.0, 4.0, 9.0, 9.0)  # §3.5: R, px^2
    gate_mahalanobis: float = 9.21  # §3.5: chi^2 0.99, 2 DoF
    embedding_threshold: float = 0.5  # §3.5: tau_0 of the scale-aware gate (eq. 7)
    embedding_floor: float = 0.2  # eq. 7: lower bound of tau_e for a grown target
    scale_gate_ratio: float = 1.5  # eq. 7: tau_e relaxes once h > 1.5 h_lock
    association_embedding_weight: float = 4.0  # §3.5: choose min(gamma^2 - 4 s)
    slow_template_keep: float = 0.98  # §3.5: m <- norm(0.98 m + 0.02 e) on every accept
    fast_template_keep: float = 0.95  # §3.5: faster update on verifier-approved frames only
    lock_height_keep: float = 0.995  # §3.5: h_lock follows a slow EMA (minutes, not frames)
    reacquire_after_misses: int = 8  # §3.5: consecutive gate failures before reacquisition
    relock_similarity: float = 0.65  # §3.5: frozen-template similarity that re-locks
    relock_gate: float = 16.0  # §3.5: spatial re-lock gate gamma^2 ...
    relock_frames: int = 3  # ... held for 3 consecutive frames
    # Second measurement (SPEC §0): normalized cross-correlation of a gray template of the
    # target, searched in stabilized coordinates around the Kalman prediction. Not in the paper.
    appearance_margin: float = 0.1  # template = box grown by this fraction of w/h each side
    appearance_min_size: int = 9  # px; a smaller template side is grown to this
    # An operator's lock takes its template from the box's upper part only (plus the margins):
    # a walker's own cast shadow joins them at the feet and, darker and steadier than the legs,
    # pulled the match down onto itself (person12 gust seeds 4 and 25). 0.6 lost the person at
    # --remove 150:165. Automatic locks keep the whole box (see TargetTracker._capture).
    appearance_upper: float = 0.8
    # On colour frames a locked track's NCC is blended with the NCC over the template's own target
    # samples (inside the box, not the ground, not a shadow on it:
    # emts.stages.appearance.object_pixels), with this weight (0: off; re-locks keep the plain
    # NCC). person12 tapped at frame 200, past its labels (CSRT pseudo-labels to 300): the walker's
    # cast shadow pulled the plain match and the lock onto itself by frame ~250 (lock recall 0.43 ->
    # 1.00). The masked NCC alone (~50 samples) also matched flat inpainted ground where the person
    # was hidden (--remove 150:165 0.81, gust 2 0.46); 0.5 did not hold the walker past frame 200
    # (0.54), 0.6-0.85 did.
    appearance_object_weight: float = 0.7
    appearance_threshold: float = 0.3  # NCC peak that counts as a measurement while locked
    appearance_noise: float = 2.0  # px^2, R of the NCC position measurement (stabilized px)
    search_radius: tuple[float, float] = (10.0, 48.0)  # (min, max) stabilized px, from 3 sigma
    # The search picks max NCC - prior * (d / radius)^2, d from the Kalman prediction: in tree
    # shade the walker's peak fell below shade peaks 15-35 px away (person12 frames 87-91).
    appearance_prior: float = 0.3
    template_refresh: float = 0.1  # blend of the current patch into the template ...
    refresh_similarity: float = 0.4  # ... only where the match is at least this strong
    relearn_after: int = 4  # locked frames measured by detections alone -> template re-taken
    occlusion_ratio: float = 0.6  # a peak below this fraction of the running one: occluded
    typical_peak_keep: float = 0.3  # running NCC peak of accepted matches (fast: sudden drops)
    contrast_drop: float = 0.7  # matched region's std below this fraction of the running one
    contrast_rise: float = 1.5  # ... or above this multiple of the slow running one: occluded
    reference_contrast_keep: float = 0.9  # the slow running contrast (the target's own)
    relock_appearance: float = 0.85  # after a drop, a peak this fraction of the running one
    relock_appearance_frames: int = 2  # re-lock: a match moving like a walker over 2 steps
    relock_floor: float = 0.55  # re-lock matches: NCC peak >= this fraction of the typical one
    # ... and, on colour frames, a region holding at least this fraction of the frozen template's
    # share of own-target samples (emts.stages.appearance.object_pixels; 0: off). person12
    # tapped at 0, past its labels: the edge of a canopy, whose parallax moves it like a walker,
    # re-locked at frame 302 with none of them and held the lock for 130 frames.
    relock_own_share: float = 0.5
    walk_speed: tuple[float, float] = (0.7, 15.0)  # (min, max) stabilized px/frame of a walker
    relock_min_pace: float = 2.0  # re-lock chain: mean stabilized px/frame from first to last
    pace_fps: float = 10.0  # ... at this frame rate (person12's); scaled to the stream's
    relock_max_radius: float = 96.0  # re-lock searches at most this far (stabilized px) ...
    relock_growth: float = 0.05  # ... within a body height growing by this many per lost frame
    # ... or by this many times the walk's speed before the loss, whichever is more: a walker
    # hidden behind a tree keeps walking, and may turn, while the coasted prediction slows
    # down (demo scenes: 30-frame occlusions left walkers 45-80 px from it, outside a radius
    # growing by heights alone and capped at 64 px).
    relock_walk: float = 1.5
    # Stall: a track measured by its appearance alone that stops dead after walking has most
    # likely slid onto an occluder's edge that looks like the target (a bright crown over a
    # warm walker): its pace over the last ``stall_frames`` fell below ``stall_ratio`` x its
    # running walking pace (a detection on at most a quarter of those frames). It is then
    # lost (reacquire), coasting on with the walk and the template from before the stall.
    stall_frames: int = 8
    stall_ratio: float = 0.25
    veto_drops_operator_locks: bool = False  # a veto drops auto-locks; tap locks only if True
    # An automatic lock is dropped after this many consecutive vetoes (the verifier classifies
    # every 8th frame): one dip of a real walker's P(human) under the threshold is common
    # (person12's auto-lock runs: 37 of 44 losses were a veto of a track on the walker).
    # A lock the verifier never passed is dropped at its first veto
    vetoes_to_drop: int = 2
    # Re-anchor: while the verifier's last classification vetoed an operator's lock, a
    # detection held within a body height of the track, at a steady offset from it, for
    # ``reanchor_frames`` consecutive frames becomes the track's new origin and appearance
    # (the template slid off the person onto their legs and shadow; person12, gust seed 4).
    reanchor_frames: int = 3  # 0: off
    reanchor_consistency: float = 0.25  # offset change allowed per frame, in body heights
    reanchor_margin: float = 0.1  # the tapped look fits the detection by this much NCC more
    # On colour frames, not onto a detection whose box holds less than this fraction of the track's
    # share of own-target samples (emts.stages.appearance.object_pixels; 0: off): the walker's
    # cast shadow is detected below them and walks with them. person12 tapped at frame 0,
    # pseudo-labels to 300: a vetoed lock re-anchored onto it at frame 236 (0.79 -> 1.00).
    reanchor_own_share: float = 0.5
    reanchor_min_height: float = 0.75  # a detection at least this fraction of the track's height
    # ... and likewise, unvetoed, after this many consecutive frames measured by the appearance
    # match alone (0: off), reaching this many body heights: the match re-made after an
    # occlusion on the walker's shadow held it there while the detector found the walker a
    # height away (demo scenes, since 2026-11-28).
    reanchor_after_appearance: int = 8
    reanchor_appearance_reach: float = 1.5
    give_up_after: int = 300  # frames without a measurement before reacquire gives up (search)
    # ... and an automatic lock's after this many seconds with the coasted prediction off the
    # image: the person walked out of view, and auto-lock finds no one else while the track
    # coasts (PETS 2009 vtest.avi: a walker's lock coasted 300 frames at the left edge).
    # An operator's lock waits give_up_after frames: the operator chose that person. None: off
    auto_give_up_outside: float | None = 1.0
    coast_velocity_keep: float = 0.95  # velocity decays while coasting (a stop is likelier)
    # Two people merging (frames without colour): a detection at least this many times the
    # track's area (w * h) holds someone beside the target, who walks past or crosses them. For
    # merge_hold_frames frames from the last such frame the measurements move the estimate but
    # not its velocity, so that the walk before the merge, not the pair's blob, carries the
    # track out of it. Not on colour frames, where a person's box varies more (person12's
    # auto-lock runs lost 0.03 with it). 0: off.
    merge_area_ratio: float = 2.5
    merge_hold_frames: int = 8
    # Initial state covariance of a (re-)lock: position px^2, velocity (px/frame)^2, size px^2.
    lock_covariance: tuple[float, ...] = (4.0, 4.0, 25.0, 25.0, 9.0, 9.0)
    relock_consistency: float = 4.0  # an appearance re-lock's matches agree within this (px)
    appearance: AppearanceConfig = field(default_factory=AppearanceConfig)  # the target's look


@dataclass(frozen=True)
class VerifierConfig:
    """Stage E, §3.6."""

    roi_size: tuple[int, int] = (24, 48)  # §3.6: (w, h) the track ROI is resampled to
    grid: tuple[int, int] = (2, 4)  # §3.6: (columns, rows) head to legs
    orientation_bins: int = 4  # §3.6: magnitude-weighted orientation histogram per cell
    window: int = 16  # §3.6: frames per descriptor window (~one gait cycle)
    every: int = 8  # §3.7: classify every 8th frame per track
    roi_margin: float = 0.15  # ROI = box grown by this fraction on each side
    # A track's box wider than this many times its height is narrowed about its centre
    # before its ROI is cut (where the ROI is cut: the working frame for the shipped model);
    # None: as it is. 0.5 is the ROI's own shape: a wider box was squeezed into it, and the
    # ground beside the person diluted the motion of the legs. The default detector boxes
    # uav123-person12's 18x42-px walker 28x39: P(human) of that tap lock, mean over its
    # classifications, 0.53 -> 0.70 narrowed (on the labelled box 0.66). At run time only:
    # the training windows are cut from the boxes as labelled or proposed.
    roi_max_aspect: float | None = 0.5
    threshold: float = 0.5  # P(human) below this is a veto
    # The model sees flow in px per 1/30 s: descriptors of a stream at another frame rate are
    # rescaled by fps / 30 (measured on uav123-person12 at 10 fps: median P(human) of the
    # walker 0.17 -> 0.93, ground-fixed boxes 0.22 either way).
    reference_fps: float = 30.0


@dataclass(frozen=True)
class BoxFitConfig:
    """Stage C's colour evidence (not in the paper: :mod:`emts.stages.c_detect.boxfit`): boxes
    fitted to the person's own pixels on colour frames, scored up where they fit and move, down
    where they do not move. Chosen on uav123-person12 frames 1-201 (the real RGB development clip;
    docs/history.md, "Colour evidence"): the closing, the context and the bonus were varied there;
    the trimmed fit was designed there and its acceptance on frames 202-300 of the same clip
    (docs/history.md, "Trimmed fits"); the motion check's factor looking at person12 and PETS 2009
    vtest.avi (docs/history.md, "Only what moves is scored up")."""

    person_aspect: float = 0.45  # w / h of a standing person: a wider box is a part of one
    context: float = 1.0  # own pixels looked for this many person heights around the centre
    close: float = 1 / 6  # vertical closing, in person heights (belt, knees)
    seed_share: float = 0.05  # a part counts with this share of the box's area inside it
    max_height: float = 2.2  # fitted box at most this many person heights tall ...
    max_width: float = 1.8  # ... this many box widths (at least a person's) wide ...
    min_height: float = 0.7  # ... and at least this fraction of the box's height
    max_boxes: int = 8  # a frame's highest-scoring boxes fitted (~0.3-0.6 ms each on x86)
    # Where the parts merged with something above or below the person (tree shade at the
    # feet, a flower bed behind the head) and came out too tall or too wide: the parts' pixels
    # in the box's column band (the box +- this share of its width) ...
    trim_margin: float = 0.25
    # ... over the rows around the box's centre whose pixels outside the band stay under this
    # share of the band's width. Kept only where that cut rows and the box stays no wider than
    # tall (merged sideways: a car, a hedge, not a person). None: no trimming
    trim_spill: float | None = 0.5
    # a box that fits a person's own pixels is evidence of a person: its score rises by this
    # (boxes from tau_s - bonus are fitted). 0: boxes fitted, scores as the network's
    bonus: float = 0.1
    # ... where the fitted box also moves: Stage B's R somewhere inside it at least this many
    # times the frame's residual level (R's 90th percentile). A door panel, a tripod, a bag
    # -- person-sized, their own colour, static -- scored near tau_s by their look alone are
    # not lifted (PETS 2009 vtest.avi: 2 in 3 of the lifted false positives). None: no check
    min_motion: float | None = 2.0
    # ... and a box it checks that does not move (fitted or not) scores this much lower: the
    # network scores a white bag or door panel on a still camera 0.3-0.6 by its look alone
    still_penalty: float = 0.1


@dataclass(frozen=True)
class AcquisitionConfig:
    """How a lock starts: operator tap (SPEC §0) and auto-lock (§6.7)."""

    autolock_frames: int = 3  # §6.7: the strongest detection, stable for 3 consecutive frames
    autolock_threshold: float = 0.35  # §6.7: the auto-lock stands at P(human) >= 0.35
    # ... and where the track covered at least this many of its heights over the ground in
    # the verifier's 16-frame window (a walker: ~0.75 at 30 fps). Not in the paper. The
    # verifier is taught that a standing person is human (kind "person-still", labelled 1):
    # it called a parked car and static warm blobs human at 0.5-0.96 for up to 160 frames
    # (`emts eval autolock`, the mirrored thermal candidate). Nobody chose an auto-lock's
    # target: only something that walks may take it. None: off (as before 2026-12-02).
    autolock_min_travel: float | None = 0.2
    # Opt-in: once accepted, an auto-lock whose track stands still (under autolock_min_travel)
    # is vetoed at each classification as one the verifier rejects. Off by default: on PETS
    # 2009 vtest.avi (real walkers who pause) it cost 2.7 % of the frames locked on a walker
    # (benchmarks/pets_autolock.py --gusts 5: 2185 -> 2127) for nothing fewer on nothing
    # (45 -> 43); on synthetic person-free gray footage it took the mirrored thermal model's
    # verified false-lock frames from 5.7 % to 4.6 % (the previous thermal model's 4.0 -> 3.9).
    autolock_still_veto: bool = False
    # A tap takes the detection whose box (grown by this fraction) holds the tapped point and
    # whose centre lies on the blob under it (below; grown alike: else it is a neighbour's) ...
    tap_detection_margin: float = 0.25
    # ... unless that box is this many times wider than the blob under the point (below): a
    # coarse box whose appearance template would hold ground beside the person and slide on
    # it (a distilled detector's 41-px box on person12's 19-px walker, tap at frame 25)
    tap_detection_max_widen: float = 1.5
    # On frames without colour (thermal), the box taken (detection or blob) is then
    # re-centred on the tapped point where the point lies more than this fraction of its size
    # off its centre (either axis): the largest box centred on the point inside it, no
    # smaller than tap_recentre_floor of it per axis. Two people 0.3-0.6 heights apart are
    # one detection and one blob; centred between them, the lock had even odds of following
    # the other one when they parted (HIT-UAV val: benchmarks/group_taps.py). A fifth, not a
    # tenth: a tap a little off a lone person's centre narrowed a good box (demo seeds
    # tracked 61 of 72 before, 56 at a tenth, 60 at a fifth). Not on colour frames
    # (tap_recentre_colour): there a person is no uniform blob -- shirt, legs, shadow -- and
    # a tap a quarter of a height low re-centred the lock on the legs (person12's offset
    # suite 0.960 -> 0.920). 0 -> never (as before 2026-11-29, night).
    tap_recentre_offset: float = 0.2
    tap_recentre_floor: float = 0.5
    tap_recentre_colour: bool = False
    # ... else the blob around the point that differs from the local ground level (median of
    # this (w, h) window, WORKING px) by at least this many gray levels ...
    tap_window: tuple[int, int] = (81, 121)
    tap_min_contrast: float = 12.0
    tap_size_limits: tuple[float, float] = (6.0, 120.0)  # blob sides clipped to this range
    tap_max_aspect: float = 0.45  # a wider blob (w/h) is a person with their shadow: narrowed
    tap_min_aspect: float = 0.3  # a narrower one may hold a shadow below or above: shortened
    # ... else a box of this (w, h) centred on the point: a person ~40 px tall at 640x512.
    tap_default_size: tuple[float, float] = (16.0, 40.0)
    # A tap's lock made where nothing was detected (the blob's or the default box, without a
    # detection's embedding: on a stream's first frame nothing has moved yet) moves onto the
    # first detection under the tapped point, carried with the track, within this many frames
    # (0 -> never), where that detection overlaps the track's box by less than this IoU (else
    # the lock holds it already). person12: offset taps 0.960 -> 1.000 (docs/history.md, "A tap
    # where nothing is detected waits for the detection")
    tap_wait_frames: int = 10
    tap_wait_max_iou: float = 0.5


@dataclass(frozen=True)
class GimbalFollowConfig:
    """``emts track --follow gimbal``: a PID per axis from the target's offset from the image
    centre to GIMBAL_MANAGER_SET_PITCHYAW rates (not in the paper; untuned on hardware).

    The offset is normalized: -1 at the left (top) edge, 0 at the centre, +1 at the right
    (bottom) edge. Rates follow MAVLink: yaw rate > 0 turns right, pitch rate > 0 tilts up, so
    a target right of centre gives a positive yaw rate and one below centre a negative pitch
    rate. Every gain is in rad/s per unit of offset (per unit*s for ``ki``, unit/s for ``kd``).
    """

    kp: float = 0.8  # a target at the image edge: 0.8 rad/s from the P term
    ki: float = 0.1
    kd: float = 0.02
    max_yaw_rate: float = 1.0  # rad/s (57 deg/s)
    max_pitch_rate: float = 0.6  # rad/s (34 deg/s)
    dead_band: float = 0.03  # |offset| below this: no correction (no hunting on box jitter)
    integral_limit: float = 0.3  # rad/s: the most the I term may contribute (anti-windup)
    max_dt: float = 0.5  # s; a longer gap between frames counts as this (no derivative kick)
