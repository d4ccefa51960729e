"""Stage C's boxes fitted to the person's own pixels on colour frames
(emts.stages.c_detect.boxfit)."""

import numpy as np
import pytest

from emts.config import BoxFitConfig
from emts.eval.metrics import _iou as _ious
from emts.stages.appearance import AppearanceView
from emts.stages.c_detect.boxfit import fitted_box, with_evidence

PERSON = np.array([90.0, 70.0, 16.0, 44.0])  # x, y, w, h: head to feet


def _scene(shadow=True, seed=0, dx=0):
    """Sunlit paving (BGR, a little texture), a walker -- face, a shirt, dark blue trousers
    in two legs -- and, with ``shadow``, their cast shadow from the feet to the right: the
    paving darkened, its colour kept."""
    rng = np.random.default_rng(seed)
    ground = np.array([150.0, 160.0, 175.0])
    image = ground + rng.normal(0.0, 4.0, (200, 240, 1))
    x, y, w, h = PERSON.astype(int)
    x += dx  # the walker, moved right
    if shadow:
        for row in range(12):  # a long low-sun shadow, a parallelogram leaning right
            image[y + h - 12 + row, x + 8 + 2 * row : x + 40 + 2 * row] *= 0.35
    image[y : y + 7, x + 5 : x + 11] = [90.0, 130.0, 200.0]  # face
    image[y + 7 : y + 24, x : x + w] = [60.0, 170.0, 60.0]  # shirt
    image[y + 24 : y + h, x + 2 : x + 7] = [110.0, 50.0, 40.0]  # trousers, two legs
    image[y + 24 : y + h, x + 9 : x + 14] = [110.0, 50.0, 40.0]
    return np.clip(image, 0, 255).astype(np.uint8)


def fit_box(view, box, config):
    """The fitted box, or ``box`` itself where there is none."""
    fitted = fitted_box(view, np.asarray(box, float), config)
    return np.asarray(box, float) if fitted is None else fitted


def _iou(a, b) -> float:
    return float(_ious(np.asarray(a, float), np.asarray(b, float)[None])[0])


def _view(image):
    return AppearanceView(image, np.eye(3))


def test_a_box_of_the_walker_and_their_shadow_is_fitted_to_the_walker():
    box = np.array([92.0, 80.0, 40.0, 36.0])  # what moves: the walker and the shadow beside
    assert _iou(box, PERSON) < 0.35
    fitted = fit_box(_view(_scene()), box, BoxFitConfig())
    assert _iou(fitted, PERSON) > 0.8


def test_a_half_height_box_on_the_legs_is_fitted_to_the_whole_walker():
    box = np.array([89.0, 92.0, 18.0, 22.0])  # the swinging legs, what a walker towards the
    fitted = fit_box(_view(_scene(shadow=False)), box, BoxFitConfig())  # camera moves most
    assert _iou(box, PERSON) < 0.55
    assert _iou(fitted, PERSON) > 0.8


def test_gray_frames_and_missing_config_keep_the_networks_boxes():
    box = np.array([[92.0, 80.0, 40.0, 36.0]])
    gray = np.repeat(_scene()[..., :1], 3, axis=2)
    for view, config in [
        (_view(gray), BoxFitConfig()),
        (_view(gray[..., 0]), BoxFitConfig()),
        (_view(_scene()), None),
        (None, BoxFitConfig()),
    ]:
        boxes, scores = with_evidence(view, box, [0.5], config, 0.3)
        np.testing.assert_array_equal(boxes, box)
        np.testing.assert_array_equal(scores, [0.5])
    assert with_evidence(_view(_scene()), box, [0.5], BoxFitConfig(), 0.3)[1][0] == 0.6


def test_a_box_on_bare_ground_or_on_a_large_object_is_kept():
    bare = np.array([160.0, 20.0, 16.0, 40.0])
    np.testing.assert_array_equal(fit_box(_view(_scene()), bare, BoxFitConfig()), bare)
    image = _scene(shadow=False)
    image[80:110, 70:140] = [40, 40, 200]  # a parked car behind the walker: no person's box
    box = PERSON.copy()
    unguarded = fit_box(_view(image), box, BoxFitConfig(max_height=100, max_width=100))
    assert unguarded[2] > 60  # what the fit would give (the car)
    np.testing.assert_array_equal(fit_box(_view(image), box, BoxFitConfig()), box)


