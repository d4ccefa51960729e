"""Stage D's re-locks on gray frames (thermal, monochrome), where no colours say who it is."""

from dataclasses import replace

import numpy as np
import pytest

from emts.config import TrackerConfig
from emts.stages.appearance import AppearanceView
from emts.stages.d_track.tracker import TargetTracker
from emts.stages.d_track.types import Candidate, LockCommand

E = np.eye(8)
SIZE = np.array([12.0, 30.0])
START = (80.0, 120.0)


def _ground(seed=0, shape=(240, 320)):
    rng = np.random.default_rng(seed)
    return np.float32(120.0) + rng.normal(0, 6, shape).astype(np.float32)


def _frame(ground, people=()):
    """A gray view: a 12x30 person (bright head and shirt, dark legs) at each of ``people``
    (centres, px)."""
    frame = ground.copy()
    for x, y in people:
        x0, y0 = int(round(x - 6)), int(round(y - 15))
        frame[y0 : y0 + 6, x0 + 3 : x0 + 9] = 230  # head
        frame[y0 + 6 : y0 + 16, x0 : x0 + 12] = 200  # shirt
        frame[y0 + 16 : y0 + 30, x0 + 2 : x0 + 10] = 40  # legs
    frame = np.clip(frame, 0, 255).astype(np.uint8)
    return AppearanceView.of(frame)


def _seen(x, y):
    return Candidate(np.array([x, y], float), SIZE, 0.6, E[1])


def _lost(ground, **config):
    """A gray tap lock on a person who stood at START, then was hidden until lost."""
    tracker = TargetTracker(replace(TrackerConfig(), **config))
    view = _frame(ground, [START])
    tracker.lock(LockCommand(np.array(START), SIZE, E[1], "tap:box", colour=False), view)
    for _ in range(5):  # seen: the look's running peak settles
        tracker.update(np.eye(2, 3), [_seen(*START)], view=_frame(ground, [START]))
    for _ in range(12):  # hidden: lost
        state = tracker.update(np.eye(2, 3), [], view=_frame(ground))
    assert state.mode == "reacquire" and tracker.mode == "reacquire"
    return tracker


def _walking_far_away(tracker, ground, detected, frames=6):
    """The person walks 2.3+ track heights from where they were lost; the detector sees them or
    not. Returns the first frame they are locked on again (None: never) and the last state."""
    for t in range(frames):
        me = (150.0 + 3 * t, 120.0)
        seen = [_seen(*me)] if detected else []
        state = tracker.update(np.eye(2, 3), seen, view=_frame(ground, [me]))
        if state.mode == "locked":
            return t, state
    return None, state


@pytest.mark.parametrize("reach", [0.0, 1.5])
def test_a_gray_relock_by_the_look_alone_far_away_needs_the_detector(reach):
    """Without colours, the frozen look alone re-locks far from the prediction (beyond
    TrackerConfig.relock_look_alone_reach track heights) only beside a detection: a region
    that merely looks like them there may be ground, a post, another person."""
    ground = _ground(2)
    # (the re-lock region grown to reach them; the embedding's re-lock off: the look alone, or
    # the look beside a detection, re-locks -- the chain of matches of Reacquisition's path 1)
    config = {"relock_look_alone_reach": reach, "relock_similarity": 2.0}
    config.update(relock_max_heights=10.0, relock_growth=1.0)
    undetected, _ = _walking_far_away(_lost(ground, **config), ground, detected=False)
    assert (undetected is not None) == (reach == 0.0)
    detected, state = _walking_far_away(_lost(ground, **config), ground, detected=True)
    assert detected is not None
    assert abs(state.centre[0] - (150.0 + 3 * detected)) < 4


@pytest.mark.parametrize("walks", [True, False])
def test_a_gray_tap_lock_is_not_relocked_on_a_detection_that_stays_put(walks):
    """Reacquisition's path 3 (a detection held inside the re-lock gate for relock_frames
    frames) for a tap lock without colours: a statue or an occluder's edge beside the hidden
    walker stays put and is not taken for them, however long it is detected
    (relock_spatial_walks; off: the paper's rule, three frames); the walker who then comes out
    beside it, walking, is."""
    ground = _ground(5)
    # (the embedding's re-lock and the look's re-lock off: path 3 alone)
    config = {"relock_spatial_walks": walks, "relock_similarity": 2.0}
    config.update(relock_appearance_frames=99, relock_still_frames=0)
    tracker = _lost(ground, **config)
    statue = (START[0] + 8.0, START[1] - 10.0)
    jitter = [0.0, 0.6, -0.4, 0.3, -0.5, 0.2, 0.0, 0.5]  # a detection's box jitters a little
    modes = []
    for dx in jitter:
        seen = [Candidate(np.array([statue[0] + dx, statue[1] - dx]), SIZE, 0.6, E[3])]
        modes.append(tracker.update(np.eye(2, 3), seen, view=_frame(ground, [statue])).mode)
    assert modes == (["reacquire"] * 8 if walks else ["reacquire"] * 2 + ["locked"] * 6)
    if not walks:
        return
    for t in range(3):  # the walker comes out beside it, walking 3 px a frame
        me = (START[0] - 4.0 - 3 * t, START[1] + 4.0)
        seen = [_seen(*me), Candidate(np.array(statue), SIZE, 0.6, E[3])]
        state = tracker.update(np.eye(2, 3), seen, view=_frame(ground, [statue, me]))
        modes.append(state.mode)
    assert modes[-3:] == ["reacquire", "reacquire", "locked"]
    assert abs(state.centre[0] - (START[0] - 10.0)) < 3
