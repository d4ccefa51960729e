"""Lock acquisition (tap, auto-lock with provisional verification) and the lock as Stage D
applies it, through the Pipeline with stand-in detectors and verifiers."""

from dataclasses import replace
from functools import partial

import cv2
import numpy as np
import pytest

from emts.config import AcquisitionConfig
from emts.errors import BadInputError
from emts.geometry import Frame, FrameGeometry
from emts.pipeline import Pipeline
from emts.stages.acquisition import (
    NOTHING,
    AcquisitionDecision,
    LockAcquisition,
    Tap,
    blob_box,
)
from emts.stages.appearance import AppearanceView
from emts.stages.c_detect.detector import Detection
from emts.stages.d_track.tracker import TargetTracker
from emts.stages.d_track.types import Candidate, LockCommand

GEOMETRY = FrameGeometry((640, 512))
E = np.eye(8)


def _ground(seed=0, size=(512, 640)):
    rng = np.random.default_rng(seed)
    noise = cv2.GaussianBlur(rng.normal(0, 1, size).astype(np.float32), (0, 0), 3)
    return np.clip(128 + 12 * noise / noise.std(), 0, 255).astype(np.uint8)


def _with_person(ground, x, y, w=12, h=30, level=40):
    frame = ground.copy()
    frame[int(y - h / 2) : int(y + h / 2), int(x - w / 2) : int(x + w / 2)] = level
    return frame


# ----------------------------------------------------------------------------- taps
@pytest.mark.parametrize("args", [("abc", 3), (None, 3), (float("nan"), 3), (1, 2, (0, 0, -5, 3))])
def test_a_tap_that_is_not_finite_numbers_is_bad_input(args):
    with pytest.raises(BadInputError):
        Tap.make(*args)


def test_pipeline_lock_rejects_garbage_with_the_projects_error():
    pipeline = Pipeline(None, None, auto_lock=False)
    with pytest.raises(BadInputError):
        pipeline.lock("abc", None)


def _step(acquisition, working, candidates=(), motion=None, mode="search", p_human=None):
    motion = np.eye(2, 3) if motion is None else motion
    return acquisition.step(GEOMETRY, working, motion, list(candidates), mode, p_human)


def _decided(acquisition, working, candidates=(), **kwargs):
    """Step until the tap is decided (its retries on nothing spent): the last decision."""
    for _ in range(AcquisitionConfig().tap_retry_frames):
        decision = _step(acquisition, working, candidates, **kwargs)
        if decision.tap != "waiting":
            return decision
    return _step(acquisition, working, candidates, **kwargs)


def test_tap_on_a_detection_takes_its_box():
    acquisition = LockAcquisition(auto_lock=False)
    acquisition.request(Tap.make(302, 205))  # within a fifth of its size of its centre
    person = Candidate(np.array([300.0, 200.0]), np.array([12.0, 30.0]), 0.6, E[0])
    decoy = Candidate(np.array([340.0, 200.0]), np.array([12.0, 30.0]), 0.9, E[1])
    decision = _step(acquisition, _ground(), [decoy, person])
    assert decision.lock.source == "tap:detection"
    np.testing.assert_allclose(decision.lock.centre, person.centre)


def _pair(colour, tap=(300, 190), recentre=0.2):
    """A tap on the upper one of two people merged into one detection (centre 300, 200)."""
    acquisition = LockAcquisition(
        auto_lock=False, config=AcquisitionConfig(tap_recentre_offset=recentre)
    )
    acquisition.request(Tap.make(*tap))
    pair = Candidate(np.array([300.0, 200.0]), np.array([16.0, 40.0]), 0.6, E[3])
    motion = np.eye(2, 3)
    return acquisition.step(GEOMETRY, _ground(), motion, [pair], "search", None, colour)


def test_a_tap_off_a_detections_centre_is_centred_on_the_point_without_colour():
    # the tap a quarter of the box's height above its centre: the largest box centred on
    # the tap inside the detection's (here the floor, half its height)
    lock = _pair(colour=False).lock
    assert lock.source == "tap:detection"
    np.testing.assert_allclose(lock.centre, [300, 190])
    np.testing.assert_allclose(lock.size, [16, 20])
    np.testing.assert_array_equal(lock.embedding, E[3])
    # a smaller offset shrinks the box by twice the offset, not to the floor
    lock = _pair(colour=False, tap=(300, 191)).lock
    np.testing.assert_allclose(lock.centre, [300, 191])
    np.testing.assert_allclose(lock.size, [16, 22])
    # within a fifth of its size of its centre: the box as it is
    lock = _pair(colour=False, tap=(302, 193)).lock
    np.testing.assert_allclose(lock.centre, [300, 200])


@pytest.mark.parametrize("colour, recentre", [(True, 0.2), (False, 0.0)])
def test_a_tap_off_a_detections_centre_keeps_its_box_in_colour_or_when_switched_off(
    colour, recentre
):
    lock = _pair(colour=colour, recentre=recentre).lock
    np.testing.assert_allclose(lock.centre, [300, 200])
    np.testing.assert_allclose(lock.size, [16, 40])