def test_a_walker_merged_with_tree_shade_at_the_feet_is_cut_off_above_it():
    image = _scene(shadow=False)
    x, y, w, h = PERSON.astype(int)
    leaves = np.random.default_rng(1).random((20, 90)) < 0.85  # dappled, dark green, wide
    image[y + h - 6 : y + h + 14, x - 35 : x + 55][leaves] = [40, 70, 45]
    box = np.array([x - 1.0, y + 20.0, 18.0, 26.0])  # the network's: the torso and legs
    assert fitted_box(_view(image), box, BoxFitConfig(trim_spill=None)) is None  # too wide
    fitted = fitted_box(_view(image), box, BoxFitConfig())
    assert fitted is not None and fitted[3] > fitted[2]
    assert _iou(fitted, PERSON) > 0.7 > 0.5 > _iou(box, PERSON)
    assert fitted[1] + fitted[3] <= y + h - 5  # the shade's rows are cut off


def _residual(box=None, value=0.5, level=0.01):
    """Stage B's channels at 256x192 for a 640x512 frame: R at ``level`` everywhere (the
    ground's texture after registration), ``value`` inside ``box`` (WORKING px): a mover."""
    from emts.geometry import Frame, FrameGeometry

    geometry = FrameGeometry((640, 512))
    channels = np.zeros((3, 192, 256), np.float32)
    channels[1] = level
    if box is not None:
        x, y, w, h = geometry.boxes([box], Frame.WORKING, Frame.NETWORK)[0].astype(int)
        channels[1, y : y + h, x : x + w] = value
    return channels, geometry


def test_a_box_that_does_not_move_is_not_scored_up_but_down():
    from emts.stages.c_detect.boxfit import MotionCheck

    box = np.array([[92.0, 80.0, 40.0, 36.0]])  # fits the walker (first test)
    config = BoxFitConfig()
    moving = MotionCheck(*_residual(PERSON))
    still = MotionCheck(*_residual(None))
    assert moving.ratio(PERSON) == pytest.approx(50.0) and still.ratio(PERSON) == pytest.approx(1.0)
    for motion, score in [(moving, 0.35), (still, 0.15), (None, 0.35)]:
        boxes, scores = with_evidence(_view(_scene()), box, [0.25], config, 0.3, motion)
        assert _iou(boxes[0], PERSON) > 0.8  # fitted either way
        assert scores[0] == pytest.approx(score)
    unchecked = BoxFitConfig(min_motion=None)
    assert with_evidence(_view(_scene()), box, [0.25], unchecked, 0.3, still)[1][0] == 0.35
    assert MotionCheck(*_residual(None, level=0.0)).ratio(PERSON) == 0.0  # a first frame


@pytest.mark.parametrize("scale", [2.0, 0.5])
def test_the_fit_is_made_in_working_px_whatever_the_input_size(scale):
    import cv2

    image = _scene()
    resized = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_NEAREST)
    from_working = np.diag([scale, scale, 1.0])  # WORKING px -> input px
    box = np.array([92.0, 80.0, 40.0, 36.0])
    fitted = fit_box(AppearanceView(resized, from_working), box, BoxFitConfig())
    assert _iou(fitted, PERSON) > (0.75 if scale > 1 else 0.6)


def test_a_box_that_fits_a_person_scores_higher_and_may_pass_tau_s():
    from emts.stages.c_detect.boxfit import shown, with_evidence

    walker = np.array([92.0, 80.0, 40.0, 36.0])
    bare = np.array([160.0, 20.0, 16.0, 40.0])
    boxes = np.array([walker, bare, walker])
    scores = np.array([0.25, 0.25, 0.15])  # tau_s 0.3: the first two within the bonus
    config = BoxFitConfig(bonus=0.1)
    fitted, raised = with_evidence(_view(_scene()), boxes, scores, config, 0.3)
    assert _iou(fitted[0], PERSON) > 0.8 and raised[0] == pytest.approx(0.35)
    np.testing.assert_array_equal(fitted[1:], boxes[1:])  # no person; too far under tau_s
    np.testing.assert_array_equal(raised[1:], scores[1:])
    assert list(shown(raised, 0.3)) == [0]
    gray = np.repeat(_scene()[..., :1], 3, axis=2)
    same = with_evidence(_view(gray), boxes, scores, config, 0.3)
    np.testing.assert_array_equal(same[0], boxes)
    np.testing.assert_array_equal(same[1], scores)
    no_bonus = with_evidence(_view(_scene()), boxes, scores, BoxFitConfig(bonus=0.0), 0.3)
    np.testing.assert_array_equal(no_bonus[1], scores)  # nothing under tau_s is fitted
    high = with_evidence(_view(_scene()), boxes, [0.95, 0.1, 0.1], config, 0.3)[1]
    assert high[0] == 1.0


