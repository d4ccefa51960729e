"""Stage D's identity: the colour signature, the re-find anywhere, and the honest "locked"."""

from dataclasses import replace

import numpy as np
import pytest

from emts.config import TrackerConfig
from emts.stages.appearance import AppearanceView
from emts.stages.d_track.identity import (
    Refinder,
    colour_proposals,
    colour_signature,
    has_signature,
    similarity,
)
from emts.stages.d_track.relock import person_box
from emts.stages.d_track.tracker import TargetTracker
from emts.stages.d_track.types import Candidate, LockCommand

E = np.eye(8)
SIZE = np.array([12.0, 30.0])
RED, BLUE, GREEN, YELLOW = (40, 40, 200), (160, 60, 30), (40, 170, 40), (30, 200, 220)


def _ground(seed=0, shape=(240, 320)):
    rng = np.random.default_rng(seed)
    base = np.empty((*shape, 3), np.float32)
    base[:] = (120, 135, 150)  # a warm gray paving: colour, but little of it
    base += rng.normal(0, 6, (*shape, 1))
    return base


def _frame(ground, people):
    """``people``: (x, y, shirt, trousers) centres in px; a 12x30 person each."""
    frame = ground.copy()
    for x, y, shirt, trousers in people:
        x0, y0 = int(round(x - 6)), int(round(y - 15))
        top, middle = max(y0, 0), max(y0 + 15, 0)  # (partly out of the top of the view)
        frame[top:middle, x0 : x0 + 12] = shirt
        frame[middle : max(y0 + 30, 0), x0 + 2 : x0 + 10] = trousers
    frame = np.clip(frame, 0, 255).astype(np.uint8)
    return AppearanceView(frame, np.eye(3), frame.mean(axis=2).astype(np.uint8))


def test_the_signature_knows_a_person_by_their_colours():
    ground = _ground()
    view = _frame(ground, [(80, 100, RED, BLUE), (200, 100, GREEN, YELLOW)])
    me = colour_signature(view, np.array([80.0, 100.0]), SIZE)
    moved = colour_signature(_frame(ground, [(150, 60, RED, BLUE)]), np.array([150.0, 60.0]), SIZE)
    other = colour_signature(view, np.array([200.0, 100.0]), SIZE)
    assert me is not None and moved is not None and other is not None
    assert similarity(me, moved) > 0.8 > 0.2 > similarity(me, other)
    # shirt and trousers apart: the same colours the other way up are someone else
    upside = colour_signature(_frame(ground, [(150, 60, BLUE, RED)]), np.array([150.0, 60.0]), SIZE)
    assert upside is not None and similarity(me, upside) < 0.5
    # bare ground has too few of a person's own pixels: no signature; gray frames: none
    assert colour_signature(view, np.array([260.0, 200.0]), SIZE) is None
    gray = view.working
    assert colour_signature(AppearanceView.of(gray), np.array([80.0, 100.0]), SIZE) is None
    # has_signature says whether there is one, without the histograms
    for at, frame in (((80.0, 100.0), view), ((260.0, 200.0), view), ((80.0, 100.0), None)):
        frame = frame or AppearanceView.of(gray)
        for size in (SIZE, 2 * SIZE, 0.5 * SIZE):
            there = colour_signature(frame, np.array(at), size) is not None
            assert has_signature(frame, np.array(at), size) == there


def test_the_refinder_wants_a_walking_chain_of_the_look():
    def run(steps, similar=0.9, walking=True):
        refinder = Refinder(frames=3, least=0.3)
        refinder.pace, refinder.reach = 0.7, (5.0, 6.0)
        found = None
        for t, position in enumerate(steps):
            if position is None:
                found = refinder.step([], [], lambda a, b: walking)
                continue
            found = refinder.step([np.array(position, float)], [similar], lambda a, b: walking)
            if found is not None:
                return t, found
        return None

    walk = [(100 + 3 * t, 50) for t in range(6)]
    t, (index, velocity) = run(walk)
    assert t == 2 and index == 0
    np.testing.assert_allclose(velocity, [3, 0])
    assert run(walk, similar=0.2) is None  # not their look
    assert run([(100, 50)] * 6) is None  # stands still: a bush, a post
    assert run(walk, walking=False) is None  # moves only with the camera's parallax
    assert run([(100 + 40 * t, 50) for t in range(6)]) is None  # hops: not one walker
    # the detector misses a frame or two: the chain waits for them
    gappy = [walk[0], None, walk[2], walk[3], None, walk[5]]
    assert run(gappy) is not None
    # a candidate that may not start a chain only extends one
    refinder = Refinder(frames=3, least=0.3)
    refinder.pace, refinder.reach = 0.7, (5.0, 6.0)
    for position in walk[:3]:
        found = refinder.step([np.array(position, float)], [0.9], lambda a, b: True, [False])
    assert found is None and refinder.chains == []
    found = refinder.step([np.array(walk[0], float)], [0.9], lambda a, b: True, [True])
    for position in walk[1:3]:
        found = refinder.step([np.array(position, float)], [0.9], lambda a, b: True, [False])
    assert found is not None


def _tracker_on(ground, start=(80.0, 120.0), config=None):
    tracker = TargetTracker(config)
    view = _frame(ground, [(*start, RED, BLUE)])
    tracker.lock(LockCommand(np.array(start), SIZE, None, "tap:box", colour=True), view)
    return tracker