def _spy_on(acquisition: LockAcquisition) -> list[AcquisitionDecision]:
    """The acquisition's decisions, one per step, as the pipeline makes them."""
    decisions, step = [], acquisition.step

    def spied(*args, **kwargs):
        decisions.append(step(*args, **kwargs))
        return decisions[-1]

    acquisition.step = spied
    return decisions


def test_the_pipeline_tells_a_colour_frame_from_one_without_at_the_tap():
    # ground of too little contrast for a blob under the finger, enough to tell colour; the
    # stand-in's detection: NETWORK box (100, 70, 6, 14) -> WORKING centre (257.5, 192.5),
    # size (15, 35); the tap a quarter of its height below that
    ground = (128 + (_ground(5).astype(np.float32) - 128) / 4).astype(np.uint8)
    colour = cv2.applyColorMap(ground, cv2.COLORMAP_JET)
    tap = np.array([257.5, 201.25])
    for frame, on_tap in ((ground, True), (colour, False)):
        pipeline = Pipeline(StillDetector(), None, auto_lock=False)
        decisions = _spy_on(pipeline.acquisition)
        pipeline.step(frame)
        pipeline.lock(*tap)
        pipeline.step(frame)
        lock = decisions[-1].lock
        assert lock.source == "tap:detection"
        # without colour centred on the tap; in colour the detection's box as it is (its
        # centre there refitted by the colour evidence: emts.stages.c_detect.boxfit)
        assert (np.hypot(*(lock.centre - tap)) < 1e-6) == on_tap
        assert on_tap or np.hypot(*(lock.centre - tap)) > 3.0


def test_a_detection_far_wider_than_the_person_under_the_tap_gives_way_to_the_blob():
    working = _with_person(_ground(), 300, 200)  # a 12x30 person
    for width, source in ((16.0, "tap:detection"), (30.0, "tap:blob")):
        acquisition = LockAcquisition(auto_lock=False)
        acquisition.request(Tap.make(301, 203))
        coarse = Candidate(np.array([306.0, 200.0]), np.array([width, 34.0]), 0.6, E[2])
        decision = _step(acquisition, working, [coarse])
        assert decision.lock.source == source
        if source == "tap:blob":  # the person's box, the detection's embedding
            np.testing.assert_allclose(decision.lock.centre, [300, 200], atol=2.5)
            np.testing.assert_allclose(decision.lock.size, [12, 30], atol=3)
            np.testing.assert_array_equal(decision.lock.embedding, E[2])
            # a detection was seen there and set aside: no wait for another one (this one,
            # narrow enough to be taken, 0.37 of IoU with the lock, would move it)
            lock = decision.lock
            narrower = Candidate(np.array([306.0, 200.0]), np.array([17.0, 34.0]), 0.6, E[2])
            decision = acquisition.step(
                GEOMETRY, working, np.eye(2, 3), [narrower], "locked", None, False,
                (lock.centre, lock.size),
            )  # fmt: skip
            assert decision == AcquisitionDecision()


def test_tap_without_a_detection_locks_at_once_on_the_blob_under_the_finger():
    acquisition = LockAcquisition(auto_lock=False)
    working = _with_person(_ground(), 300, 200)
    acquisition.request(Tap.make(301, 203))
    decision = _step(acquisition, working)
    assert decision.lock.source == "tap:blob"
    np.testing.assert_allclose(decision.lock.centre, [300, 200], atol=2.5)
    np.testing.assert_allclose(decision.lock.size, [12, 30], atol=3)


def _waiting_tap(wait=10, colour=True, tap=(300, 201)):
    """A tap on a person nobody has detected yet (a stream's first frame): the lock is the
    blob's, (300, 200) 12x30."""
    acquisition = LockAcquisition(auto_lock=False, config=AcquisitionConfig(tap_wait_frames=wait))
    acquisition.request(Tap.make(*tap))
    working = _with_person(_ground(), 300, 200)
    lock = acquisition.step(GEOMETRY, working, np.eye(2, 3), [], "search", None, colour).lock
    assert lock.source == "tap:blob"
    return acquisition, lock


PERSON = Candidate(np.array([300.0, 201.0]), np.array([13.0, 31.0]), 0.5, E[4])


def _waited(acquisition, track, candidates=(PERSON,), mode="locked"):
    working = _with_person(_ground(), 300, 200)
    return acquisition.step(
        GEOMETRY, working, np.eye(2, 3), list(candidates), mode, None, False, track
    )