def test_the_eval_suite_scores_the_pipelines_way():
    from emts.eval.real import pipeline_boxes
    from emts.eval.real_frames import EvalFrame
    from emts.eval.real_metrics import TAU_S

    frame = EvalFrame.__new__(EvalFrame)
    frame.colour = _view(_scene())
    frame.channels, frame.geometry = _residual(PERSON)  # the walker moves
    boxes = np.array([[92.0, 80.0, 40.0, 36.0]] * 2)
    scores = np.array([TAU_S - 0.05, TAU_S - 0.2])
    fitted, raised = pipeline_boxes(boxes, scores, frame)
    assert _iou(fitted[0], PERSON) > 0.8 and raised[0] == pytest.approx(TAU_S + 0.05)
    np.testing.assert_array_equal(fitted[1], boxes[1])  # only the PR curve sees it
    assert raised[1] == scores[1]
    frame.colour = None
    np.testing.assert_array_equal(pipeline_boxes(boxes, scores, frame)[1], scores)


class _FixedDetector:
    """A stand-in Stage C: one detection, the walker and their shadow (NETWORK px)."""

    def __init__(self, box_net, score=0.9):
        self.box_net, self.score, self.threshold = box_net, score, 0.3  # tau_s

    def __call__(self, channels):
        from emts.stages.c_detect.detector import Detection

        return [Detection(self.box_net.copy(), self.score, np.eye(8)[0])]


@pytest.mark.parametrize("fit", [True, False])
def test_the_pipeline_reports_fitted_boxes_on_colour_frames_in_input_px(fit):
    from emts.config import NETWORK_SIZE
    from emts.geometry import Frame, FrameGeometry
    from emts.pipeline import Pipeline
    from emts.stages.c_detect.boxfit import DEFAULT_BOX_FIT

    image = _scene()
    box = np.array([92.0, 80.0, 40.0, 36.0])  # input px
    geometry = FrameGeometry((image.shape[1], image.shape[0]), NETWORK_SIZE)
    box_net = geometry.boxes([box], Frame.INPUT, Frame.NETWORK)[0]
    pipeline = Pipeline(
        _FixedDetector(box_net), None, auto_lock=False, box_fit=DEFAULT_BOX_FIT if fit else None
    )
    for _ in range(2):
        result = pipeline.step(image)
    reported, score = result.detections[0]
    if fit:  # fitted; on a still image nothing moves: scored down (MotionCheck)
        assert _iou(reported, PERSON) > 0.7 and score == pytest.approx(0.8)
    else:
        np.testing.assert_allclose(reported, box, atol=1e-6)
        assert score == 0.9
    gray = np.repeat(image[..., 1:2], 3, axis=2)  # a thermal camera's three equal channels
    result = Pipeline(_FixedDetector(box_net), None, auto_lock=False).step(gray)
    np.testing.assert_allclose(result.detections[0][0], box, atol=1e-6)


def test_the_pipeline_scores_up_a_walker_who_moves():
    from emts.config import NETWORK_SIZE
    from emts.geometry import Frame, FrameGeometry
    from emts.pipeline import Pipeline

    box = np.array([92.0, 80.0, 40.0, 36.0])  # input px: walker and shadow
    geometry = FrameGeometry((240, 200), NETWORK_SIZE)
    detector = _FixedDetector(geometry.boxes([box], Frame.INPUT, Frame.NETWORK)[0], 0.25)
    pipeline = Pipeline(detector, None, auto_lock=False)
    for dx in range(0, 8, 2):  # 2 px a frame
        result = pipeline.step(_scene(shadow=False, dx=dx))
    reported, score = result.detections[0]
    assert score == pytest.approx(0.35)  # fitted, moving: over tau_s
    assert _iou(reported, PERSON + [6, 0, 0, 0]) > 0.7