def _seen(x, y):
    return Candidate(np.array([x, y], float), SIZE, 0.6, E[1])


@pytest.mark.parametrize("occluded", [1, 2])
def test_a_hidden_person_is_not_locked_once_the_match_is_refused(occluded):
    """The person vanishes (the match is refused: an occluder): `reacquire` from the first
    unmeasured frame (TrackerConfig.unseen_frames_occluded; 2: from the second)."""
    ground = _ground(1)
    tracker = _tracker_on(ground)
    tracker.config = replace(tracker.config, unseen_frames_occluded=occluded)
    for _ in range(3):  # seen: the match has a running peak to drop from
        seen = tracker.update(np.eye(2, 3), [], view=_frame(ground, [(80.0, 120.0, RED, BLUE)]))
        assert seen.mode == "locked" and seen.measured_by == "appearance"
    modes = []
    for _ in range(1, 6):
        modes.append(tracker.update(np.eye(2, 3), [], view=_frame(ground, [])).mode)
    assert modes[: occluded - 1] == ["locked"] * (occluded - 1)
    assert set(modes[occluded - 1 :]) == {"reacquire"}


def test_the_person_is_found_again_anywhere_and_a_look_alike_in_other_colours_is_not():
    ground = _ground(2)
    tracker = _tracker_on(ground)
    for _ in range(10):  # hidden: lost
        state = tracker.update(np.eye(2, 3), [], view=_frame(ground, []))
    assert state.mode == "reacquire"
    # Someone else walks in, near where the person was; the person reappears far away.
    events = []
    for t in range(8):
        other = (90.0 + 3 * t, 120.0, GREEN, YELLOW)
        me = (250.0 - 3 * t, 60.0, RED, BLUE)
        seen = [_seen(*other[:2]), _seen(*me[:2])]
        state = tracker.update(np.eye(2, 3), seen, view=_frame(ground, [other, me]))
        events.append(state.event)
        if state.mode == "locked":
            break
    assert state.mode == "locked" and state.associated == 1 and "relock" in events
    assert t <= 3  # within a few frames of being seen again
    centre, _ = tracker.image_box()
    assert abs(centre[0] - me[0]) < 4 and abs(centre[1] - me[1]) < 4


def _lost(ground):
    tracker = _tracker_on(ground)
    for _ in range(10):  # hidden long enough to be lost, not only unseen
        state = tracker.update(np.eye(2, 3), [], view=_frame(ground, []))
    assert state.mode == "reacquire" and tracker.mode == "reacquire"
    return tracker


def test_the_person_seen_whole_near_where_they_were_is_relocked_at_once():
    ground = _ground(3)
    me = (84.0, 120.0, RED, BLUE)
    tracker = _lost(ground)
    state = tracker.update(np.eye(2, 3), [_seen(*me[:2])], view=_frame(ground, [me]))
    assert state.mode == "locked" and state.event == "relock" and state.associated == 0
    # someone in other colours there is not them; nor, at once, a detection of the upper
    # half alone (a box that small re-locked above the person and drifted off on person12)
    other = (84.0, 120.0, GREEN, YELLOW)
    tracker = _lost(ground)
    state = tracker.update(np.eye(2, 3), [_seen(*other[:2])], view=_frame(ground, [other]))
    assert state.mode == "reacquire"
    tracker = _lost(ground)
    half = Candidate(np.array([84.0, 112.5]), np.array([12.0, 15.0]), 0.6, E[1])
    state = tracker.update(np.eye(2, 3), [half], view=_frame(ground, [me]))
    assert state.mode == "reacquire"


def test_an_unseen_lock_is_not_locked_again_on_someone_in_other_colours():
    ground = _ground(4)
    tracker = _tracker_on(ground)
    for _ in range(3):  # hidden: unseen, reported reacquire, still associating as a lock
        state = tracker.update(np.eye(2, 3), [], view=_frame(ground, []))
    assert state.mode == "reacquire" and tracker.mode == "locked"
    other = (82.0, 120.0, GREEN, YELLOW)
    for _ in range(3):
        state = tracker.update(np.eye(2, 3), [_seen(*other[:2])], view=_frame(ground, [other]))
        assert state.mode == "reacquire"
    # the person themself, back there, is locked again
    tracker = _tracker_on(ground)
    for _ in range(3):
        tracker.update(np.eye(2, 3), [], view=_frame(ground, []))
    me = (82.0, 120.0, RED, BLUE)
    state = tracker.update(np.eye(2, 3), [_seen(*me[:2])], view=_frame(ground, [me]))
    assert state.mode == "locked"


def test_a_person_who_stopped_while_hidden_is_relocked_standing_still():
    def frames_to_relock(still_frames):
        ground = _ground(5)
        me = (80.0, 120.0, RED, BLUE)
        tracker = _tracker_on(ground, start=me[:2])
        tracker.config = replace(tracker.config, relock_still_frames=still_frames)
        for _ in range(3):  # seen: the look's running peak settles
            tracker.update(np.eye(2, 3), [], view=_frame(ground, [me]))
        for _ in range(10):  # hidden: lost
            state = tracker.update(np.eye(2, 3), [], view=_frame(ground, []))
        assert tracker.mode == "reacquire"
        for t in range(1, 8):  # back, standing where they were; the detector misses them
            state = tracker.update(np.eye(2, 3), [], view=_frame(ground, [me]))
            if state.mode == "locked":
                return t
        return None

    assert frames_to_relock(2) == 2
    assert frames_to_relock(0) is None  # a match that does not walk: not without this


