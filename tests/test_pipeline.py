"""The full pipeline and `emts track`: locking, coordinates, bad frames, streaming."""

import json

import cv2
import numpy as np
import pytest

from emts.apps.track import LockRequest, run_track
from emts.config import ChannelConfig, VerifierConfig
from emts.errors import BadInputError
from emts.eval.detect import ClassicalDetector
from emts.pipeline import Pipeline
from emts.stages.c_detect.detector import Detection
from emts.stages.e_verify import _FARNEBACK, describe, roi_pair
from emts.synth.still_clip import gusty_clip


class BlobDetector:
    """A stand-in Stage C: residual blobs with a constant embedding (no model file needed)."""

    def __init__(self):
        self.blobs = ClassicalDetector(threshold=0.02)

    def __call__(self, channels):
        boxes, scores = self.blobs(channels)
        return [
            Detection(b, min(float(s) * 5, 1.0), np.eye(8)[0])
            for b, s in zip(boxes, scores, strict=True)
        ]


@pytest.fixture(scope="module")
def clip():
    return gusty_clip(40, seed=2)


def _iou(a, b):
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    inter = max(x1 - x0, 0) * max(y1 - y0, 0)
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_tap_lock_follows_the_walker_in_input_pixels(clip, scale):
    pipeline = Pipeline(BlobDetector(), verifier=None, auto_lock=False)
    hits = 0
    for t, frame in enumerate(clip.frames):
        frame = cv2.resize(frame, None, fx=scale, fy=scale) if scale != 1.0 else frame
        truth = clip.person_boxes[t][0] * scale
        if t == 3:
            pipeline.lock(*(truth[:2] + truth[2:] / 2))
        result = pipeline.step(frame)
        if t > 3:
            assert result.mode in ("locked", "reacquire")
            hits += result.target is not None and _iou(result.target.box, truth) > 0.2
    assert hits >= 0.7 * (len(clip.frames) - 4)


def test_the_tracker_is_told_whether_the_lock_was_made_on_colour(clip):
    """The merge hold (TrackerConfig.merge_area_ratio) is for frames without colour."""
    truth = clip.person_boxes[3][0]
    for colour in (False, True):
        pipeline = Pipeline(BlobDetector(), verifier=None, auto_lock=False)
        for t, frame in enumerate(clip.frames[:5]):
            if colour:  # the gray scene tinted: a colour camera
                frame = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
                frame[:, :, 2] = cv2.add(frame[:, :, 2], 60)
            if t == 3:
                pipeline.lock(*(truth[:2] + truth[2:] / 2))
            pipeline.step(frame)
        assert pipeline.tracker.locked and pipeline.tracker._colour is colour


def test_a_pipeline_runs_stage_b_as_configured_and_follows_the_walker(clip):
    working = ChannelConfig(warp_at="working")
    pipeline = Pipeline(BlobDetector(), verifier=None, auto_lock=False, channel_config=working)
    hits = 0
    for t, frame in enumerate(clip.frames):
        truth = clip.person_boxes[t][0]
        if t == 3:
            pipeline.lock(*(truth[:2] + truth[2:] / 2))
        result = pipeline.step(frame)
        hits += t > 3 and result.target is not None and _iou(result.target.box, truth) > 0.2
    assert pipeline.front.channels.config is working
    assert hits >= 0.7 * (len(clip.frames) - 4)
    pipeline.front.use_network_size((384, 288))  # a detector of another size keeps it
    assert pipeline.front.channels.config is working


def test_every_stage_is_timed(clip):
    pipeline = Pipeline(BlobDetector(), verifier=None)
    result = pipeline.step(clip.frames[0])
    assert set("ABCDE") <= set(result.ms)


def test_lock_request_parsing():
    assert LockRequest.parse("auto").auto
    tap = LockRequest.parse("320.5,240@12")
    assert (tap.auto, tap.x, tap.y, tap.frame) == (False, 320.5, 240.0, 12)
    with pytest.raises(BadInputError):
        LockRequest.parse("middle")


def test_track_skips_bad_frames_mid_stream_and_streams_every_line(clip, tmp_path):
    frames = list(clip.frames[:12])
    frames[5] = frames[5].astype(np.float32)  # wrong dtype mid-stream
    frames[7] = np.zeros((512, 640), np.uint8)  # blank
    frames[8] = np.full((512, 640), 255, np.uint8)  # saturated
    frames[9] = cv2.resize(frames[9], (800, 600))  # wrong size
    jsonl = tmp_path / "track.jsonl"
    pipeline = Pipeline(BlobDetector(), verifier=None)
    summary = run_track(frames, LockRequest(), str(tmp_path / "a.mp4"), str(jsonl), pipeline)
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [line["frame"] for line in lines] == list(range(12))
    assert "skipped" in lines[5] and summary.skipped == 1 and summary.frames == 11
    assert (tmp_path / "a.mp4").stat().st_size > 0