def test_a_tap_without_a_detection_moves_onto_the_first_detection_where_the_track_is_off():
    acquisition, lock = _waiting_tap()
    # the track has slid 14 px down (onto legs and shadow); nobody detected yet: nothing
    slid = (lock.centre + [0, 14], lock.size)
    elsewhere = Candidate(np.array([400.0, 300.0]), np.array([12.0, 30.0]), 0.9, E[5])
    assert _waited(acquisition, slid, [elsewhere]) == AcquisitionDecision()
    # then the person is detected under the tapped point, carried with the track, and the
    # detection overlaps the track's box by less than half: the lock moves onto it, once
    decision = _waited(acquisition, slid, [elsewhere, PERSON])
    assert decision.lock.source == "tap:detection" and acquisition.last_source == "tap:detection"
    assert decision.lock.moves and not lock.moves  # (the tracker weighs a move: _holds_less)
    np.testing.assert_allclose(decision.lock.centre, PERSON.centre)
    np.testing.assert_array_equal(decision.lock.embedding, E[4])
    assert _waited(acquisition, slid) == AcquisitionDecision()  # done
    # a track on the person already: the detection ends the wait, the lock stays
    acquisition, lock = _waiting_tap()
    assert _waited(acquisition, (lock.centre, lock.size)) == AcquisitionDecision()
    assert _waited(acquisition, slid) == AcquisitionDecision()
    # without colour the detection is re-centred on the tapped point, as a tap's is
    # (around_tap): tapped 6 px right of the centre. There it lies within the track's box,
    # and the detection is as large as that box: the lock holds the region (a gray person12
    # tap moved onto half the walker's box and slid onto the shadow: lock recall 0.39)
    acquisition, lock = _waiting_tap(colour=False, tap=(305, 200))
    np.testing.assert_allclose(lock.centre, [305, 200])  # the blob's, re-centred
    box = np.array([16.0, 34.0])  # the track's box by now (a margin of ground)
    assert _waited(acquisition, (lock.centre + [0, 14], box)) == AcquisitionDecision()
    # ... a track's box far larger than the detection (a blob grown into its surroundings)
    # moves onto it, re-centred
    for hold, size in ((0.5, 3 * box), (0.0, box)):  # (0: the rule off)
        acquisition, lock = _waiting_tap(colour=False, tap=(305, 200))
        acquisition.config = replace(acquisition.config, tap_wait_hold_area=hold)
        decision = _waited(acquisition, (lock.centre + [0, 14], size))
        assert decision.lock.source == "tap:detection"
        np.testing.assert_allclose(decision.lock.centre, [305, 214])


def test_a_waiting_tap_does_not_move_onto_a_slice_of_the_person():
    # without colour; the track's box has grown (20x40) around the tapped 12x30 walker; the
    # detector finds their upper body (13x18: as wide as them), the tapped point at its lower
    # edge: re-centred there a 13x9 sliver, under 0.4 of the tapped height. The lock holds,
    # and the wait ends. A detection narrower than 0.6 of the lock's width (here: the rule
    # asking for 1.2) is a person in a blob grown around them: moved onto
    upper = Candidate(np.array([300.0, 193.0]), np.array([13.0, 18.0]), 0.5, E[4])
    for least, width, moved in ((0.4, 0.6, False), (0.0, 0.6, True), (0.4, 1.2, True)):
        acquisition, lock = _waiting_tap(colour=False, tap=(300, 201))
        acquisition.config = replace(
            acquisition.config, tap_wait_min_height=least, tap_wait_part_width=width
        )
        decision = _waited(acquisition, (lock.centre, np.array([20.0, 40.0])), [upper])
        assert (decision.lock is not None) == moved
        if moved:
            assert decision.lock.size[1] < 0.4 * lock.size[1]
        assert not acquisition.waiting


def test_the_wait_for_a_detection_ends_after_its_frames_or_when_the_track_is_lost():
    for wait, modes in (
        (2, ["locked", "locked", "locked"]),  # a detection on the 3rd frame after: too late
        (10, ["reacquire", "locked"]),  # the track lost meanwhile: over
        (0, ["locked"]),  # switched off
        (2, ["locked", "locked"]),  # the control: on the 2nd, found
    ):
        acquisition, lock = _waiting_tap(wait)
        slid = (lock.centre + [0, 14], lock.size)
        found = [
            _waited(acquisition, slid, [PERSON] if k == len(modes) - 1 else [], mode).lock
            is not None
            for k, mode in enumerate(modes)
        ]
        assert found == [False] * (len(modes) - 1) + [modes == ["locked", "locked"]]


def test_a_tap_beside_a_neighbours_detection_locks_the_person_under_the_finger():
    # two people 18 px apart; the tapped one (x 300) undetected this frame, the neighbour's
    # detection (x 318, drawn off-centre towards the tap) reaching over the tapped point
    working = _with_person(_with_person(_ground(), 300, 200), 318, 200)
    acquisition = LockAcquisition(auto_lock=False)
    acquisition.request(Tap.make(301, 203))
    neighbour = Candidate(np.array([312.0, 200.0]), np.array([18.0, 34.0]), 0.6, E[2])
    decision = _step(acquisition, working, [neighbour])
    assert decision.lock.source == "tap:blob"
    np.testing.assert_allclose(decision.lock.centre, [300, 200], atol=2.5)


def test_a_blob_with_its_cast_shadow_is_narrowed_to_a_person_on_the_tapped_column():
    working = _with_person(_ground(), 300, 200)
    working[185:215, 306:336] = 50  # the shadow, beside the person
    box = blob_box(working, np.array([300.0, 200.0]), AcquisitionConfig())
    assert box is not None and box[2] <= 0.45 * box[3] + 1e-6
    assert abs(box[0] - 300) < 1e-6