def _walked_out(config=None, out=True, at_lock=False):
    """A tapped walker (appearance only) walks up 3 px a frame, out through the top of the
    view (``out``), or is hidden mid-view; returns the tracker once it has lost them
    (``config`` set after the lock, or from it: ``at_lock``)."""
    ground = _ground(7)
    tracker = _tracker_on(ground, start=(80.0, 60.0), config=config if at_lock else None)
    if config is not None:
        tracker.config = config
    for t in range(1, 40):
        y = 60.0 - 3.0 * t
        people = [(80.0, y, RED, BLUE)] if out or t < 5 else []
        tracker.update(np.eye(2, 3), [], view=_frame(ground, people))
        if tracker.mode == "reacquire":
            return tracker, ground
    raise AssertionError("never lost")


@pytest.mark.parametrize("config", [None, TrackerConfig(still_after_exit=True)])
def test_a_still_match_at_the_edge_a_walker_left_through_does_not_relock(config):
    """What stands still where a walker left the view is the ground (person12 --leave 3
    re-locked on it 9 frames after the walker left): a still match re-locks a person lost
    mid-view, or one who left it with TrackerConfig.still_after_exit."""

    def still(tracker, ground, me):  # a strong match with their colours, twice in one place
        view = _frame(ground, [me])
        found = [(tracker.typical_peak, np.array(me[:2]), 20.0)]
        assert tracker._still_match(found, view) is None  # (a first frame is no streak)
        return tracker._still_match(found, view)

    relocked = still(*_walked_out(config), (80.0, 16.0, RED, BLUE))  # at the edge they left
    assert (relocked is None) == (config is None)
    # hidden mid-view while walking: one who stopped there is re-locked standing
    assert still(*_walked_out(config, out=False), (80.0, 48.0, RED, BLUE)) is not None


def test_a_look_alike_crossing_the_person_does_not_take_the_lock():
    def follow(hold):
        ground = _ground(6)
        tracker = _tracker_on(ground, start=(200.0, 120.0))
        tracker.config = replace(tracker.config, crossing_hold=hold)
        # the person walks left; a copy of them walks down across their path, drawn over
        # them where they meet (frame 25), as a pasted copy lies over the walker on person12
        for t in range(1, 50):
            me = (200.0 - 2 * t, 120.0, RED, BLUE)
            copy = (150.0, 120.0 + 2 * (t - 25), RED, BLUE)
            state = tracker.update(np.eye(2, 3), [], view=_frame(ground, [me, copy]))
        centre, _ = tracker.image_box()
        return state.mode, centre, me[:2], copy[:2]

    mode, centre, me, copy = follow(TargetTracker().config.crossing_hold)
    assert mode == "locked" and np.hypot(*(centre - me)) < 3
    _, centre, me, copy = follow(0)  # the plain match follows the copy away
    assert np.hypot(*(centre - copy)) < 3


def test_a_look_alike_standing_beside_the_path_opens_no_crossing_hold():
    ground = _ground(7)
    tracker = _tracker_on(ground, start=(200.0, 120.0))
    for t in range(1, 30):
        me = (200.0 - 2 * t, 120.0, RED, BLUE)
        still = (150.0, 100.0, RED, BLUE)  # the same look, standing 20 px off the path
        tracker.update(np.eye(2, 3), [], view=_frame(ground, [me, still]))
        assert tracker._crossing == 0  # (a hold would freeze the walk on a mere bystander)
    centre, _ = tracker.image_box()
    assert np.hypot(*(centre - me[:2])) < 3


@pytest.mark.parametrize(
    ("out", "floor", "edge", "found"),
    [(True, 0.2, True, True), (True, 0.0, True, False), (False, 0.2, True, False)]
    + [(True, 0.2, False, False)],
)
def test_a_walker_who_left_the_view_is_refound_on_faint_detections(out, floor, edge, found):
    """A walker who left the view comes back cut by its edge and is first detected faintly
    (person12 --leave 5: sightings 0.21-0.29 for 6 frames under the threshold 0.3): faint
    detections (down to TrackerConfig.refind_faint) re-find them with the same chain, look
    and walk, a chain starting at the view's edge. Not a faint chain starting inside the view
    (gust path 38 re-locked on another region with the person's colours), nor a person hidden
    mid-view (person12 --occlude 60:69 re-locked on a faint 22-px box of their upper half that
    slid off)."""
    config = TrackerConfig(refind_faint=floor, refind_colour=0)  # (detections alone)
    tracker, ground = _walked_out(config, out=out)
    for _ in range(6):  # gone a while
        tracker.update(np.eye(2, 3), [], view=_frame(ground, []))
    for t in range(8):  # back far from where they went, walking, detected faintly only
        # in through the top edge (their head first), or already well inside the view
        me = (200.0, 12.0 + 3 * t, RED, BLUE) if edge else (200.0, 100.0 + 3 * t, RED, BLUE)
        faint = [Candidate(np.array(me[:2]), SIZE, 0.25, E[1])]
        state = tracker.update(np.eye(2, 3), [], view=_frame(ground, [me]), faint=faint)
        if state.mode == "locked":
            break
    assert (state.mode == "locked") == found
    if found:
        assert t <= 3 and np.hypot(*(state.centre - me[:2])) < 4