def test_a_source_that_ends_early_keeps_every_line(clip, tmp_path):
    def camera():
        yield from clip.frames[:6]
        raise KeyboardInterrupt  # the operator pulls the plug

    jsonl = tmp_path / "track.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_track(
            camera(), LockRequest(), None, str(jsonl), Pipeline(BlobDetector(), verifier=None)
        )
    assert len(jsonl.read_text().splitlines()) == 6


def test_verifier_descriptor_sees_motion_only_where_things_move():
    rng = np.random.default_rng(0)
    texture = cv2.GaussianBlur(rng.random((192, 256)).astype(np.float32), (0, 0), 1.5)
    channels = np.zeros((3, 192, 256), np.float32)
    channels[0] = texture
    channels[2] = 0.0  # warped previous == current: nothing moves
    still = describe(*roi_pair(channels, np.array([100, 60, 12, 30])))
    moved = np.roll(texture, 2, axis=1)
    channels[0], channels[2] = moved, moved - texture  # previous = L - D = texture
    moving = describe(*roi_pair(channels, np.array([100, 60, 12, 30])))
    assert still.shape == moving.shape == (40,)
    assert moving[::5].mean() > 10 * max(still[::5].mean(), 1e-3)


def test_verifier_descriptor_is_per_cell_mean_and_weighted_orientation_histogram():
    # the descriptor computed in one pass against its definition, cell by cell (head to legs)
    rng = np.random.default_rng(3)
    first = cv2.GaussianBlur(rng.integers(0, 255, (48, 24), np.uint8), (5, 5), 0)
    second = np.roll(first, (1, -2), axis=(0, 1))
    c = VerifierConfig()
    flow = cv2.calcOpticalFlowFarneback(first, second, None, **_FARNEBACK)
    magnitude, angle = cv2.cartToPolar(flow[..., 0], flow[..., 1])
    bins = (angle / (2 * np.pi) * c.orientation_bins).astype(int) % c.orientation_bins
    columns, rows = c.grid
    rh, rw = 48 // rows, 24 // columns
    expected = []
    for r in range(rows):
        for k in range(columns):
            m = magnitude[r * rh : (r + 1) * rh, k * rw : (k + 1) * rw].ravel()
            b = bins[r * rh : (r + 1) * rh, k * rw : (k + 1) * rw].ravel()
            histogram = np.bincount(b, weights=m, minlength=c.orientation_bins) / m.size
            expected += [m.mean(), *histogram]
    np.testing.assert_allclose(describe(first, second), expected, rtol=1e-5, atol=1e-7)