def test_a_blob_with_its_shadow_below_is_cut_to_the_person_around_the_tap():
    working = _with_person(_ground(), 300, 200)  # 12 x 30, rows 185-214
    working[215:245, 297:303] = 50  # the shadow, cast straight below the feet
    for tap_y in (200.0, 188.0):  # on the body's middle, on the head
        box = blob_box(working, np.array([300.0, tap_y]), AcquisitionConfig())
        assert box is not None
        assert box[1] - box[3] / 2 == pytest.approx(184.5, abs=1)  # from the head down ...
        assert 30 <= box[3] <= 12 / 0.3 + 1e-6  # ... over the person, not the shadow (60)
    # without a shadow the blob is left as it is
    plain = blob_box(
        _with_person(_ground(), 300, 200), np.array([300.0, 190.0]), AcquisitionConfig()
    )
    np.testing.assert_allclose(plain[[1, 3]], [199.5, 30], atol=1.5)


def test_tap_on_flat_ground_is_refused_and_a_drawn_box_is_kept():
    acquisition = LockAcquisition(auto_lock=False)
    acquisition.request(Tap.make(100, 100))
    flat = np.full((512, 640), 90, np.uint8)
    for _ in range(AcquisitionConfig().tap_retry_frames):  # tried again on the next frames
        assert _step(acquisition, flat) == AcquisitionDecision(tap="waiting")
        assert acquisition.pending
    decision = _step(acquisition, flat)
    assert decision == AcquisitionDecision(refused="no_target", tap="no_target")  # no lock
    assert not acquisition.pending and acquisition.last_source is None  # the tap is spent
    assert _step(acquisition, flat) == NOTHING
    # without retries, refused on its own frame
    at_once = LockAcquisition(auto_lock=False, config=AcquisitionConfig(tap_retry_frames=0))
    at_once.request(Tap.make(100, 100))
    assert _step(at_once, flat) == AcquisitionDecision(refused="no_target", tap="no_target")
    acquisition.request(Tap.make(0, 0, box=(90, 80, 20, 40)))  # a drag there does lock
    decision = _step(acquisition, np.full((512, 640), 90, np.uint8))
    assert decision.lock.source == "tap:box" and decision.refused is None
    np.testing.assert_allclose(decision.lock.centre, [100, 100])


@pytest.mark.parametrize("floor", [0.2, 0.0])
def test_a_tap_on_a_person_the_detector_barely_sees_takes_its_faint_sighting(floor):
    """Neither a detection nor a blob under the finger (a person in deep shade, as dark as
    the ground): the strongest faint sighting under it locks ("tap:faint"); one elsewhere, or
    below AcquisitionConfig.tap_faint, does not (0: off, refused)."""
    flat = np.full((512, 640), 90, np.uint8)
    shaded = Candidate(np.array([300.0, 212.0]), np.array([20.0, 40.0]), 0.27, E[2])
    weaker = Candidate(np.array([302.0, 206.0]), np.array([20.0, 40.0]), 0.22, E[3])
    aside = Candidate(np.array([360.0, 200.0]), np.array([20.0, 40.0]), 0.29, E[4])
    faint = [weaker, shaded, aside, Candidate(np.array([300.0, 200.0]), shaded.size, 0.1, E[5])]
    config = AcquisitionConfig(tap_faint=floor, tap_retry_frames=0)  # (decided on its frame)
    acquisition = LockAcquisition(auto_lock=False, config=config)
    acquisition.request(Tap.make(300, 195))  # above the box's centre: its upper part
    step = partial(acquisition.step, GEOMETRY, flat, np.eye(2, 3), [], "search", None, True)
    decision = step(faint=faint)
    if floor:
        assert decision.lock.source == "tap:faint" and decision.refused is None
        np.testing.assert_array_equal(decision.lock.embedding, E[2])
        # its size, on the tapped point (the sighting's box is loose: legs and shadow)
        np.testing.assert_allclose(decision.lock.centre, [300, 195])
        np.testing.assert_allclose(decision.lock.size, shaded.size)
    else:
        assert decision == AcquisitionDecision(refused="no_target", tap="no_target")
    # a tap away from every sighting is refused whatever the floor
    acquisition.request(Tap.make(500, 400))
    decision = step(faint=faint)
    assert decision.refused == "no_target" and decision.lock is None


def test_a_tap_on_nothing_yet_locks_the_person_found_under_the_same_ground_point_later():
    # person12 --enter left 120: a walker half out of the view beside their long shadow on a
    # kerb is neither detected (the stream's first frame has no motion) nor a region standing
    # out on the tap's frame; a tap two frames later locked. The tap is tried again where
    # the camera motion carried its ground point.
    flat = np.full((512, 640), 90, np.uint8)
    acquisition = LockAcquisition(auto_lock=False)
    acquisition.request(Tap.make(300, 200))
    assert _step(acquisition, flat) == AcquisitionDecision(tap="waiting")
    shift = np.array([[1.0, 0.0, 12.0], [0.0, 1.0, -5.0]])  # the camera turned: +12, -5 px
    assert _step(acquisition, flat, motion=shift).tap == "waiting"
    person = Candidate(np.array([324.0, 190.0]), np.array([12.0, 30.0]), 0.7, E[0])
    elsewhere = Candidate(np.array([400.0, 200.0]), np.array([12.0, 30.0]), 0.9, E[1])
    decision = _step(acquisition, flat, [elsewhere, person], motion=shift)  # at (324, 190)
    assert decision.tap == "lock" and decision.refused is None
    assert decision.lock.source == "tap:detection"
    np.testing.assert_array_equal(decision.lock.embedding, E[0])
    assert not acquisition.pending and acquisition.last_source == "tap:detection"
    # a newer tap replaces the one tried again; an unlock drops it
    acquisition.request(Tap.make(100, 100))
    _step(acquisition, flat)
    acquisition.request(Tap.make(500, 400))
    beside = Candidate(np.array([100.0, 100.0]), np.array([12.0, 30.0]), 0.9, E[2])
    assert _step(acquisition, flat, [beside]).tap == "waiting"  # (not the first tap's point)
    acquisition.reset()
    assert not acquisition.pending and _step(acquisition, flat, [beside]) == NOTHING