def test_colour_proposals_are_where_the_colours_of_the_lock_are():
    ground = _ground(8)
    me, other = (230.0, 70.0, RED, BLUE), (90.0, 160.0, GREEN, YELLOW)
    signature = colour_signature(_frame(ground, [me]), np.array(me[:2]), SIZE)
    content = (0.0, 0.0, 320.0, 240.0)
    places = colour_proposals(_frame(ground, [me, other]), signature, content, SIZE)
    assert places and np.hypot(*(places[0] - me[:2])) <= SIZE[1] / 4  # (~8 samples a box)
    assert all(np.hypot(*(p - other[:2])) > SIZE[1] / 2 for p in places[:1])
    gray = AppearanceView(np.zeros((240, 320), np.uint8))
    assert colour_proposals(gray, signature, content, SIZE) == []


@pytest.mark.parametrize(("out", "colours", "refind", "found"), [
    (True, (RED, BLUE), 4, True), (True, (RED, BLUE), 0, False),
    (True, (GREEN, YELLOW), 4, False), (False, (RED, BLUE), 4, True),
])  # fmt: skip
def test_a_lost_walker_is_refound_by_their_colours_undetected(out, colours, refind, found):
    """A walker who left the view (or was hidden inside it) comes back elsewhere, whole, and
    the detector never fires (person12 --leave 4: a 90-px walker, bigger than the detector
    was trained for, came back through the left edge): the places with the lock's colours
    (TrackerConfig.refind_colour), chained as a walk, re-find them; never someone in other
    colours."""
    config = TrackerConfig(refind_colour=refind, refind_faint=0.0)
    _assert_comes_back(*_walked_out(config, out=out), colours, found)


def _assert_comes_back(tracker, ground, colours, found):
    """The walker lost by ``tracker`` stays gone 6 frames, then comes back far from where
    they left, walking left 3 px a frame, never detected: re-locked on them within 4 frames
    (``found``), or never."""
    for _ in range(6):  # gone a while
        tracker.update(np.eye(2, 3), [], view=_frame(ground, []))
    for t in range(8):
        me = (250.0 - 3 * t, 150.0, *colours)
        state = tracker.update(np.eye(2, 3), [], view=_frame(ground, [me]))
        if state.mode == "locked":
            break
    assert (state.mode == "locked") == found
    if found:
        assert t <= 3 and np.hypot(*(state.centre - me[:2])) < 4


def test_a_look_alike_that_steps_closer_once_and_keeps_its_distance_opens_no_hold():
    """The person's own companion in the template's eyes -- their long shadow with their legs
    in it, walking with them -- seen by the half-resolution search one step closer once (its
    maximum jitters): on person12 that opened a hold at frame 217, the track followed the
    detections of legs and shadow down and lost the person at 246. A look-alike crossing keeps
    closing in (TrackerConfig.crossing_confirm searches in a row)."""

    def holds(confirm):
        ground = _ground(7)
        tracker = _tracker_on(ground, start=(200.0, 120.0))
        tracker.config = replace(tracker.config, crossing_confirm=confirm)
        opened = False
        for t in range(1, 40):
            me = (200.0 - 2 * t, 120.0, RED, BLUE)
            gap = 32.0 if t in (11, 12) else 40.0  # one step closer, for two frames
            companion = (200.0 - 2 * t, 120.0 + gap, RED, BLUE)
            tracker.update(np.eye(2, 3), [], view=_frame(ground, [me, companion]))
            opened = opened or tracker._crossing > 0
        centre, _ = tracker.image_box()
        return opened, np.hypot(*(centre - me[:2]))

    opened, off = holds(TrackerConfig().crossing_confirm)
    assert not opened and off < 3
    assert holds(1)[0]  # closing in on one search was enough before


def _with_shadow(ground, person, length=30):
    """``person`` (as for :func:`_frame`) with their cast shadow below the feet: the ground
    darkened to half, its colour kept, ``length`` px long."""
    x, y = person[:2]
    shaded = ground.copy()
    x0, feet = int(round(x - 5)), int(round(y + 15))
    shaded[feet : feet + length, x0 : x0 + 10] *= 0.5
    return _frame(shaded, [person])


def test_the_person_in_a_box_of_their_legs_and_shadow_is_the_person():
    ground = _ground(7)
    me = (84.0, 120.0, RED, BLUE)
    view = _with_shadow(ground, me)
    # a detection of the legs and the shadow (the box 12 px low): the person is above it
    found = person_box(view, np.array([84.0, 132.0]), SIZE, 30.0)
    assert found is not None
    (cx, cy), (w, h) = found
    assert abs(cx - 84.0) < 2 and abs(cy - 120.0) < 4 and 24 <= h <= 34 and w <= 16
    # a box of the shadow alone overlaps no own sample of the person's size; gray: none
    assert person_box(view, np.array([84.0, 160.0]), SIZE, 30.0) is None
    assert person_box(AppearanceView.of(view.working), np.array([84.0, 132.0]), SIZE, 30.0) is None


@pytest.mark.parametrize("on", [True, False])
def test_a_relock_on_a_box_of_legs_and_shadow_takes_the_person(on):
    ground = _ground(3)
    me = (84.0, 120.0, RED, BLUE)
    tracker = _lost(ground)
    tracker.config = replace(tracker.config, relock_person_box=on)
    low = Candidate(np.array([84.0, 126.0]), SIZE, 0.6, E[1])  # 6 px low: legs and shadow
    state = tracker.update(np.eye(2, 3), [low], view=_with_shadow(ground, me))
    assert state.mode == "locked" and state.event == "relock"
    centre, _ = tracker.image_box()
    assert (abs(centre[1] - me[1]) < 3) == on


