"""Every default of the method in one place, each with the paper section it comes from.

Sizes are ``(width, height)`` in pixels, as OpenCV takes them. Each field says in a line what it
is and why; the measurements behind the defaults are in docs/history.md, "Why the defaults are
what they are".
"""

from __future__ import annotations

from dataclasses import dataclass, field

# §3.1: the system works on 640x512 frames; any input is letterboxed into this.
WORKING_SIZE = (640, 512)
# §3.2: Stage A runs on a 320x256 downsample.
STAGE_A_SIZE = (320, 256)
# §3.3/§3.4: Stage B and the detector run at 256x192 (stride 8 -> a 32x24 grid).
NETWORK_SIZE = (256, 192)
# §3.2: the paper's phase-correlation fallback size.
PAPER_PHASE_SIZE = (96, 72)
# The fallback size we use (EgoMotionConfig.phase_size): the frame's 5:4 aspect, FFT-friendly
# sizes, a smaller shift error than 96x72 and faster.
PHASE_SIZE = (160, 128)


@dataclass(frozen=True)
class EgoMotionConfig:
    """Stage A, §3.2 (eq. 1)."""

    max_corners: int = 120  # §3.2: up to 120 Shi-Tomasi corners
    corner_quality: float = 0.01  # Shi-Tomasi relative quality level
    corner_min_distance: float = 8.0  # px at 320x256; spreads corners over the frame
    corner_block_size: int = 3  # measured: sharper corners, lower registration error than 5-7
    # corners re-detected every this many frames (§3.2: 1); between, the RANSAC inliers are
    # tracked on, saving a third of Stage A at no measured loss
    corner_refresh_every: int = 4
    corner_refresh_fraction: float = 0.5  # ... and sooner when fewer inliers than this x max
    lk_window: int = 11  # px at 320x256 (odd); measured: 11 beats 15-21 in error and time
    lk_levels: int = 3  # pyramid levels above the base: reach ~ window * 2**levels
    lk_iterations: int = 20  # LK stops after this many iterations per level ...
    lk_epsilon: float = 0.03  # ... or once a step is below this (px)
    ransac_threshold: float = 2.0  # §3.2: 2-pixel reprojection threshold (at 320x256)
    ransac_confidence: float = 0.995  # RANSAC's confidence in the model it returns
    ransac_max_iters: int = 500  # RANSAC's iteration cap (bounds Stage A's worst case)
    refine_iters: int = 10  # Levenberg-Marquardt refinement on the inliers
    min_tracks: int = 15  # §3.2: fall back below 15 surviving tracks ...
    min_inlier_ratio: float = 0.4  # §3.2: ... or below an inlier ratio of 0.4
    phase_size: tuple[int, int] = PHASE_SIZE  # fallback resolution; PAPER_PHASE_SIZE = §3.2's
    phase_min_response: float = 0.08  # phase-correlation peak below this -> identity
    min_texture_std: float = 1.0  # gray levels; a flatter frame has no usable motion -> identity
    max_translation_fraction: float = 0.25  # a shift beyond this fraction of the frame is rejected
    # Stage B registers by a RANSAC homography on the same tracks (not in the paper): exact for
    # flat ground seen obliquely, where a similarity leaves misregistration in R and D
    homography: bool = True
    # ... rejected (similarity used) when it moves a frame corner farther than this from the
    # similarity (WORKING px), or explains under 90 % of the tracks the similarity does
    homography_max_deviation: float = 32.0
    # ... and used only where its mean squared reprojection error is at least this share below
    # the similarity's: eight parameters overfit noisy tracks, and the overfit adds noise to R
    homography_min_gain: float = 0.2


@dataclass(frozen=True)
class ChannelConfig:
    """Stage B, §3.3 (eq. 2)."""

    ego_compensation: bool = True  # False -> identity warp (the "w/o ego compensation" ablation)
    residual_blur: int = 5  # §3.3: G_5x5 Gaussian on |I_t - warped|
    # eq. 2's warp: "network" (as written, the default) or "working" (at 640x512, less ground
    # texture left in R); each model records the one it was trained on (stage_b_warp)
    warp_at: str = "network"
    # frames between R's two images: 1 = eq. 2; n > 1 = the frame n back through Stage A's last
    # n motions (n x a slow walker's residual; D stays one frame), issue 8
    residual_baseline: int = 1