def test_a_tap_on_nothing_keeps_the_lock_the_operator_had():
    person = Candidate(np.array([300.0, 200.0]), np.array([12.0, 30.0]), 0.9, E[0])
    flat = _with_person(np.full((512, 640), 90, np.uint8), 300, 200)
    acquisition = LockAcquisition(auto_lock=False)
    acquisition.request(Tap.make(301, 203))
    assert _step(acquisition, flat).lock.source == "tap:blob"  # nobody detected yet: waits
    assert acquisition.waiting
    acquisition.request(Tap.make(500, 400))  # a stray tap on empty ground
    decision = _decided(acquisition, flat, mode="locked")
    assert decision.refused == "no_target" and decision.lock is None and not decision.release
    assert acquisition.last_source == "tap:blob" and acquisition.waiting  # all as it was
    # an auto-lock awaiting the verifier stays provisional, and this frame's verdict counts
    auto = LockAcquisition(auto_lock=True)
    for _ in range(3):
        _step(auto, _ground(), [person])
    assert auto.provisional and auto.last_source == "auto"
    auto.request(Tap.make(500, 400))
    decision = _step(auto, flat, [person], mode="locked", p_human=0.1)
    assert decision == AcquisitionDecision(release=True, tap="waiting")


def test_a_pipeline_tap_on_nothing_says_no_target_and_keeps_the_lock():
    frame = _with_person(np.full((512, 640), 90, np.uint8), 300, 200)
    pipeline = Pipeline(None, None, auto_lock=False)
    pipeline.lock(500, 400)  # nobody there, nothing locked yet
    for _ in range(AcquisitionConfig().tap_retry_frames):  # tried again: no event yet
        result = pipeline.step(frame)
        assert (result.mode, result.event, result.tap) == ("search", None, "waiting")
    result = pipeline.step(frame)
    assert (result.mode, result.event, result.tap, result.target) == (
        "search",
        "no_target",
        "no_target",
        None,
    )
    pipeline.lock(300, 200)  # the person
    result = pipeline.step(frame)
    assert (result.event, result.tap, result.lock_source) == ("lock", "lock", "tap:blob")
    box = result.target.box
    pipeline.lock(500, 400)
    for _ in range(AcquisitionConfig().tap_retry_frames):
        assert pipeline.step(frame).tap == "waiting"
    result = pipeline.step(frame)
    assert (result.mode, result.event, result.tap) == ("locked", "no_target", "no_target")
    assert result.lock_source == "tap:blob"
    np.testing.assert_allclose(result.target.box, box, atol=1.0)
    result = pipeline.step(frame)  # said on the frame that decided it only
    assert (result.event, result.tap) == (None, None)
    pipeline.lock(0, 0, box=(480, 380, 20, 40))  # a box on empty ground: as the operator says
    result = pipeline.step(frame)
    assert (result.event, result.tap, result.lock_source) == ("lock", "lock", "tap:box")


def test_a_move_the_tracker_refuses_keeps_the_taps_lock_source(monkeypatch):
    # the wait for a detection proposes a move (LockCommand.moves); where the tracker keeps
    # its lock (TargetTracker._holds_less: the detection holds less of the person), the line
    # says neither a new lock nor the detection's source
    frame = _with_person(np.full((512, 640), 90, np.uint8), 300, 200)
    pipeline = Pipeline(None, None, auto_lock=False)
    pipeline.lock(300, 200)
    assert pipeline.step(frame).lock_source == "tap:blob"
    move = LockCommand(np.array([310.0, 200.0]), np.array([30.0, 30.0]), None, "tap:detection")
    move = replace(move, moves=True)

    def moving(*args, **kwargs):
        pipeline.acquisition.last_source = move.source  # as the acquisition's wait sets it
        return AcquisitionDecision(lock=move)

    monkeypatch.setattr(pipeline.acquisition, "step", moving)
    for refused, event, source in ((True, None, "tap:blob"), (False, "lock", "tap:detection")):
        monkeypatch.setattr(pipeline.tracker, "_holds_less", lambda *a, r=refused: r)
        result = pipeline.step(frame)
        assert (result.event, result.lock_source) == (event, source)


def test_a_tap_off_the_frame_locks_without_an_error():
    # a person half out of the frame, or a tap at the edge carried out by the camera's motion
    frame = _with_person(_with_person(_ground(), 6, 100), 634, 500)
    for x, y in ((-3.0, 100.0), (645.0, 520.0)):
        acquisition = LockAcquisition(auto_lock=False)
        acquisition.request(Tap.make(x, y))
        assert _step(acquisition, frame).lock is not None
    # far off it, nobody is within reach of the point: refused, not an error
    acquisition = LockAcquisition(auto_lock=False)
    acquisition.request(Tap.make(-40.0, -40.0))
    assert _decided(acquisition, frame).refused == "no_target"
    # the visible half of a person at the left edge is measured
    box = blob_box(_with_person(_ground(), 6, 100), np.array([-3.0, 100.0]), AcquisitionConfig())
    assert box is not None and box[0] < 12