@pytest.mark.parametrize("on", [True, False])
def test_a_tap_on_a_box_of_legs_and_shadow_locks_the_person(on):
    # person12 at 1280x720, the tap at frame 230: the detection under the finger held the
    # walker's legs and long shadow (128 px tall for an 89-px walker) and the lock slid onto
    # the shadow; the box is narrowed to the person, as a re-lock's is
    ground = _ground(3)
    me = (84.0, 120.0, RED, BLUE)
    view = _with_shadow(ground, me)
    tracker = TargetTracker(replace(TrackerConfig(), tap_person_box=on))
    tapped = LockCommand(np.array([84.0, 128.0]), np.array([14.0, 46.0]), E[1], "tap:detection")
    tracker.lock(tapped, view)
    centre, size = tracker.image_box()
    assert (abs(centre[1] - me[1]) < 3 and size[1] <= 36) == on
    # an auto-lock, a tap on a blob or a drawn box, and gray frames keep the box given
    for source, image in (("auto", view), ("tap:box", view), ("tap:detection", None)):
        tracker = TargetTracker(replace(TrackerConfig(), tap_person_box=True))
        gray = AppearanceView.of(view.working)
        tracker.lock(replace(tapped, source=source), gray if image is None else image)
        assert tracker.image_box()[1].tolist() == tapped.size.tolist()


@pytest.mark.parametrize("on", [True, False])
def test_the_box_reported_has_the_persons_width_on_colour_frames(on):
    # person12: the detector's boxes of the walker took in their long shadow beside them
    # (32x47 px for a 20x46 walker), and the locked box was 1.5x their width
    ground = _ground(4)
    me = (80.0, 120.0, RED, BLUE)
    shaded = ground.copy()
    shaded[105:135, 86:94] *= 0.5  # their shadow, beside them (the ground's colour, darker)
    view = _frame(shaded, [me])
    config = replace(TrackerConfig(), person_width=on)
    wide = Candidate(np.array([81.0, 120.0]), np.array([20.0, 30.0]), 0.6, E[1])
    states, boxes = [], []
    for image in (view, AppearanceView.of(view.working)):  # colour, then gray
        tracker = _tracker_on(ground, config=config)
        for _ in range(6):
            state = tracker.update(np.eye(2, 3), [wide], view=image)
            assert state.mode == "locked" and state.associated == 0
        states.append(state)
        boxes.append(tracker.image_box())
    colour, gray = states
    # the person is 12 px wide (14 with the own-target mask's grown edge); the detection 20
    assert (colour.person_size is not None and colour.person_size[0] < 15.0) == on
    assert gray.person_size is None  # no colour: the track's box
    # the track's own box -- what the checks, the searches and Stage E read -- is the same
    assert colour.size[0] > 18.0 and np.allclose(boxes[0][1], colour.size)
    if on:
        assert colour.person_size[1] == colour.size[1]  # the height is the detector's


@pytest.mark.parametrize("on", [True, False])
def test_a_detection_of_part_of_the_person_does_not_shrink_the_box_reported(on):
    # person12, frames 39-43: detections 0.6-0.7 of the walker's height (their upper body)
    # shrank the box to 0.84 of theirs for the rest of the run
    ground = _ground(5)
    me = (80.0, 120.0, RED, BLUE)
    view = AppearanceView.of(_frame(ground, [me]).working)  # any frames: gray here
    config = replace(TrackerConfig(), person_height=on)
    tracker = _tracker_on(ground, config=config)
    upper = Candidate(np.array([80.0, 112.0]), np.array([12.0, 18.0]), 0.6, E[1])
    for _ in range(4):
        state = tracker.update(np.eye(2, 3), [upper], view=view)
        assert state.mode == "locked" and state.associated == 0
    assert state.size[1] < 27.0  # the track's own box follows the detections
    shown = state.size if state.person_size is None else state.person_size
    assert (shown[1] == pytest.approx(SIZE[1], abs=0.5)) == on
    # a detection of the whole person draws the box reported back to the track's own
    whole = Candidate(np.array([80.0, 120.0]), SIZE, 0.6, E[1])
    for _ in range(12):
        state = tracker.update(np.eye(2, 3), [whole], view=view)
    shown = state.size if state.person_size is None else state.person_size
    assert shown[1] == pytest.approx(state.size[1], abs=0.5)


@pytest.mark.parametrize("widest", [1.3, 0.0])
def test_a_relock_does_not_take_a_region_far_wider_than_the_detection(widest):
    # PETS 2009 vtest.avi (auto-lock): the own-target region around a detection held the
    # person beside them too, and re-locks took boxes twice the detection's width
    ground = _ground(3)
    me = (84.0, 120.0, RED, BLUE)
    beside = (96.0, 120.0, RED, BLUE)  # shoulder to shoulder: one region with me
    tracker = _lost(ground)
    tracker.config = replace(tracker.config, relock_person_max=widest)
    seen = Candidate(np.array([84.0, 120.0]), SIZE, 0.6, E[1])
    state = tracker.update(np.eye(2, 3), [seen], view=_frame(ground, [me, beside]))
    assert state.mode == "locked" and state.event == "relock"
    centre, size = tracker.image_box()
    if widest:  # the detection's box, as it came
        assert abs(centre[0] - 84.0) < 1 and size[0] == pytest.approx(SIZE[0], abs=0.5)
    else:  # the pair
        assert centre[0] > 86.0 and size[0] >= 18.0  # (as far as the search reached)


