"""Stage D: the locked target in stabilized coordinates (§3.5, eqs. 6-7).

Modules: :mod:`.tracker` (:class:`~emts.stages.d_track.tracker.TargetTracker`, the modes),
:mod:`.relock` (the reacquire mode's re-lock paths), :mod:`.loss` (when a measured lock has
stopped seeing its person), :mod:`.crossing` (a tapped lock held through a look-alike
crossing the person), :mod:`.identity` (the colour signature
and the re-find anywhere), :mod:`.kalman` (the filter), :mod:`.types` (what it takes and
says); the target's look is :mod:`emts.stages.appearance`.

``G_t = H(M_t) G_{t-1}`` accumulates the camera motion since lock (``G_0 = I``). Measurements
are mapped through ``G_t^-1`` into the stabilized frame, where a constant-velocity Kalman
filter on ``[x, y, vx, vy, w, h]`` models the *person*: a wind gust changes ``G_t``, not the
state.

Two measurements feed the filter under the same Mahalanobis gate (eq. ``eq:gates``):

* **detections** (Stage C), which also need the scale-aware embedding key (``eq:scalegate``);
  among admissible detections the one minimizing ``gamma^2 - 4 s`` wins;
* **appearance** (SPEC §0, not in the paper): a colour or gray template of the target (of an
  operator's lock: its upper part, ``TrackerConfig.appearance_upper``; a walker's cast shadow
  joins them at the feet and pulled a whole-box template onto itself), cut in image
  coordinates at lock (in an oblique view a followed walker keeps their apparent size and
  orientation while the ground plane's G_t scales and turns), searched by normalized
  cross-correlation around the prediction -- on colour frames blended with the correlation
  over the template's *own-target* samples (:func:`emts.stages.own_target.object_pixels`:
  neither the ground nor a shadow on it), since the walker's shadow walks with them and
  outmatched them; on gray frames an operator's lock's search takes, among the plain NCC's
  close maxima, the one whose detail matches best (``AppearanceConfig.gray_detail_band``:
  the shadow has the walker's shape, not their detail). It keeps the lock when the detector is
  silent; it learns slowly from confident matches, never from vetoed frames or from a sudden
  drop of the NCC peak or of the matched region's contrast (an occluder). On colour frames
  neither a re-anchor nor an appearance re-lock goes onto a region with far fewer own-target
  samples than the target's (a shadow, a canopy's edge).

The first measurement after ``TrackerConfig.coast_keeps_walk`` or more unmeasured frames
moves the estimate but keeps the coasted walk: the jump spans the coasted frames, and the
covariance they built let one update turn the velocity, whose prediction the next frame's
appearance match then fell outside of (``emts eval reacq``: a person re-found after a 3-frame
blackout reported ``reacquire`` the frame after).

A vetoed operator's lock is not dropped (the operator decides) but may be **re-anchored**: a
detection of the whole person held beside the track for a few frames, where the target's
look at the tap fits better than at the track, becomes its new origin (the template had slid
onto the walker's legs and shadow). The same re-anchor opens, unvetoed, after
``TrackerConfig.reanchor_after_appearance`` frames measured by the appearance match alone
(after an occlusion the match had re-made the lock on the walker's shadow and held it there).

**Two people merging** (not in the paper; frames without colour, ``LockCommand.colour``): a
detection at least ``TrackerConfig.merge_area_ratio`` times the track's area is the target and
someone walking past or across them in one blob. For ``merge_hold_frames`` frames after it the
measurements move the estimate but the velocity stays the walk's before the merge (the
covariance is left as the updates made it), so that the walk, not the pair's blob, carries the
track out of the merge.

Modes: ``"search"`` (no lock), ``"locked"``, ``"reacquire"`` (coasting after 8 consecutive
frames without a measurement, a verifier veto, the target leaving the image, a stall, or, on
colour frames, an appearance-only match with none of a person's own colours in or around its
box on ``TrackerConfig.lost_without_look`` frames -- flat ground, a cast shadow -- or with
colours unlike the lock's on ``lost_unlike_frames`` -- a bush; *reported*
from the second unmeasured frame on, ``TrackerConfig.unseen_frames_locked``, and from the first
where the appearance match was refused as an occluder, ``unseen_frames_occluded``: ``locked``
means the person is in the box). On colour frames every re-lock needs the person's colours
(:mod:`.identity`), and while lost the person is looked for anywhere in the frame. A walker
who left the view (lost walking, last seen at its edge or coasted off it) comes back walking
and cut by the edge: a still match does not re-lock them (``still_after_exit``), and the
detector's faint sightings (down to ``refind_faint``; a chain of them starting at the edge)
join the re-find anywhere; so do the places with the lock's colours, where the detector is
silent (``refind_colour``: for a walker who left the view at once, for one lost inside it
after ``refind_colour_after`` seconds; a place cut by the view's edge scores by its part
inside, so the places of a walker coming in move as they do).
A re-lock
(frozen template found again on consecutive frames near the coasted prediction, ahead of the
walk before the loss, in a region as textured as the person, a detection
with the frozen embedding inside the re-lock gate, or a detection held inside that gate for
3 frames -- for a tap without colours to say who it is, walking there) **re-initializes**
position and velocity: it is a new origin, never a Kalman innovation across the image.
Reacquisition gives up (back to ``"search"``, event ``"dropped"``) after
``TrackerConfig.give_up_after`` frames, or, for an automatic lock, once its coasted prediction
has been off the image for ``auto_give_up_outside`` seconds: its person walked out of view, and
auto-lock takes no one else while a track coasts.

A lock arrives as a :class:`LockCommand` in the coordinates of the frame being updated; the
tracker applies it *after* that frame's camera motion, so the motion is never applied twice.

All boxes here are ``[cx, cy, w, h]`` (centre and size) in WORKING pixels (640x512) unless
named stabilized.
"""