def test_demo_writes_every_output(tmp_path):
    from emts.apps.demo import run_demo

    report = run_demo(tmp_path, frames=30)
    for name in ("input.mp4", "annotated.mp4", "track.jsonl", "timeline.png", "channels.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert len((tmp_path / "track.jsonl").read_text().splitlines()) == 30
    assert set("ABCDE") <= set(report["latency_ms"])


def test_working_resolution_roi_pair_is_ego_compensated():
    from emts.stages.e_verify import roi_pair_working

    rng = np.random.default_rng(0)
    scene = cv2.GaussianBlur(rng.integers(0, 255, (600, 720), np.uint8), (0, 0), 2)
    previous, current = scene[40:552, 40:680], scene[43:555, 45:685]  # camera moved (+5, +3)
    box = np.array([300.0, 200, 30, 70])
    motion = np.array([[1, 0, -5], [0, 1, -3.0]])  # frame t-1 -> t: the scene moved (-5, -3)
    compensated = describe(*roi_pair_working(previous, current, motion, box))
    raw = describe(*roi_pair_working(previous, current, np.eye(2, 3), box))
    assert compensated[::5].mean() < 0.1 * raw[::5].mean()
    # a person walking 3 px to the right inside the box shows up
    walker = current.copy()
    walker[230:260, 310:320] = previous[233:263, 308:318] // 4 + 10
    body = previous.copy()
    body[233:263, 310:320] = walker[230:260, 310:320]
    moving = describe(*roi_pair_working(body, walker, motion, box))
    assert moving[::5].mean() > 3 * compensated[::5].mean()


def test_a_box_wider_than_the_roi_is_narrowed_about_its_centre():
    from emts.stages.e_verify import narrowed

    wide = narrowed(np.array([10.0, 20, 40, 50]), 0.5)
    np.testing.assert_allclose(wide, [17.5, 20, 25, 50])  # centre x 30 kept, height kept
    slim = np.array([10.0, 20, 20, 50])
    assert narrowed(slim, 0.5) is slim
    assert narrowed(np.array([10.0, 20, 40, 50]), None)[2] == 40


def test_stage_e_reads_a_wide_track_box_through_the_roi_shape():
    # the person's legs move in the middle of a box twice as wide as they are: the verifier
    # sees the box narrowed to its ROI's shape (roi_max_aspect), where the flow is all legs
    from emts.geometry import WORKING_GEOMETRY, Frame
    from emts.stages.e_verify import FrameView, Verifier

    rng = np.random.default_rng(1)
    previous = cv2.GaussianBlur(rng.integers(0, 255, (512, 640), np.uint8), (0, 0), 2)
    current = previous.copy()
    current[200:280, 310:330] = np.roll(previous[200:280, 310:330], 2, axis=1)
    view = FrameView(None, current, previous, np.eye(2, 3), WORKING_GEOMETRY)
    wide = WORKING_GEOMETRY.boxes([np.array([280.0, 200, 80, 80])], Frame.WORKING, Frame.NETWORK)
    narrow = Verifier(config=VerifierConfig(roi_max_aspect=0.5))
    as_given = Verifier(config=VerifierConfig(roi_max_aspect=None))
    if narrow.resolution != "working":
        pytest.skip("the shipped verifier reads the network channels")
    seen, diluted = narrow.describe(view, wide[0]), as_given.describe(view, wide[0])
    assert seen[::5].mean() > 1.5 * diluted[::5].mean()


def test_the_schedule_measures_ground_covered_with_the_camera_motion_removed():
    # a box the camera carries (pinned to the ground) went nowhere however it moved in the
    # image; a box walking 0.5 network px a frame over the same camera went 7.5 px in 15
    # frames, half its height. A still track is vetoed under min_travel whatever P(human).
    from emts.geometry import WORKING_GEOMETRY, Frame
    from emts.stages.e_verify import FrameView, VerificationSchedule

    class Stub:
        def __init__(self):
            self.seen = 0

        ready = property(lambda self: self.seen >= 16)

        def observe(self, view, box):
            self.seen += 1

        def probability(self):
            return 0.9

        def reset(self):
            self.seen = 0

    pan = np.array([[1.0, 0.0, 5.0], [0.0, 1.0, -2.0]])  # WORKING px a frame
    step = WORKING_GEOMETRY.motion(pan, Frame.WORKING, Frame.NETWORK)
    travels = {}
    for walk in (0.0, 0.5):
        schedule = VerificationSchedule(Stub())
        box = np.array([100.0, 60.0, 6.0, 15.0])
        for t in range(16):
            view = FrameView(None, motion=pan, geometry=WORKING_GEOMETRY)
            if t:
                box[:2] = step[:, :2] @ box[:2] + step[:, 2] + [walk, 0.0]
            p = schedule.step(view, box.copy(), restart=t == 0, min_travel=0.2)
        assert p == 0.9
        travels[walk] = schedule.travel
        assert schedule.verified == (walk > 0)
    assert travels[0.0] == pytest.approx(0.0, abs=1e-9)
    assert travels[0.5] == pytest.approx(0.5, rel=1e-6)


def test_each_detector_runs_with_the_stage_b_warp_it_records(tmp_path, clip):
    pytest.importorskip("onnx")
    from emts.cli import main
    from emts.modality import DetectorChoice
    from emts.stages.b_channels import WORKING_WARP_RESIDUAL_REFERENCE
    from emts.stages.c_detect.detector import Detector, default_model_path
    from emts.stages.c_detect.stage import detector_stage

    out = tmp_path / "w.onnx"
    args = ["export", str(default_model_path()), "--out", str(out), "--any-size"]
    assert main([*args, "--stage-b", "working"]) == 0
    working = Detector(out)
    assert working.stage_b_warp == "working"
    assert working.residual_reference == WORKING_WARP_RESIDUAL_REFERENCE  # none recorded
    assert Detector().stage_b_warp == "network"
    pipeline = Pipeline(detector_stage(working), verifier=None, auto_lock=False)
    assert pipeline.front.channels.config.warp_at == "working"
    # an explicit Stage B overrides the model's
    paper = ChannelConfig(warp_at="network")
    pipeline = Pipeline(detector_stage(working), None, auto_lock=False, channel_config=paper)
    assert pipeline.front.channels.config.warp_at == "network"
    # a stage chosen on the first frame brings its warp with it
    choice = DetectorChoice(lambda variant: detector_stage(Detector(out)))
    pipeline = Pipeline(choice, verifier=None, auto_lock=False)
    assert pipeline.front.channels.config.warp_at == "network"  # nothing chosen yet
    pipeline.step(clip.frames[0])
    assert pipeline.front.channels.config.warp_at == "working"
    assert main([*args, "--stage-b", "paper"]) == 0  # the paper's: none recorded
    assert Detector(out).stage_b_warp == "network"


def test_a_detector_trained_on_r_over_n_frames_runs_with_that_r(
    tmp_path, clip, capsys, monkeypatch
):
    pytest.importorskip("onnx")
    from emts.cli import main
    from emts.front_end import channel_key, key_config
    from emts.stages.c_detect.detector import Detector, default_model_path
    from emts.stages.c_detect.stage import detector_stage
    from emts.train.export import _record

    out = tmp_path / "r3.onnx"
    args = ["export", str(default_model_path()), "--out", str(out), "--any-size"]
    assert main([*args, "--residual-baseline", "3"]) == 0
    detector = Detector(out)
    assert detector.residual_baseline == 3 and Detector().residual_baseline == 1
    pipeline = Pipeline(detector_stage(detector), verifier=None, auto_lock=False)
    assert pipeline.front.channels.config.residual_baseline == 3
    # a command line's Stage B warp keeps the R the weights were trained on
    working = ChannelConfig(warp_at="working")
    pipeline = Pipeline(detector_stage(detector), None, auto_lock=False, channel_config=working)
    assert pipeline.front.channels.config == ChannelConfig(warp_at="working", residual_baseline=3)
    pipeline.step(clip.frames[0])
    assert pipeline.step(clip.frames[1]).target is None
    key = channel_key(detector)
    assert key == (256, 192, "network", 3) and key_config(key).residual_baseline == 3
    assert channel_key(Detector()) == (256, 192)
    assert main([*args, "--residual-baseline", "1"]) == 0  # eq. 2's: none recorded
    assert Detector(out).residual_baseline == 1
    assert main([*args, "--residual-baseline", "0"]) == 2
    assert "--residual-baseline must be at least 1" in capsys.readouterr().err
    # Stage C's coarse pass (the model at its trained 256x192 under a 512x384 run) halves
    # channels of R over 3 frames as such
    assert main([*args, "--residual-baseline", "3"]) == 0
    import emts.stages.c_detect.temporal
    from emts.stages.c_detect.temporal import TemporalDetector

    halved = []

    def spy(channels, content=None, residual_baseline=1):
        halved.append(residual_baseline)
        return original(channels, content, residual_baseline)

    original = emts.stages.c_detect.temporal.halved_channels
    monkeypatch.setattr(emts.stages.c_detect.temporal, "halved_channels", spy)
    stage = TemporalDetector(Detector(out, network_size=(512, 384)))
    assert stage.coarse is not None and stage.coarse.residual_baseline == 3
    front = Pipeline(stage, verifier=None, auto_lock=False).front
    for frame in clip.frames[:3]:
        stage.on_frame(front.step(frame))
    assert halved and set(halved) == {3}
    _record(out, "emts_residual_baseline", "three")
    with pytest.raises(BadInputError, match="R over 'three' frames"):
        Detector(out)


def test_the_target_box_is_the_persons_size_where_the_tracker_measured_it(clip, monkeypatch):
    # (TrackerConfig.person_width: the box reported on colour frames has the person's width;
    # Stage E and the tracker keep reading the track's own box)
    import dataclasses

    from emts.stages.d_track.tracker import TargetTracker

    pipeline = Pipeline(BlobDetector(), verifier=None, auto_lock=False)
    update = TargetTracker.update

    def with_person(share):
        def updated(self, *args, **kwargs):
            state = update(self, *args, **kwargs)
            person = None if share is None or state.size is None else state.size * share
            return dataclasses.replace(state, person_size=person)

        return updated

    results = []
    for share in (None, np.array([0.5, 1.0])):
        monkeypatch.setattr(TargetTracker, "update", with_person(share))
        pipeline.reset()
        for t, frame in enumerate(clip.frames[:8]):
            if t == 3:
                truth = clip.person_boxes[t][0]
                pipeline.lock(*(truth[:2] + truth[2:] / 2))
            result = pipeline.step(frame)
        results.append(result)
    plain, person = results
    assert plain.mode == person.mode == "locked"
    x, y, w, h = plain.target.box
    assert np.allclose(person.target.box, [x + w / 4, y, w / 2, h], atol=1e-6)