def test_a_tap_on_the_last_frame_shown_is_carried_by_the_camera_motion():
    acquisition = LockAcquisition(auto_lock=False)
    acquisition.request(Tap.make(300, 200, on_last_frame=True))
    shift = np.array([[1.0, 0.0, 15.0], [0.0, 1.0, -4.0]])
    frame = _with_person(np.full((512, 640), 90, np.uint8), 315, 196)  # where it went
    decision = _step(acquisition, frame, motion=shift)
    np.testing.assert_allclose(decision.lock.centre, [315, 196], atol=1.0)


# ----------------------------------------------------------------------------- the tracker
def test_a_lock_is_applied_after_the_frames_camera_motion():
    tracker = TargetTracker()
    start = LockCommand(np.array([300.0, 200.0]), np.array([12.0, 30.0]), E[0], "tap:detection")
    gust = np.array([[1.0, 0.0, 20.0], [0.0, 1.0, 0.0]])
    state = tracker.update(gust, [], lock=start)
    np.testing.assert_allclose(state.centre, [300, 200])  # M_t plays no part on the lock frame
    seen = Candidate(np.array([301.0, 200.0]), np.array([12.0, 30.0]), 0.8, E[0])
    state = tracker.update(np.eye(2, 3), [seen])
    assert state.associated == 0
    assert abs(tracker.x[2]) < 1.0  # no spurious velocity from a motion applied twice


def test_appearance_keeps_the_lock_when_the_detector_is_silent():
    ground = _ground(3)
    tracker = TargetTracker()
    x = 300.0
    tracker.update(
        np.eye(2, 3),
        [],
        lock=LockCommand(np.array([x, 200.0]), np.array([12.0, 30.0]), None, "tap:blob"),
        view=AppearanceView.of(_with_person(ground, x, 200)),
    )
    for _ in range(25):  # walking 1.5 px/frame, no detections at all
        x += 1.5
        state = tracker.update(
            np.eye(2, 3), [], view=AppearanceView.of(_with_person(ground, x, 200))
        )
        assert state.mode == "locked" and state.measured_by == "appearance"
    assert abs(state.centre[0] - x) < 2.0


# ----------------------------------------------------------------------------- pipeline
class StillDetector:
    """A stand-in Stage C: one detection at a fixed NETWORK box, every frame."""

    def __init__(self, box=(100.0, 70.0, 6.0, 14.0)):
        self.box = np.array(box)

    def __call__(self, channels):
        return [Detection(self.box, 0.9, E[0])]


class WalkingDetector(StillDetector):
    """A stand-in Stage C: one detection walking ``step`` NETWORK px a frame to the right;
    :meth:`frame` draws the person there (the tracker's appearance template follows what it
    sees: on an empty ground it would hold the lock where it started)."""

    def __init__(self, box=(60.0, 70.0, 6.0, 14.0), step=0.5):
        super().__init__(box)
        self.step = step

    def frame(self, ground):
        ahead = self.box + [self.step, 0, 0, 0]  # where __call__ puts it on this frame
        x, y, w, h = GEOMETRY.boxes([ahead], Frame.NETWORK, Frame.INPUT)[0]
        return _with_person(ground, x + w / 2, y + h / 2, w, h)

    def __call__(self, channels):
        self.box = self.box + [self.step, 0, 0, 0]
        return super().__call__(channels)


class StubVerifier:
    """A stand-in Stage E model that answers ``p`` once its 16-frame window is full."""

    def __init__(self, p):
        self.p, self.seen = p, 0

    @property
    def ready(self):
        return self.seen >= 16

    def observe(self, channels, box):
        self.seen += 1

    def probability(self):
        return self.p if self.ready else None

    def reset(self):
        self.seen = 0


def _run(pipeline, frames=30, tap_at=None):
    ground = _ground(5)
    draw = getattr(pipeline.detector, "frame", lambda ground: ground)
    results = []
    for t in range(frames):
        if tap_at is not None and t == tap_at[0]:
            pipeline.lock(*tap_at[1:])
        results.append(pipeline.step(draw(ground)))
    return results


def test_auto_lock_is_reported_only_once_the_verifier_accepts_it():
    results = _run(Pipeline(WalkingDetector(), StubVerifier(0.9), auto_lock=True), 40)
    modes = [r.mode for r in results]
    first = modes.index("locked")
    assert first > 16  # provisional while the verifier's window fills
    assert all(m == "search" for m in modes[:first]) and results[first].verified
    assert results[first].lock_source == "auto" and results[first].target.verified


def test_an_accepted_auto_lock_says_lock_once_and_no_search_line_names_a_source():
    results = _run(Pipeline(WalkingDetector(), StubVerifier(0.9), auto_lock=True), 40)
    first = [r.mode for r in results].index("locked")
    assert results[first].event == "lock" and results[first].lock_source == "auto"
    assert [r.event for r in results].count("lock") == 1
    # a provisional auto-lock is reported as search: it names no lock source either
    assert all(r.lock_source is None for r in results if r.mode == "search")