def test_only_the_highest_scoring_boxes_are_fitted():
    box = np.array([92.0, 80.0, 40.0, 36.0])
    boxes = np.array([box, box, box])
    config = BoxFitConfig(max_boxes=2)
    fitted, _ = with_evidence(_view(_scene()), boxes, [0.4, 0.9, 0.6], config, 0.3)
    np.testing.assert_array_equal(fitted[0], box)
    assert _iou(fitted[1], PERSON) > 0.8 and _iou(fitted[2], PERSON) > 0.8


def test_emts_detect_fits_colour_boxes_unless_asked_for_the_networks(tmp_path):
    import json

    import cv2

    from emts.cli import main

    folder = tmp_path / "frames"
    folder.mkdir()
    for k in range(5):  # the walker (and shadow) moving right 3 px a frame
        frame = _scene(dx=3 * k)
        cv2.imwrite(str(folder / f"{k}.png"), cv2.resize(frame, (480, 400)))
    runs = {}
    for name, extra in (("fitted", []), ("network", ["--network-boxes"])):
        jsonl = tmp_path / f"{name}.jsonl"
        argv = ["detect", str(folder), "--jsonl", str(jsonl), "--threshold", "0.0", *extra]
        assert main(argv) == 0
        runs[name] = [json.loads(line)["detections"] for line in jsonl.read_text().splitlines()]
    fitted = [d for frame in runs["fitted"] for d in frame]
    network = [d for frame in runs["network"] for d in frame]
    assert len(fitted) == len(network) > 0  # threshold 0: every decoded peak either way
    assert {tuple(d["box"]) for d in fitted} != {tuple(d["box"]) for d in network}
    walker = 2 * (PERSON + [12, 0, 0, 0])  # the last frame's, at 480x400

    def on_walker(frame):
        return max(frame, key=lambda d: _iou(d["box"], walker))

    last_fitted, last_network = on_walker(runs["fitted"][-1]), on_walker(runs["network"][-1])
    assert _iou(last_fitted["box"], walker) > 0.7 > _iou(last_network["box"], walker)
    assert last_fitted["score"] > last_network["score"]  # fitted and moving: scored up


def test_the_pipeline_has_the_temporal_stage_decode_what_the_evidence_may_lift():
    from emts.pipeline import Pipeline
    from emts.stages.c_detect.temporal import TemporalDetector

    class _Network:
        threshold, box_scale, network_size = 0.3, 1.0, (256, 192)

    stage = TemporalDetector(_Network())
    Pipeline(stage, None, auto_lock=False)
    assert stage.lookahead == BoxFitConfig().bonus
    Pipeline(stage, None, auto_lock=False, box_fit=None)
    assert stage.lookahead == 0.0


def test_while_locked_the_detections_skip_the_colour_evidence_and_the_track_is_the_same():
    from emts.config import NETWORK_SIZE
    from emts.geometry import Frame, FrameGeometry
    from emts.pipeline import Pipeline

    box = np.array([92.0, 80.0, 40.0, 36.0])  # input px: walker and shadow
    geometry = FrameGeometry((240, 200), NETWORK_SIZE)
    box_net = geometry.boxes([box], Frame.INPUT, Frame.NETWORK)[0]
    runs = {}
    for always in (False, True):
        pipeline = Pipeline(
            _FixedDetector(box_net, 0.9), None, auto_lock=False, evidence_while_locked=always
        )
        results = []
        for k in range(6):
            if k == 1:
                pipeline.lock(100, 92)  # a tap on the walker
            results.append(pipeline.step(_scene(shadow=False, dx=2 * k)))
        runs[always] = results
    for skipped, kept in zip(runs[False], runs[True], strict=True):
        assert skipped.mode == kept.mode
        if kept.target is not None:
            np.testing.assert_array_equal(skipped.target.box, kept.target.box)
    modes = [r.mode for r in runs[False]]
    assert modes[1:] == ["locked"] * 5
    # the tap's frame (and the frame before it) choose from fitted boxes; later locked frames
    # report the network's box, unless evidence_while_locked
    for k, (skipped, kept) in enumerate(zip(runs[False], runs[True], strict=True)):
        fitted = kept.detections[0][0]
        assert _iou(fitted, PERSON + [2 * k, 0, 0, 0]) > 0.7
        if k >= 2:
            np.testing.assert_allclose(skipped.detections[0][0], box, atol=1e-6)
            assert skipped.detections[0][1] == 0.9
        else:
            np.testing.assert_array_equal(skipped.detections[0][0], fitted)
