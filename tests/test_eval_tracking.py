"""The tracking protocols score what they claim to (with stand-in detectors)."""

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

from emts.eval.tracking import (
    _lock_tile,
    _under,
    autolock,
    false_positives,
    reacquisition,
    starts_on_another_person,
)
from emts.geometry import Frame, FrameGeometry
from emts.stages.c_detect.detector import Detection
from emts.synth.generate import generate_set
from emts.synth.store import ClipSet

GEOMETRY = FrameGeometry((640, 512))


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    root = tmp_path_factory.mktemp("tracking_sets")
    generate_set("bench", root / "bench", clips=4, seed=3, workers=1, progress=False)
    generate_set("fpbench", root / "fpbench", clips=2, seed=3, workers=1, progress=False)
    return root


def _key(channels):
    return hashlib.sha1(channels.tobytes()).hexdigest()


class Oracle:
    """Detects every visible labeled person exactly, with one embedding per identity."""

    threshold = 0.3

    def __init__(self, folder):
        self.answers = {}
        clip_set = ClipSet(folder)
        for index in clip_set.indices:
            clip = clip_set.load(index)
            for t, frame_labels in enumerate(clip.labels["frames"]):
                detections = []
                for person in frame_labels["persons"]:
                    if person["visible"] < 0.3:
                        continue
                    box = GEOMETRY.boxes([person["box"]], Frame.INPUT, Frame.NETWORK)[0]
                    detections.append(Detection(box, 0.9, np.eye(8)[person["id"] % 8]))
                self.answers[_key(clip.channels[t])] = detections

    def __call__(self, channels):
        return self.answers[_key(channels)]


class Nothing:
    threshold = 0.3

    def __call__(self, channels):
        return []


def test_a_perfect_detector_reacquires_every_trial_without_transfers(sets):
    report = reacquisition(sets / "bench", Oracle(sets / "bench"), detector_mode="plain")
    assert report["trials"] > 0
    assert report["identity_transfer"] == 0 and report["locks_started_on_another_person"] == 0
    assert report["success_rate"] > 0.9


def test_the_per_trial_trace_runs_the_same_trials_as_the_protocol(sets):
    """benchmarks/reacq_trials.py replays `reacquisition`'s loop: the same trials, the same
    successes at the paper's 20 px."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    reacq_trials = pytest.importorskip("reacq_trials")
    oracle = Oracle(sets / "bench")
    report = reacquisition(sets / "bench", oracle, detector_mode="plain")
    rows = reacq_trials.trials(str(sets / "bench"), oracle, "plain")
    assert len(rows) == report["trials"] > 0
    kinds = [reacq_trials.kind(r, 20.0) for r in rows]
    assert kinds.count("success") == report["success"]
    assert kinds.count("identity transfer") == report["identity_transfer"]
    assert all(len(r["frames"]) == r["blackout"][1] + 2 - 4 for r in rows)  # frames 5..check


def test_a_lock_that_starts_nearer_a_neighbour_is_not_a_trial():
    target = {"id": 1, "box": [100, 100, 20, 60]}
    neighbour = {"id": 2, "box": [112, 110, 20, 60]}  # overlapping the target's front
    persons = [target, neighbour]
    assert not starts_on_another_person(np.array([111.0, 131.0]), target, persons)
    assert starts_on_another_person(np.array([120.0, 139.0]), target, persons)
    assert not starts_on_another_person(np.array([120.0, 139.0]), target, [target])


def test_a_blind_detector_locks_nothing_so_runs_no_trial(sets):
    report = reacquisition(sets / "bench", Nothing(), detector_mode="plain")
    assert report["trials"] == 0


def test_no_detections_means_no_false_positives(sets):
    report = false_positives(sets / "fpbench", Nothing(), verifier=None, detector_mode="plain")
    assert report["frames"] == 2 * 14
    assert report["fp_per_frame"]["0.3"] == {"detector_only": 0.0, "with_verifier": None}


def test_the_bench_streamed_through_stage_c_matches_the_cached_channels_without_memory(sets):
    from emts.eval.detect import NetworkDetect, StreamDetect, evaluate_bench
    from emts.stages.c_detect.detector import Detector
    from emts.stages.c_detect.temporal import ScoreMemory

    stream = StreamDetect(Detector())
    stream.stage.model.memory = ScoreMemory(0.0)  # the network's own scores, frame by frame
    streamed = evaluate_bench(stream, sets / "bench")
    cached = evaluate_bench(NetworkDetect(Detector()), sets / "bench")
    assert len(streamed) == len(cached) == 4 * 14
    for a, b in zip(streamed, cached, strict=True):
        np.testing.assert_array_equal(a.gt_boxes, b.gt_boxes)
        strong = b.scores >= 0.3  # the sets cache D in float16: scores move in the 3rd decimal
        assert (a.scores >= 0.3).sum() == pytest.approx(strong.sum(), abs=1)
        if strong.any() and len(a.scores) and a.scores[0] >= 0.3:
            np.testing.assert_allclose(a.boxes[0], b.boxes[0], atol=0.5)  # same place


def test_a_verified_lock_is_attributed_to_the_mover_under_its_centre():
    movers = [
        {"kind": "vehicle", "box": [100, 100, 40, 20]},
        {"kind": "animal", "box": [0, 0, 10, 10]},
    ]
    assert _under([110, 95, 10, 20], movers) == "vehicle"  # centre (115, 105)
    assert _under([1, 1, 4, 4], movers) == "animal"
    assert _under([300, 300, 10, 20], movers) == "scene"


def test_autolock_reports_each_window_consistently_with_its_totals(tmp_path):
    from emts.stages.c_detect.detector import Detector
    from emts.stages.e_verify import Verifier

    sheet = tmp_path / "longest.png"
    report = autolock(Detector(), Verifier(), windows=2, frames=40, sheet=sheet)
    assert "windows" in report and "verified_on" in report
    rows = report["windows"]
    assert [w["window"] for w in rows] == [0, 1]
    assert sum(w["candidate_locks"] for w in rows) == report["candidate_locks"]
    assert sum(w["verified_locks"] for w in rows) == report["verified_false_locks"]
    assert sum(w["locked_frames"] for w in rows) == round(report["locked_share"] * 80)
    verified_frames = sum(w["verified_frames"] for w in rows)
    assert verified_frames == round(report["verified_share"] * 80)
    assert sum(report["verified_on"].values()) == verified_frames
    assert sheet.is_file() == (verified_frames > 0)  # a tile per window with a verified lock
    for w in rows:
        assert w["longest_verified"] <= w["verified_frames"] <= w["locked_frames"] <= 40
        assert sum(w["verified_on"].values()) == w["verified_frames"]


def test_a_lock_tile_frames_the_box_and_stays_square():
    frame = np.zeros((512, 640), np.uint8)
    frame[200:260, 300:320] = 200  # the target
    tile = _lock_tile(frame, [300, 200, 20, 60], "window 0: 9 frames, scene")
    assert tile.shape == (160, 160, 3)
    assert tile[80, 80].max() == 200  # the box's centre at the tile's centre
    assert (tile[..., 2] == 255).any()  # the red box