def test_an_unlock_says_unlock_and_the_next_lines_name_no_source():
    pipeline = Pipeline(WalkingDetector(), None, auto_lock=False)
    results = _run(pipeline, 5, tap_at=(1, 149.0, 205.0))  # on the person (149.3, 205.3)
    assert results[1].event == "lock" and results[1].lock_source.startswith("tap")
    pipeline.unlock()
    after = pipeline.step(_ground(5))
    assert (after.mode, after.event, after.lock_source) == ("search", "unlock", None)
    assert pipeline.step(_ground(5)).event is None


@pytest.mark.parametrize(
    ("before", "after", "tracker_event", "unlocked", "event"),
    [
        ("search", "search", None, False, None),
        ("search", "locked", "lock", False, "lock"),  # a tap
        ("search", "locked", None, False, "lock"),  # an auto-lock accepted
        ("search", "reacquire", "lost", False, "lock"),  # accepted as the track lost it
        ("locked", "locked", "lock", False, "lock"),  # a new tap over a lock
        ("reacquire", "locked", "lock", False, "lock"),  # a tap while reacquiring
        ("reacquire", "locked", None, False, "relock"),  # an auto re-lock accepted
        ("reacquire", "locked", "relock", False, "relock"),
        ("locked", "locked", "relock", False, "relock"),  # re-anchored
        ("locked", "reacquire", "lost", False, "lost"),
        ("reacquire", "reacquire", "lost", False, None),  # already said
        ("reacquire", "search", "dropped", False, "dropped"),
        ("reacquire", "search", None, False, "dropped"),  # a re-lock the verifier rejected
        ("locked", "search", None, True, "unlock"),
        ("locked", "locked", None, False, None),
    ],
)
def test_every_change_of_the_reported_mode_carries_an_event(
    before, after, tracker_event, unlocked, event
):
    from emts.pipeline import reported_event

    assert reported_event(before, after, tracker_event, unlocked) == event


def test_auto_lock_the_verifier_rejects_is_released_and_never_reported():
    pipeline = Pipeline(StillDetector(), StubVerifier(0.1), auto_lock=True)
    results = _run(pipeline, 40)
    assert all(r.mode == "search" and r.target is None for r in results)


def test_an_auto_lock_on_something_standing_still_is_released_whatever_the_verifier_says():
    # the verifier is taught that a standing person is human; a parked car and static warm
    # blobs passed it. An auto-lock's target must also cover ground (autolock_min_travel).
    pipeline = Pipeline(StillDetector(), StubVerifier(0.9), auto_lock=True)
    decisions = _spy_on(pipeline.acquisition)
    results = _run(pipeline, 60)
    assert all(r.mode == "search" and r.target is None for r in results)
    locks = [d.lock.source for d in decisions if d.lock is not None]
    assert locks and set(locks) == {"auto"}  # proposed, ...
    assert sum(d.release for d in decisions) >= max(1, len(locks) - 1)  # ... and released

    config = AcquisitionConfig(autolock_min_travel=None)  # off: P(human) alone decides
    still = Pipeline(StillDetector(), StubVerifier(0.9), auto_lock=True, acquisition_config=config)
    assert _run(still, 40)[-1].mode == "locked"


def test_an_auto_lock_whose_target_stops_is_vetoed_only_where_asked_and_a_tap_never():
    for veto in (False, True):
        detector = WalkingDetector()
        config = AcquisitionConfig(autolock_still_veto=veto)
        auto = Pipeline(detector, StubVerifier(0.9), auto_lock=True, acquisition_config=config)
        assert _run(auto, 30)[-1].verified
        detector.step = 0.0  # stops: vetoed at the classifications once its window is still
        later = _run(auto, 30)
        assert later[-1].verified != veto
        assert ("reacquire" in [r.mode for r in later]) == veto

    config = AcquisitionConfig(autolock_still_veto=True)  # an operator's target may stand
    tapped = Pipeline(
        StillDetector(), StubVerifier(0.9), auto_lock=False, acquisition_config=config
    )
    centre = GEOMETRY.boxes([[100, 70, 6, 14]], Frame.NETWORK, Frame.INPUT)[0]
    results = _run(tapped, 40, tap_at=(0, *(centre[:2] + centre[2:] / 2)))
    assert all(r.mode == "locked" for r in results) and results[-1].verified


def test_a_veto_drops_an_auto_lock_but_not_an_operators_tap():
    verifier = StubVerifier(0.9)
    auto = Pipeline(WalkingDetector(), verifier, auto_lock=True)
    results = _run(auto, 30)
    assert results[-1].mode == "locked"
    verifier.p = 0.05  # from now on: does not move like a human
    later = _run(auto, 20)
    assert "reacquire" in [r.mode for r in later] and not later[-1].verified

    tapped = Pipeline(StillDetector(), StubVerifier(0.05), auto_lock=False)
    centre = GEOMETRY.boxes([[100, 70, 6, 14]], Frame.NETWORK, Frame.INPUT)[0]
    results = _run(tapped, 40, tap_at=(0, *(centre[:2] + centre[2:] / 2)))
    assert all(r.mode == "locked" for r in results)
    assert results[-1].target.p_human == 0.05 and not results[-1].verified