@dataclass(frozen=True)
class AppearanceConfig:
    """The target's look (:mod:`emts.stages.appearance`; SPEC §0, not in the paper): which
    samples of a colour view are the target's own (a shadow is the ground darkened with its
    colour kept; a person's shirt, skin and hair are not), and how wide searches are run.
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
    # Gray views: among a search's maxima scoring within gray_detail_band of its best, the
    # one whose detail (template and window less their Gaussian blur, sigma gray_detail_sigma
    # x the template's height) matches by gray_detail_margin more is taken: without colour the
    # plain NCC is ruled by the person's dark shape on lit ground, which their cast shadow
    # has as well, and only their detail (a shirt's stripes, the legs apart) sets them apart.
    # The plain NCC still finds the maxima and gives the peak (0: off)
    gray_detail_band: float = 0.3
    gray_detail_margin: float = 0.1
    gray_detail_sigma: float = 0.04
    # searches wider than this many positions look at half resolution first (bounds their cost)
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
    # ... and, for an operator's lock without colours to say who a detection is (gray,
    # thermal), by detections that walked over those frames (relock_min_pace): one that stays
    # put beside the hidden walker (a statue, an occluder's edge) is not them (an automatic
    # lock's re-lock is vetted by the verifier)
    relock_spatial_walks: bool = True
    # Second measurement (SPEC §0): normalized cross-correlation of a gray template of the
    # target, searched in stabilized coordinates around the Kalman prediction. Not in the paper.
    appearance_margin: float = 0.1  # template = box grown by this fraction of w/h each side
    appearance_min_size: int = 9  # px; a smaller template side is grown to this
    # an operator's lock's template: this upper part of the box (away from the cast shadow at
    # the feet); automatic locks keep the whole box (TargetTracker._capture)
    appearance_upper: float = 0.8
    # colour frames: weight of the NCC over the template's own-target samples, blended with the
    # plain NCC, so the shadow does not pull the lock (0: off; re-locks keep the plain NCC)
    appearance_object_weight: float = 0.7
    appearance_threshold: float = 0.3  # NCC peak that counts as a measurement while locked
    appearance_noise: float = 2.0  # px^2, R of the NCC position measurement (see scale_aware_noise)
    # True: Q's and R's position terms are px of the current frame, divided by G's scale^2 each
    # frame. The stabilized frame's scale drifts on a long flight (person12: 10x by frame 450, a
    # tilting oblique camera), and noise fixed in its px (False: the paper's, the default) makes
    # the filter 10x less sure of the person in the image and its coasting searches 10x wider.
    # Measured (docs/history.md, 2026-12-06): the held-out follow taps 0.900 -> 0.926, but the
    # auto suite 0.718 -> 0.697 and the demo 33 -> 32 of 36 seeds, so not the default
    scale_aware_noise: bool = False
    # True: the stabilized frame is rescaled every frame so that G_t keeps the current frame's
    # scale (emts.stages.d_track.rebase): every distance in stabilized px below is then px of
    # the current frame
    rebase_scale: bool = False
    # True: a coasting lock (unmeasured on the frame before) is measured only where its template
    # lies wholly in the image (past it the search window is the warp's black border, whose
    # edge matched a dark-sided template: person12 leave 3 with rebase_scale, 2 false-lock
    # frames -> 0). Off: at the defaults no person12 figure moves and `emts eval reacq` loses
    # 3 of 454 (417 -> 414: people partly out of view re-measured no more)
    coast_in_image: bool = False
    # (min, max) stabilized px, from 3 sigma; the max is px of the current frame while the lock
    # was measured on the frame before (TargetTracker._locked_search_radius: G's scale drifts)
    search_radius: tuple[float, float] = (10.0, 48.0)
    # the search picks max NCC - prior * (d / radius)^2, d from the Kalman prediction
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
    # ... and, on colour frames, a region with at least this fraction of the frozen template's
    # share of own-target samples (0: off): a canopy's edge moves like a walker
    relock_own_share: float = 0.5
    walk_speed: tuple[float, float] = (0.7, 15.0)  # (min, max) stabilized px/frame of a walker
    # a re-lock match standing still: one at least relock_appearance of the running peak, with
    # the lock's colours (identity_min), in the same place (relock_consistency px) over this
    # many frames re-locks an operator's lock too (0: off; a person who stopped while hidden)
    relock_still_frames: int = 2
    # ... but not for a person who walked out of the view (lost walking, with the template
    # over the image's edge or the prediction off it since): they come back walking, and what
    # stands still at the edge they left is the ground (True: a still match re-locks them too)
    still_after_exit: bool = False
    relock_min_pace: float = 2.0  # re-lock chain: mean stabilized px/frame from first to last
    pace_fps: float = 10.0  # ... at this frame rate (person12's); scaled to the stream's
    relock_max_radius: float = 96.0  # re-lock searches at most this far (stabilized px) ...
    # ... and at most this many body heights, as a coasting lock's search (search_radius[1]):
    # G's scale drifts on a long flight (person12's follow runs: 7.9 by frame 300), and 96
    # stabilized px then reached 480 working px of a 26-px walker -- the whole view, searched
    # by the appearance at 15-30 ms a frame (0: off)
    relock_max_heights: float = 4.0
    relock_growth: float = 0.05  # ... within a body height growing by this many per lost frame
    # ... or by this many times the walk's speed before the loss, whichever is more: a hidden
    # walker keeps walking while the coasted prediction slows down
    relock_walk: float = 1.5
    # Stall: an appearance-only track that stops dead after walking slid onto an occluder's edge
    # and is lost (reacquire), coasting on with the walk and the template from before the stall
    stall_frames: int = 8  # ... when its pace over this many frames ...
    stall_ratio: float = 0.25  # ... fell below this x its running walking pace
    veto_drops_operator_locks: bool = False  # a veto drops auto-locks; tap locks only if True
    # consecutive vetoes that drop an automatic lock (one dip of a walker's P(human) is common);
    # a lock the verifier never passed is dropped at its first veto
    vetoes_to_drop: int = 2
    # Re-anchor: while an operator's lock is vetoed, a detection held within a body height of
    # it, at a steady offset, becomes its new origin and look (the template slid off the person)
    reanchor_frames: int = 3  # ... after this many consecutive frames; 0: off
    reanchor_consistency: float = 0.25  # offset change allowed per frame, in body heights
    reanchor_margin: float = 0.1  # the tapped look fits the detection by this much NCC more
    # ... not onto a detection holding under this fraction of the track's own-target share
    # (colour frames; 0: off): the walker's cast shadow is detected and walks with them
    reanchor_own_share: float = 0.5
    reanchor_min_height: float = 0.75  # a detection at least this fraction of the track's height
    # A locked track is not measured by a detection holding under this fraction of the
    # track's own-target share (colour frames; 0: off): the walker's long shadow on lit ground
    # is detected below them, walks with them and, associated, pulled the box onto it and
    # shrank it to the shadow's size (person12 frames 236-259, our held-out labels)
    associate_own_share: float = 0.5
    # A tap's lock does not move onto the detection found under the tapped point after the tap
    # (AcquisitionConfig.tap_wait_frames) where that detection holds a smaller share of
    # own-target samples than this x the lock's own box's (colour frames; 0: off): it holds
    # their shadow or ground beside them (stages.d_track.tracker.TargetTracker._holds_less)
    tap_wait_own_share: float = 1.0
    # ... and, unvetoed, after an appearance-only run (a match re-made on the shadow after an
    # occlusion while the detector finds the walker)
    reanchor_after_appearance: int = 8  # ... of this many consecutive frames (0: off) ...
    reanchor_appearance_reach: float = 1.5  # ... reaching this many body heights
    # ... and while the verifier doubts the track, a body height growing by this many heights
    # per further appearance-only frame (at pace_fps), to at most reanchor_reach_max: a lock
    # that followed the walker behind a tree crown and stayed on it is ever farther from the
    # walker the detector finds (`emts demo --seed 3`, thermal model: 2.6-3.8 heights once it
    # was 1-2 s on the crown; the default model's seeds 3 and 16 are re-taken, the thermal
    # model's seed 3 not: the walker outpaces the reach). Not for a track the verifier
    # passes: grown regardless, it took the other person of a thermal pair in 2 of 340
    # HIT-UAV group taps. 0: a fixed reach
    reanchor_reach_growth: float = 0.1
    reanchor_reach_max: float = 4.0
    # a lock measured on none of the last this many frames is reported "reacquire" (it is not
    # seen: "locked" means the person is in the box), though it keeps its locked association
    # until reacquire_after_misses
    unseen_frames_locked: int = 2
    # The first measurement of a lock unmeasured on at least this many frames keeps the
    # coasted walk (0: the filter's update turns it; `emts eval reacq`: a re-association after
    # a blackout turned the walk, and the next frame's match fell outside the gate)
    coast_keeps_walk: int = 2
    # ... from this many where the appearance match was refused as an occluder (a sudden drop,
    # a flattened, surged or fading region): the frame an occluder arrives is not `locked`
    unseen_frames_occluded: int = 1
    # ... and seeing it again there is a re-lock: on colour frames it needs the lock's colours
    unseen_needs_identity: bool = True
    # ... and measured again, it is the person found again: the running peak and contrast of
    # the look's matches restart there, as at a re-lock (False: those from before hold)
    match_restarts_on_return: bool = True
    # Honest loss on colour frames: a lock followed by its appearance match alone (no detection)
    # on this many frames in a row (at pace_fps), each time with none of a person's own colours
    # in the box nor around it (too few own-target samples for a colour signature in the box,
    # and in it grown lost_without_look_reach times each way: flat ground, a cast shadow), is
    # not on the person: lost (0: off). After the walker was cut out of person12's frames
    # 250-269 the match held their shadow, `locked`, 32 frames. (The box alone: a box shrunk
    # onto dark legs under gusts has none for up to 5 frames; twice its size, at most 2 on the
    # protocols of benchmarks/peers_track.py -- but up to 7 on a detected walker under gust
    # 13, hence appearance-only frames.)
    lost_without_look: int = 3
    lost_without_look_reach: float = 2.0
    # ... and one whose box holds colours unlike the lock's (colour-signature similarity below
    # lost_unlike: a bush, a tree's crown, someone else) on this many appearance-only frames
    # in a row (at pace_fps; 0: off). On person12's protocol runs the walker's own boxes matched
    # at 0.30 or more on 99 % of appearance-only frames, never below 0.25 on 3 in a row.
    lost_unlike: float = 0.2
    lost_unlike_frames: int = 5
    # ... and an operator's lock whose box holds almost none of the person's own-target
    # samples (under lost_empty times the share the look held as tapped) on this many measured
    # frames in a row (at pace_fps; 0: off), whatever measures it: the ground or a shadow
    # there, not them. On person12 at 1280x720, cut out of frames 250-269, the match took the
    # shadow left behind (0.00-0.02 of the tapped share) and a detection of it agreed: `locked`
    # on 10 frames; the walker's own boxes on the 37 protocol runs at 640x360: 0.17 or more.
    lost_empty: float = 0.1
    lost_empty_frames: int = 2
    # A person walking out of the view: where the template runs off the image content, a match
    # below this fraction of the slow running peak measures nothing (the match stays inside the
    # edge and fades as they slide out, the running peak following it down; 0: off)
    edge_fade: float = 0.7
    # Identity (colour frames, :mod:`emts.stages.d_track.identity`): every re-lock needs the
    # region's colour signature this like the lock's (Bhattacharyya; 0: off) ...
    identity_min: float = 0.3
    # ... and while lost, detections anywhere in the frame with that look, chained over this
    # many frames and walking, re-find the person there (0: off)
    refind_frames: int = 3
    # ... and, for a walker who left the view, detections down to this sighting (0: off) ...
    refind_faint: float = 0.2
    refind_faint_edge: float = 1.0  # ... a chain of them starting this many heights from its edge
    refind_step: float = 0.2  # ... each link at most this many body heights a frame (at pace_fps)
    # ... and the detection it re-locks on holds some of the lock's colours in each half (the
    # Bhattacharyya coefficient of each half's histograms at least this; 0: off): a person's
    # cast shadow, dark throughout, matches their dark trousers alone (person12's leave path 2
    # at 1280x720: the walker's shadow entering the view before them, upper half 0.00, lower
    # 0.61, re-found and `locked` on 9 frames; the walker's own 5 re-finds on the 37 protocol
    # runs at both sizes: upper 0.12-0.28, lower 0.41-0.72)
    refind_half_identity: float = 0.05
    # ... and by colours alone: this many places a frame whose colours are most the lock's
    # signature, chained as detections are (refind_frames; 0: off), each at least this like
    # the lock and walking at relock_min_pace; for a walker who left the view at once, for
    # one lost inside it after this many seconds (its first frames are the look's, near
    # where they were: sooner, paving and shade re-locked at 0.46-0.48)
    refind_colour: int = 4
    refind_colour_identity: float = 0.55
    refind_colour_after: float = 0.5
    # A candidate, off by default (reports/real/shade): True, the colour re-find's signature,
    # places and likeness read each sample's value relative to its local ground's
    # (identity.colour_signature's ``relative``: a shade darkens a person and their ground
    # alike) and the re-lock is placed at the colours' place, not moved by the frozen look;
    # > 0, its chain's pace is at least this many body heights a frame at pace_fps instead of
    # relock_min_pace stabilized px (which G's scale drifts away from); > 0, an operator's
    # lock it re-found is on probation for this many measured frames (at pace_fps): where the
    # box's likeness to the lock's signature falls under refind_colour_identity on one of
    # them, it is lost again at once. All three with refind_colour_identity 0.45 and pace
    # 0.033: person12's 37 protocol runs (640x360) 0.9886 / 2 false-lock frames -> 0.9896 / 2
    # (the follow cut out of 250-269 re-found in deep shade, 0.925 -> 1.000), but at 1280x720
    # its 14 runs 0.9024 / 47 -> 0.8986 / 70 (shade 230's lock, wrong from frame 248, re-found
    # on wrong places: 18 -> 34)
    refind_colour_relative: bool = False
    refind_colour_pace: float = 0.0
    refind_colour_probation: int = 0
    # ... and a single detection inside the re-lock gate whose signature is at least this like
    # the lock's re-locks at once (0: off)
    relock_identity_strong: float = 0.45
    # ... and a re-lock on the frozen embedding or on a detection held 3 frames needs at
    # least this likeness on colour frames (identity_min where lower): a box of the walker's
    # legs and long shadow keeps the embedding's shape and little of the lock's colours
    # (person12's frame 233 after frames 210-229 hidden: 0.42; the re-finds of frames 0-200:
    # 0.50-0.71)
    relock_detection_identity: float = 0.45
    # A re-lock by the frozen look alone where no colours say who it is (gray and thermal
    # frames) farther than this many track heights from the prediction needs a detection within
    # a track height of it (0: off): on person12 in gray the look re-locked 3.2 heights away,
    # on the ground, after frames 110-129 hidden or cut out, and said `locked` there and on
    # more ground for 39 frames; its right re-locks lay within 1.0 height
    relock_look_alone_reach: float = 1.5
    # ... and a re-lock on a detector's box takes the person in it on colour frames: the
    # largest region of own-target samples (neither the lit ground nor a shadow on it)
    # overlapping the box, looked for half a box farther each way
    # (emts.stages.d_track.relock.person_box; False: the box as given)
    relock_person_box: bool = True
    # ... and an operator's tap on a detection, likewise: under a low sun the detection under
    # the finger may hold the walker's legs and long shadow (person12 at 1280x720, the tap at
    # frame 230: 128 px tall for an 89-px walker, and the lock slid onto the shadow)
    tap_person_box: bool = True
    # ... where the person's region is under this share of the box's height or width (on
    # person12's tap suite at 640x360 the region was 0.84-1.0 of the detection's sides where
    # no shadow was in it, and narrowing to it moved the box off the walker's centre by 1-2 px)
    tap_person_cut: float = 0.8
    # ... unless that region is more than this many times the detection's width (0: any
    # width): no one person inside it (a group, a patch of non-ground; taller is allowed: a
    # detection of half the person). On PETS 2009 vtest.avi (real colour, auto-lock) 9 of 11
    # re-locks along one camera path took regions 1.6-2x the detection's width
    relock_person_max: float = 1.3
    # ... and where the box is under this fraction of the track's height (a detection of part
    # of the person: a 21x28 box of the legs of a walker 37x90 re-entering person12's leave
    # path 3), the track keeps its own size at the box's centre (0: off)
    relock_whole_person: float = 0.75
    # The re-find anywhere (a chain of detections with the lock's colours) does not re-lock on
    # a detection wider than this many times the person's width (the box reported: the
    # track's, narrowed to the person where measured) with no one person in it to narrow it
    # to (relock_person_max): the walker merged with their long shadow or the edge of a shade,
    # a group (person12 at 1280x720, hidden on frames 210-229: a detection 1.55x their width
    # holding their legs and shadow re-locked 48 px below them, then `locked` on the shadow for
    # 22 frames). 0: off
    relock_wider_max: float = 1.3
    # The box reported on colour frames has the person's width: the share of a detection's
    # width that the one person in it takes (the re-lock's person_box, within
    # relock_person_max of its width), where that region is at least person_width_least of the
    # box's height, running (person_width_keep of the last value each detection). The
    # detector's box takes in what moves with a walker (person12: their long shadow; the locked
    # box was 1.5x their width); the track's own box, which Stage D's checks and searches and
    # Stage E read, stays the detector's (narrowed, re-finds locked on the ground in 4 of
    # person12's 37 runs at 1280x720: false-lock frames 33 -> 71). False: the track's box
    person_width: bool = True
    person_width_least: float = 0.75
    person_width_keep: float = 0.5
    person_width_every: int = 3  # ... measured on every 3rd such detection (the first at once)
    # ... and its height follows only detections within person_height_band of it (any frames):
    # a detection of a part of the person (their upper body, their legs: the detector was
    # trained on 10-60 px people, and a walker 90 px tall in a zoomed view is found in parts;
    # on person12's plain frames 39-43 boxes 0.6-0.7 of the walker's height) shrank the box
    # for the rest of the run. The track's own box follows every detection (keeping its size
    # there lost the plain follow's walker in the shade, 1.000 -> 0.777). False: its height
    person_height: bool = True
    person_height_band: tuple[float, float] = (0.75, 1.25)
    give_up_after: int = 300  # frames without a measurement before reacquire gives up (search)
    # ... and an automatic lock's after this many seconds with its prediction off the image, so
    # auto-lock can find someone else; an operator's lock waits give_up_after. None: off
    auto_give_up_outside: float | None = 1.0
    coast_velocity_keep: float = 0.95  # velocity decays while coasting (a stop is likelier)
    # Two people merging (frames without colour): the walk before the merge, not the pair's
    # blob, carries the track out of it
    merge_area_ratio: float = 2.5  # a detection this many times the track's area holds two
    merge_hold_frames: int = 8  # ... and for this many frames the velocity is held; 0: off
    # A look-alike crossing the lock: a second match of the lock's template (at half
    # resolution, within crossing_look track heights, searched on every crossing_every-th
    # locked frame at pace_fps) at least crossing_apart heights from the person, its NCC at
    # least crossing_rival x the person's there, walking and closing in on the track by
    # crossing_min_step heights a frame (at pace_fps) on crossing_confirm searches in a row,
    # with the lock's colours (identity_min) on colour frames. Where its path (carried on at
    # that walk) meets the track (crossing_apart heights) a hold opens until it has passed
    # (twice that away), crossing_hold measured frames at most (at pace_fps): the walk is
    # held and the track is measured by the template's match nearest the prediction, if
    # within crossing_reach heights of it (else it coasts). Operator (tap) locks only. 0: off
    crossing_hold: int = 16
    crossing_rival: float = 0.85
    crossing_apart: float = 0.6
    crossing_min_step: float = 0.04
    crossing_look: float = 1.5
    crossing_every: int = 2
    crossing_reach: float = 0.1
    # (one search closing in is a half-resolution maximum's jitter as often as a walk: the
    # walker's long shadow with their legs in it, walking with them, opened a hold on
    # person12's frame 217 and the track slid down it onto the shadow)
    crossing_confirm: int = 2
    # Initial state covariance of a (re-)lock: position px^2, velocity (px/frame)^2, size px^2.
    lock_covariance: tuple[float, ...] = (4.0, 4.0, 25.0, 25.0, 9.0, 9.0)
    # ... a re-lock's in image px: its position and walk terms divided by G's scale squared
    # where the stabilized frame has grown (the ground looms as a followed walker's drone
    # descends or closes in: x5 by person12's frame 240, where 3 sigma of the walk term in
    # stabilized px reached 80 image px and the next search took a match 46 px off the
    # person). False: in stabilized px whatever the scale
    relock_covariance_in_image: bool = True
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
    # a box wider than this x its height is narrowed about its centre before its ROI is cut (the
    # ROI's own shape: ground beside a person dilutes the legs' motion); run time only; None: off
    roi_max_aspect: float | None = 0.5
    threshold: float = 0.5  # P(human) below this is a veto
    # the model sees flow in px per 1/30 s: other frame rates' descriptors are scaled by fps / 30
    reference_fps: float = 30.0


@dataclass(frozen=True)
class BoxFitConfig:
    """Stage C's colour evidence (not in the paper: :mod:`emts.stages.c_detect.boxfit`): boxes
    fitted to the person's own pixels on colour frames, scored up where they fit and move, down
    where they do not move."""

    person_aspect: float = 0.45  # w / h of a standing person: a wider box is a part of one
    context: float = 1.0  # own pixels looked for this many person heights around the centre
    close: float = 1 / 6  # vertical closing, in person heights (belt, knees)
    seed_share: float = 0.05  # a part counts with this share of the box's area inside it
    max_height: float = 2.2  # fitted box at most this many person heights tall ...
    max_width: float = 1.8  # ... this many box widths (at least a person's) wide ...
    min_height: float = 0.7  # ... and at least this fraction of the box's height
    max_boxes: int = 8  # a frame's highest-scoring boxes fitted (~0.3-0.6 ms each on x86)
    # a fit merged with shade or a flower bed (too tall or wide) keeps the parts' pixels in the
    # box's column band (the box +- this share of its width) ...
    trim_margin: float = 0.25
    # ... over the rows whose pixels outside the band stay under this share of its width, where
    # that leaves it no wider than tall. None: no trimming
    trim_spill: float | None = 0.5
    # a box that fits a person's own pixels is evidence of a person: its score rises by this
    # (boxes from tau_s - bonus are fitted). 0: boxes fitted, scores as the network's
    bonus: float = 0.1
    # ... where the fitted box also moves: R inside it at least this x the frame's R p90, so a
    # static bag or door panel is not lifted. None: no check
    min_motion: float | None = 2.0
    # ... and a checked box that does not move scores this much lower (static look-alikes)
    still_penalty: float = 0.1


@dataclass(frozen=True)
class AcquisitionConfig:
    """How a lock starts: operator tap (SPEC §0) and auto-lock (§6.7)."""

    autolock_frames: int = 3  # §6.7: the strongest detection, stable for 3 consecutive frames
    autolock_threshold: float = 0.35  # §6.7: the auto-lock stands at P(human) >= 0.35
    # ... and the track covered this many of its heights in the verifier's 16-frame window (not
    # in the paper; None: off): only a walker is auto-locked, the verifier passes standing people
    autolock_min_travel: float | None = 0.2
    # opt-in: an accepted auto-lock that stands still is vetoed at each classification (off:
    # real walkers pause)
    autolock_still_veto: bool = False
    # A tap takes the detection whose box (grown by this fraction) holds the tapped point and
    # whose centre lies on the blob under it (below; grown alike: else it is a neighbour's) ...
    tap_detection_margin: float = 0.25
    # ... unless it is this many times wider than the blob under the point (below): a coarse
    # box's template holds ground beside the person and slides on it
    tap_detection_max_widen: float = 1.5
    # Thermal frames: the box taken is re-centred on the tapped point (two close people are one
    # box; centred between them, the lock may follow the other one)
    tap_recentre_offset: float = 0.2  # ... if the point is this share of it off centre; 0: never
    tap_recentre_floor: float = 0.5  # ... the largest box in it, at least this share per axis
    tap_recentre_colour: bool = False  # also on colour frames (a person is no uniform blob there)
    # ... else the blob around the point that differs from the local ground level (median of
    # this (w, h) window, WORKING px) by at least this many gray levels ...
    tap_window: tuple[int, int] = (81, 121)
    tap_min_contrast: float = 12.0
    tap_size_limits: tuple[float, float] = (6.0, 120.0)  # blob sides clipped to this range
    tap_max_aspect: float = 0.45  # a wider blob (w/h) is a person with their shadow: narrowed
    tap_min_aspect: float = 0.3  # a narrower one may hold a shadow below or above: shortened
    # ... else the strongest of the detector's faint sightings under the point, down to this
    # score (0: off; "tap:faint"): the operator points at the person the detector barely sees
    # (person12 at 1280x720, the walker in the canopy's shade at frame 230: a sighting at 0.27
    # under the finger, the detector's threshold 0.30, 1 gray level from the ground) ...
    tap_faint: float = 0.2
    # ... else nothing yet: the tap is tried again on each of this many following frames (0:
    # never), the point followed by its own optical flow, else carried by the camera motion --
    # a stream's first frame has no motion for the detector (person12 --enter left: a walker
    # half out of the view beside their long shadow on a kerb, found by neither on the tap's
    # frame) ...
    tap_retry_frames: int = 5
    # ... and a tap with none of these under the point on any of them is refused ("no_target")
    # A tap's lock made where nothing was detected (no embedding yet) moves onto the first
    # detection under the tapped point, carried with the track
    tap_wait_frames: int = 10  # ... within this many frames (0 -> never) ...
    tap_wait_max_iou: float = 0.5  # ... overlapping its box by less than this IoU (else held)
    # ... and, without colour (the detection re-centred on the tapped point), not where that
    # box lies within the track's and the detection is at least this share of the track's
    # box's area (the region under the finger is what the detector sees; 0: always moves)
    tap_wait_hold_area: float = 0.5
    # ... and not onto a slice of the tapped person: a detection at least tap_wait_part_width
    # of the tapped lock's width whose box (as the lock would take it) is under
    # tap_wait_min_height of its height (person12 in gray at 1280x720 under a gust: the
    # walker's upper body, as wide as them, re-centred on the tapped point at its lower edge:
    # 16x16 for a 24x54 walker; lock recall 0.42-0.68 in 2 of 3 gust runs). A blob grown into its
    # surroundings is wider than the person detected in it (HIT-UAV pairs: the detection
    # 0.42 and 0.57 of the blob's width, moved onto as before). 0: off
    tap_wait_min_height: float = 0.4
    tap_wait_part_width: float = 0.6


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
    ki: float = 0.1  # I term: removes a steady offset (a target walking at constant speed)
    kd: float = 0.02  # D term: damps overshoot
    max_yaw_rate: float = 1.0  # rad/s (57 deg/s)
    max_pitch_rate: float = 0.6  # rad/s (34 deg/s)
    dead_band: float = 0.03  # |offset| below this: no correction (no hunting on box jitter)
    integral_limit: float = 0.3  # rad/s: the most the I term may contribute (anti-windup)
    max_dt: float = 0.5  # s; a longer gap between frames counts as this (no derivative kick)