def test_a_relocks_uncertainty_is_the_locks_in_the_image_whatever_the_stabilized_scale():
    ground = _ground(3)
    for in_image, expected in ((True, 4.0 / 16), (False, 4.0)):
        tracker = _lost(ground)
        tracker.config = replace(tracker.config, relock_covariance_in_image=in_image)
        tracker.g = np.diag([4.0, 4.0, 1.0])  # the ground loomed x4 since the lock
        tracker._relock(np.array([20.0, 30.0]), SIZE, None, rebuild=False)
        assert tracker.p[0, 0] == pytest.approx(expected)
        assert tracker.p[2, 2] == pytest.approx(25.0 / 16 if in_image else 25.0)
        assert tracker.p[4, 4] == pytest.approx(9.0)  # the size's is in WORKING px already


def _shadow_of_their_shape(ground, x, y, shade=0.65):
    """A shadow of the shape of :func:`_frame`'s person at (x, y): the ground darkened, its
    colour kept -- as bright as the person to the gray template, none of their colours."""
    shaded = ground.copy()
    x0, y0 = int(round(x - 6)), int(round(y - 15))
    shaded[y0 : y0 + 15, x0 : x0 + 12] *= shade
    shaded[y0 + 15 : y0 + 30, x0 + 2 : x0 + 10] *= shade
    return np.clip(shaded, 0, 255).astype(np.uint8)


def _bush_of_their_shape(ground, x, y):
    """A bush of the person's shape and brightness: green where they wore red and blue."""
    return _frame(ground, [(x, y, GREEN, GREEN)]).image


def _fading_walk(ground, into, steps, detected=False, **config):
    """Lock on the person, then walk them 2 px a frame, faded over frames 4-11 into ``into(x,
    y)`` (an image of the same ground), the appearance match alone following them (10 fps,
    the template refreshed all along; ``detected``: and a detection where they are, every
    frame): the modes, frame by frame."""
    tracker = _tracker_on(ground)
    tracker.fps = 10.0
    tracker.config = replace(tracker.config, **config)
    x, modes = 80.0, []
    for step in range(steps):
        x += 2.0
        fade = float(np.clip((step - 3) / 8, 0, 1))
        person = _frame(ground, [(x, 120.0, RED, BLUE)]).image.astype(np.float32)
        other = into(ground, x, 120.0).astype(np.float32)
        frame = np.clip((1 - fade) * person + fade * other, 0, 255).astype(np.uint8)
        view = AppearanceView(frame, np.eye(3), frame.mean(axis=2).astype(np.uint8))
        seen = [_seen(x, 120.0)] if detected else []
        state = tracker.update(np.eye(2, 3), seen, view=view)
        modes.append(state.mode)
        assert state.measured_by in (
            ("both", "detection", None) if detected else ("appearance", None)
        )
    return modes


@pytest.mark.parametrize("frames", [3, 0])
def test_a_lock_whose_match_slid_onto_a_person_shaped_shadow_is_lost(frames):
    """A box with none of a person's colours in or around it is not `locked` for long
    (TrackerConfig.lost_without_look; 0: it stays `locked` on the shadow)."""
    # (each check on its own: the emptied box's is off)
    modes = _fading_walk(
        _ground(4), _shadow_of_their_shape, 18, lost_without_look=frames, lost_empty_frames=0
    )
    assert modes[:8] == ["locked"] * 8  # the person's colours are still there
    # none of their colours left from frame 10 on: lost on the third such frame, or never
    assert set(modes[12:]) == ({"reacquire"} if frames else {"locked"})


@pytest.mark.parametrize("frames", [2, 0])
def test_a_tap_lock_on_a_detected_shadow_is_lost(frames):
    """A tap lock whose box holds almost none of the person's own samples is not `locked` for
    long, even where a detection there agrees (TrackerConfig.lost_empty_frames; 0: it stays
    `locked` on the shadow). person12 at 1280x720, the walker cut out of frames 250-269: the
    match and a detection took the shadow left behind, `locked` on 10 frames."""
    modes = _fading_walk(
        _ground(4), _shadow_of_their_shape, 18, detected=True, lost_empty_frames=frames
    )
    assert modes[:8] == ["locked"] * 8  # the person is still there
    assert set(modes[12:]) == ({"reacquire"} if frames else {"locked"})


@pytest.mark.parametrize("frames", [5, 0])
def test_a_lock_whose_match_slid_onto_a_bush_is_lost(frames):
    """A box whose colours are unlike the lock's is not `locked` for long
    (TrackerConfig.lost_unlike_frames; 0: it stays `locked` on the bush)."""
    # (each check on its own: the shadow's off)
    modes = _fading_walk(
        _ground(5), _bush_of_their_shape, 20, lost_unlike_frames=frames, lost_without_look=0
    )
    assert modes[:8] == ["locked"] * 8  # mostly the person's colours still
    assert set(modes[14:]) == ({"reacquire"} if frames else {"locked"})