def test_the_trackers_own_relock_of_an_auto_lock_waits_for_the_verifier():
    person = Candidate(np.array([300.0, 200.0]), np.array([12.0, 30.0]), 0.9, E[0])
    acquisition = LockAcquisition(auto_lock=True)
    for _ in range(3):  # stable for 3 frames: a provisional auto-lock
        decision = _step(acquisition, _ground(), [person])
    assert decision.lock.source == "auto" and acquisition.provisional
    _step(acquisition, _ground(), [person], mode="locked", p_human=0.9)  # accepted
    assert not acquisition.provisional
    acquisition.track_event("relock")  # lost, then re-made by the tracker on its own
    assert acquisition.provisional and acquisition.relocking
    assert _step(acquisition, _ground(), mode="locked") == AcquisitionDecision()  # waiting
    rejected = _step(acquisition, _ground(), mode="locked", p_human=0.1)
    assert rejected.release and not acquisition.relocking

    tapped = LockAcquisition(auto_lock=False)
    tapped.request(Tap.make(302, 205))
    _step(tapped, _ground(), [person])
    tapped.track_event("relock")  # an operator's target: the re-lock stands at once
    assert not tapped.provisional and not tapped.relocking


def test_reset_forgets_taps_locks_verdicts_and_counters():
    pipeline = Pipeline(StillDetector(), StubVerifier(0.9), auto_lock=False)
    _run(pipeline, 20, tap_at=(0, 300, 200))
    pipeline.lock(10, 10)
    pipeline.reacquisitions = 3
    pipeline.reset()
    assert pipeline.tracker.mode == "search" and not pipeline.acquisition.pending
    assert pipeline.verification.p_human is None and not pipeline.verification.verified
    assert pipeline.reacquisitions == 0
    assert pipeline.step(_ground()).mode == "search"


def test_the_reported_box_stays_inside_the_image():
    pipeline = Pipeline(None, None, auto_lock=False)
    pipeline.lock(2, 2, box=(-30, -30, 40, 40))  # a box hanging off the corner
    box = pipeline.step(_ground()).target.box
    assert box[0] >= 0 and box[1] >= 0 and box[0] + box[2] <= 640 and box[1] + box[3] <= 512


def test_the_verifier_sees_flow_per_thirtieth_of_a_second_whatever_the_frame_rate():
    from emts.geometry import WORKING_GEOMETRY
    from emts.stages.e_verify import FrameView, Verifier

    rng = np.random.default_rng(0)
    texture = cv2.GaussianBlur(rng.random((192, 256)).astype(np.float32), (0, 0), 1.5)
    channels = np.zeros((3, 192, 256), np.float32)
    moved = np.roll(texture, 3, axis=1)
    channels[0], channels[2] = moved, moved - texture
    frame = cv2.GaussianBlur(rng.integers(0, 255, (512, 640), np.uint8), (0, 0), 2)
    view = FrameView(channels, np.roll(frame, 6, axis=1), frame, np.eye(2, 3), WORKING_GEOMETRY)
    box = np.array([100.0, 60.0, 12.0, 30.0])
    at_30, at_10 = Verifier(), Verifier()
    pipeline = Pipeline(None, at_10, auto_lock=False)
    pipeline.fps = 10
    at_30.observe(view, box)
    at_10.observe(view, box)
    np.testing.assert_allclose(at_10.window[0], at_30.window[0] / 3, rtol=1e-5)
    with pytest.raises(BadInputError):
        pipeline.fps = 0


def test_a_person_cut_by_the_frames_edge_beside_their_shadow_is_a_blob():
    """The blob's window is moved inside the frame, not cut by its edge: cut, it was as narrow
    as the tap was near the edge, and a person half out of the left edge with their shadow
    beside them filled it from side to side, like ground texture (the tap found nothing)."""
    frame = _with_person(_ground(), 6, 200, w=12, h=60, level=40)  # the half in view
    frame[180:232, 12:46] = 60  # their long shadow beside them, to the right
    box = blob_box(frame, np.array([6.0, 200.0]), AcquisitionConfig())
    assert box is not None and box[0] < 20 and 40 <= box[3] <= 70


def test_a_blob_does_not_reach_into_the_letterbox_padding():
    """A letterboxed frame's padding repeats the content's edge rows: a person at the edge
    makes streaks there that join their blob to the window's edge. With the content given,
    the window stays inside it and the person is found."""
    geometry = FrameGeometry((640, 360))  # letterboxed into 640x512: content rows 76-435
    content = np.asarray(_ground(size=(360, 640)))
    content[330:360, 294:306] = 40  # a person's upper part, cut by the bottom edge
    working = geometry.to_working(content)
    point = np.array([300.0, 76 + 345.0])
    inside = (0, 76, 640, 436)
    box = blob_box(working, point, AcquisitionConfig(), inside)
    # the person's 30 rows, not their streaks down the padding (without the content: 40 rows,
    # centred 5 px below them)
    assert box is not None and abs(box[3] - 30) <= 2 and abs(box[1] - 421) <= 1.5