def test_colour_places_cut_by_the_views_edge_are_where_the_person_is():
    """A person coming in through the left edge (7 of their 12 px inside): their place is
    the box around what is inside, not one pinned half a box in (a pinned place stands still
    while the walker comes in, and its chain does not walk)."""
    ground = _ground(2)
    me = colour_signature(_frame(ground, [(80.0, 120.0, RED, BLUE)]), np.array([80.0, 120.0]), SIZE)
    content = (0.0, 0.0, 320.0, 240.0)
    firsts = []
    for inside in (5, 7, 9):  # coming in, 2 px a frame
        image = ground.copy()
        image[105:120, 0:inside] = RED
        image[120:135, 0 : inside - 2] = BLUE
        image = np.clip(image, 0, 255).astype(np.uint8)
        view = AppearanceView(image, np.eye(3), image.mean(axis=2).astype(np.uint8))
        places = colour_proposals(view, me, content, SIZE, 4)
        assert abs(places[0][1] - 120) < 3 and places[0][0] < SIZE[0] / 2  # the person first
        firsts.append(places[0][0])
    assert firsts[0] < firsts[-1]  # ... moving in as they do


def test_a_region_of_one_of_the_locks_colours_is_not_placed_before_the_person():
    """person12 leave path 1: a tree's shadow, wholly as dark as the walker's trousers,
    outranked the walker (their trousers a small part of the lock's box, wider than them) in
    a ratio histogram's sum; a box must be like the lock in both halves."""
    ground = _ground(4)
    dark = (25, 25, 30)
    me = (230.0, 150.0, RED, dark)
    signature = colour_signature(_frame(ground, [me]), np.array(me[:2]), SIZE)
    content = (0.0, 0.0, 320.0, 240.0)
    view = _frame(ground, [me])
    image = view.image.copy()
    image[20:110, 20:110] = dark  # the shade, away from the person (... no place on it)
    view = AppearanceView(image, np.eye(3), image.mean(axis=2).astype(np.uint8))
    # the lock's box three times the person's width (person12's shade 260 tap: 40 px wide
    # on a 14-px walker)
    wide = SIZE * np.array([3.0, 1.0])
    places = colour_proposals(view, signature, content, wide, 4)
    assert abs(places[0][1] - me[1]) <= 3  # first a box holding the person ...
    assert abs(places[0][0] - me[0]) <= wide[0] / 2
    assert not any(p[0] < 110 + wide[0] / 2 and p[1] < 110 + wide[1] / 2 for p in places)


def test_signature_bins_are_hue_saturation_value_levels():
    from emts.stages.d_track.identity import _bins

    rng = np.random.default_rng(1)
    hsv = rng.integers(0, 256, (50, 40, 3)).astype(np.uint8)
    hsv[..., 0] %= 180  # OpenCV's 8-bit hue
    hsv[0, :3] = [[0, 0, 0], [179, 255, 255], [90, 85, 86]]
    h, s, v = (hsv[..., k].astype(int) for k in range(3))
    assert np.array_equal(_bins(hsv), (h * 8 // 180 * 3 + s * 3 // 256) * 3 + v * 3 // 256)
    assert _bins(hsv.reshape(-1, 3)).shape == (2000,)  # a list of pixels too


BRIGHT_RED = (30, 30, 255)


def _shaded(view: AppearanceView, factor: float, columns: slice = slice(None)) -> AppearanceView:
    """``view`` with ``columns`` darkened by ``factor`` (a shade over person and ground alike)."""
    image = view.image.astype(np.float32)
    image[:, columns] *= factor
    image = np.clip(image, 0, 255).astype(np.uint8)
    return AppearanceView(image, np.eye(3), image.mean(axis=2).astype(np.uint8))


def test_a_relative_signature_is_the_one_from_the_sun_in_deep_shade():
    """A building's shade darkens a person and the ground around them alike (person12: the
    paving at 22 % of its sunlit value): their absolute values all fall into the darkest
    bin, their values relative to the ground stay where they were."""
    ground = _ground(3)
    sun = _frame(ground, [(150, 100, BRIGHT_RED, BLUE)])
    at = np.array([150.0, 100.0])
    shade = _shaded(sun, 0.4)  # (deeper, and the own-target mask's contrast is not met)
    absolute = similarity(colour_signature(sun, at, SIZE), colour_signature(shade, at, SIZE))
    relative = similarity(
        colour_signature(sun, at, SIZE, relative=True),
        colour_signature(shade, at, SIZE, relative=True),
    )
    assert relative > 0.85 and relative > absolute + 0.2
    # still the person's colours: someone in others is not them, in the sun or the shade
    other = _shaded(_frame(ground, [(150, 100, GREEN, YELLOW)]), 0.4)
    me = colour_signature(sun, at, SIZE, relative=True)
    assert similarity(me, colour_signature(other, at, SIZE, relative=True)) < 0.3


def test_relative_colour_proposals_find_the_person_in_a_shade_beside_the_sun():
    """The lock's relative signature taken in the sun; the person now in the shaded half of
    the view, a person in other colours in the sun: the first relative place is the person."""
    ground = _ground(8)
    me, other = (230.0, 70.0, BRIGHT_RED, BLUE), (90.0, 160.0, GREEN, YELLOW)
    signature = colour_signature(_frame(ground, [me]), np.array(me[:2]), SIZE, relative=True)
    view = _shaded(_frame(ground, [me, other]), 0.4, slice(160, None))
    content = (0.0, 0.0, 320.0, 240.0)
    places = colour_proposals(view, signature, content, SIZE, relative=True)
    assert places and np.hypot(*(places[0] - me[:2])) <= SIZE[1] / 4


@pytest.mark.parametrize("relative", [False, True])
@pytest.mark.parametrize(("pace", "found"), [(0.05, True), (0.4, False)])
def test_the_colour_refind_walks_in_body_heights_when_asked(relative, pace, found):
    """TrackerConfig.refind_colour_pace: the colour re-find's chain must walk that many body
    heights a frame at pace_fps (not stabilized px, which G's scale drifts away from): a
    walker coming back at 3 px a frame of 30 fps (0.3 of their 30 px height a frame at 10 fps)
    is re-found at 0.05, not at 0.4; the relative
    signature (refind_colour_relative) re-finds them as the absolute one does. (The other
    re-lock paths off: no detections, no chain of the frozen look, no still match.)"""
    config = TrackerConfig(
        refind_faint=0.0, relock_appearance_frames=100, relock_still_frames=0,
        refind_colour_relative=relative, refind_colour_pace=pace,
    )  # fmt: skip
    _assert_comes_back(*_walked_out(config, out=True, at_lock=True), (RED, BLUE), found)


@pytest.mark.parametrize("probation", [6, 0])
def test_a_colour_refind_is_on_probation_for_its_first_measured_frames(probation):
    """TrackerConfig.refind_colour_probation: an operator's lock re-found by its colours must
    keep them in its box on its first measured frames, or it is lost again (what the frozen
    look slid onto on person12 had none of them); off (0), no probation."""
    config = TrackerConfig(refind_faint=0.0, refind_colour_probation=probation)
    tracker, ground = _walked_out(config, out=True, at_lock=True)
    for _ in range(6):
        tracker.update(np.eye(2, 3), [], view=_frame(ground, []))
    for t in range(8):
        me = (250.0 - 3 * t, 150.0, RED, BLUE)
        state = tracker.update(np.eye(2, 3), [], view=_frame(ground, [me]))
        if state.mode == "locked":
            break
    assert state.mode == "locked"
    # (at the tracker's 30 fps, pace_fps 10: 3 frames a probation frame)
    assert tracker._probation == probation * 3
    if probation:
        assert not tracker._failed_probation(_frame(ground, [me]))
        assert tracker._probation == probation * 3 - 1
        assert tracker._failed_probation(_frame(ground, [(*me[:2], GREEN, YELLOW)]))
        assert tracker._probation == 0
    assert not tracker._failed_probation(_frame(ground, [(*me[:2], GREEN, YELLOW)]))


def _walking_in_far_away(ground, seen, people, frames=6, **config):
    """A tracker lost (``config``: its settings changed), then ``frames`` frames of a walk
    leftwards far from where the person was lost, 3 px a frame from x = 250: ``seen(x)`` the
    detections, ``people(x)`` who is drawn. The modes, frame by frame, up to a re-lock; and
    the same with the person themself walking there, detected as they are."""
    walks = []
    for detections, drawn in ((seen, people), (_seen_walking_in, _them_walking_in)):
        tracker = _lost(ground)
        tracker.config = replace(tracker.config, **config)
        modes = []
        for t in range(frames):
            x = 250.0 - 3 * t
            state = tracker.update(np.eye(2, 3), detections(x), view=_frame(ground, drawn(x)))
            modes.append(state.mode)
            if state.mode == "locked":
                break
        walks.append(modes)
    return walks


def _them_walking_in(x):
    return [(x, 60.0, RED, BLUE)]


def _seen_walking_in(x):
    return [_seen(x, 60.0)]


@pytest.mark.parametrize("widest", [1.3, 0.0])
def test_a_refind_does_not_relock_on_a_box_far_wider_than_the_person_with_no_one_in_it(widest):
    # person12 at 1280x720, the walker hidden on frames 210-229: the colour re-find's chain
    # re-locked on a detection 1.55x their width holding their legs and long shadow merged
    # with the shade's edge (no one person in it) and said `locked` there for 22 frames.
    # Here: three people in the person's colours shoulder to shoulder, one wide detection
    # (later than 6 frames the colour re-find of proposals, not detections, may re-lock).
    group, them = _walking_in_far_away(
        _ground(2),
        lambda x: [Candidate(np.array([x, 60.0]), np.array([24.0, 30.0]), 0.6, E[1])],
        lambda x: [(x + dx, 60.0, RED, BLUE) for dx in (-12.0, 0.0, 12.0)],
        relock_wider_max=widest,
    )
    assert ("locked" in group) == (not widest)
    assert them[-1] == "locked" and len(them) <= 4  # the person alone, as wide as they are


@pytest.mark.parametrize("least", [0.05, 0.0])
def test_a_refind_needs_the_locks_colours_in_both_halves(least):
    # person12 at 1280x720, leave path 2: the walker's long shadow entered the view before
    # them, dark throughout, like their dark trousers alone (upper half 0.00, lower 0.61), and
    # the re-find anywhere locked on it. Here: someone with the person's trousers and another
    # shirt walks far from where the person was lost.
    other, them = _walking_in_far_away(
        _ground(2),
        _seen_walking_in,
        lambda x: [(x, 60.0, GREEN, BLUE)],
        refind_half_identity=least,
    )
    assert ("locked" in other) == (not least)
    assert them[-1] == "locked" and len(them) <= 4  # the person, both halves' colours
