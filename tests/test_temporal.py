"""Stage C mode ``temporal``: the heatmap memory in stabilized coordinates (no data needed)."""

import numpy as np
import pytest

from emts.errors import BadInputError
from emts.pipeline import Pipeline
from emts.stages.c_detect.detector import decode
from emts.stages.c_detect.stage import DEFAULT_DETECTOR_MODE, detector_stage
from emts.stages.c_detect.temporal import ScoreMemory, TemporalDetector, motion_in_cells

STILL = np.eye(2, 3)


def _heat(cells: dict[tuple[int, int], float]) -> np.ndarray:
    heat = np.full((24, 32), 0.01, np.float32)
    for (y, x), value in cells.items():
        heat[y, x] = value
    return heat


class StubNetwork:
    """Head outputs with a given heatmap per call (boxes 16x24 network px)."""

    threshold = 0.3
    box_scale = 1.0
    network_size = (256, 192)

    def __init__(self, heats: list[np.ndarray]) -> None:
        self.heats = list(heats)
        self.calls = 0

    def raw(self, channels, residual_reference=None):
        heat = self.heats[min(self.calls, len(self.heats) - 1)]
        self.calls += 1
        size = np.zeros((1, 2, 24, 32), np.float32)
        size[0, 0], size[0, 1] = np.log(2.0), np.log(3.0)
        offset = np.full((1, 2, 24, 32), 0.5, np.float32)
        return [heat[None, None], size, offset, np.ones((1, 8, 24, 32), np.float32)]


def test_a_person_who_stays_keeps_the_score_and_a_flash_fades():
    memory = ScoreMemory(0.5)
    for _ in range(5):
        fused = memory.update(_heat({(10, 10): 0.4}), STILL)
    assert fused[10, 10] == pytest.approx(0.4, abs=1e-3)
    memory = ScoreMemory(0.5)
    memory.update(_heat({}), STILL)
    flash = memory.update(_heat({(10, 10): 0.8}), STILL)
    assert flash[10, 10] == pytest.approx(0.5 * 0.8 + 0.5 * 0.01, abs=1e-3)  # half, at once
    assert memory.update(_heat({}), STILL)[10, 10] < 0.3  # gone below tau_s a frame later


def test_the_memory_is_carried_by_the_camera_motion():
    memory = ScoreMemory(0.5)
    memory.update(_heat({(10, 10): 0.8}), STILL)
    pan = np.array([[1.0, 0, 16.0], [0, 1.0, -8.0]])  # NETWORK px: 2 cells right, 1 up
    fused = memory.update(_heat({}), pan)
    assert fused[9, 12] == pytest.approx(0.405, abs=1e-3)  # landed where the scene went
    assert fused[10, 10] < 0.1 and fused[13, 8] < 0.1  # not where it was; no blur elsewhere
    cells = motion_in_cells(pan)
    np.testing.assert_allclose(cells, [[1, 0, 2], [0, 1, -1]], atol=1e-9)


def test_a_frame_without_camera_motion_restarts_the_memory():
    memory = ScoreMemory(0.5)
    memory.update(_heat({(10, 10): 0.8}), STILL)
    assert memory.update(_heat({}), None)[10, 10] == pytest.approx(0.01)  # no motion: as is
    assert memory.update(_heat({}), STILL)[10, 10] == pytest.approx(0.01)  # nothing carried
    with pytest.raises(BadInputError):
        ScoreMemory(1.0)


def test_decode_keeps_the_heatmaps_peaks_and_reads_their_scores_from_the_memory():
    heat = _heat({(5, 5): 0.25, (5, 6): 0.2, (15, 20): 0.9})
    scores = _heat({(5, 5): 0.45, (5, 6): 0.6, (15, 20): 0.2})
    heads = StubNetwork([heat]).raw(None)
    found = decode(*(h[0] for h in heads), threshold=0.3, scores=scores)
    # (5, 6) scores higher but is no peak of the heatmap; (15, 20) is a sighting on this frame
    # (heatmap 0.9) that the memory scores below tau_s
    assert [(round(d.score, 2), round(d.raw_score, 2)) for d in found] == [(0.45, 0.25), (0.2, 0.9)]
    assert [d.sighting for d in found] == [pytest.approx(0.25), pytest.approx(0.9)]
    np.testing.assert_allclose(found[0].box, [5.5 * 8 - 8, 5.5 * 8 - 12, 16, 24], atol=1e-4)
    plain = decode(*(h[0] for h in heads), threshold=0.3)
    assert [d.score for d in plain] == [pytest.approx(0.9)]


def test_the_pipeline_runs_the_temporal_mode_by_default_and_resets_it():
    assert DEFAULT_DETECTOR_MODE == "temporal"
    person = _heat({(10, 10): 0.6})
    flash = _heat({(10, 10): 0.6, (3, 25): 0.9})
    network = StubNetwork([person, person, flash, person])
    stage = detector_stage(network)
    assert isinstance(stage, TemporalDetector)
    pipeline = Pipeline(stage, None, auto_lock=False)
    frame = np.random.default_rng(0).integers(0, 255, (512, 640), dtype=np.uint8)
    for _ in range(2):  # no motion on the first frame, nothing carried into the second
        scores = [s for _, s in pipeline.step(frame).detections]
        assert scores == [pytest.approx(0.6, abs=1e-3)]
    scores = sorted(s for _, s in pipeline.step(frame).detections)  # a flash: half its score
    assert scores == [pytest.approx(0.455, abs=1e-3), pytest.approx(0.6, abs=1e-3)]
    pipeline.reset()
    network.heats, network.calls = [flash], 0
    scores = sorted(s for _, s in pipeline.step(frame).detections)  # forgotten: as it is
    assert scores == [pytest.approx(0.6, abs=1e-3), pytest.approx(0.9, abs=1e-3)]


def test_the_plain_mode_is_the_network_frame_by_frame():
    network = StubNetwork([_heat({(10, 10): 0.6})])
    assert detector_stage(network, "plain") is network


def test_the_real_suite_starts_each_pseudo_clip_afresh_and_replays_its_frames():
    from emts.eval.real import temporal_boxes
    from emts.eval.real_frames import EvalFrame
    from emts.geometry import FrameGeometry

    geometry = FrameGeometry((640, 512))
    person, nothing = _heat({(10, 10): 0.6}), _heat({})
    network = StubNetwork([person, person, nothing, nothing])
    stage = TemporalDetector(network)
    channels = np.zeros((3, 192, 256), np.float32)

    def frame(history):
        image = np.zeros((512, 640), np.uint8)
        return EvalFrame("f", channels, image, None, STILL, image, geometry, np.zeros((0, 4)),
                         history=history)  # fmt: skip

    first = temporal_boxes(stage, frame([({(256, 192): channels}, STILL)]))  # replay, then score
    assert network.calls == 2 and first[1].tolist() == [pytest.approx(0.6, abs=1e-3)]
    _, scores = temporal_boxes(stage, frame(None))  # the stream goes on: the memory fades
    assert max(scores) == pytest.approx(0.5 * 0.01 + 0.5 * 0.6, abs=1e-3)
    _, scores = temporal_boxes(stage, frame([]))  # a new clip: nothing carried from the last
    assert network.calls == 4 and scores.tolist() == []


def test_a_locked_track_is_fed_what_this_frame_sighted_and_acquisition_what_passed_tau():
    nothing, person = _heat({}), _heat({(10, 10): 0.5})
    network = StubNetwork([nothing, nothing, person])
    pipeline = Pipeline(detector_stage(network), None, auto_lock=False)
    fed = []
    update = pipeline.tracker.update
    pipeline.tracker.update = lambda motion, candidates, **kw: (
        fed.append(candidates) or update(motion, candidates, **kw)
    )
    frame = np.random.default_rng(0).integers(0, 255, (512, 640), dtype=np.uint8)
    for _ in range(3):
        result = pipeline.step(frame)
    # the person comes in at 0.5 on the heatmap, ~0.25 in the memory: no detection yet ...
    assert result.detections == []
    # ... but Stage D is fed the sighting, scored by this frame's heatmap
    assert [round(c.score, 3) for c in fed[-1]] == [0.5]


class SizedStub(StubNetwork):
    """A stub network of any size whose boxes are ``height`` network px tall."""

    def __init__(self, heats, network_size, height: float) -> None:
        super().__init__(heats)
        self.network_size = network_size
        self.height = height

    def raw(self, channels, residual_reference=None):
        assert channels.shape[1:] == (self.network_size[1], self.network_size[0])
        heat, size, offset, embedding = super().raw(channels, residual_reference)
        size[0, 1] = np.log(self.height / 8)
        return [heat, size, offset, embedding]


def _grid(size, cells: dict[tuple[int, int], float]) -> np.ndarray:
    heat = np.full((size[1] // 8, size[0] // 8), 0.01, np.float32)
    for (y, x), value in cells.items():
        heat[y, x] = value
    return heat


def test_the_coarse_pass_adds_tall_people_in_the_fine_pass_pixels():
    fine = SizedStub([_grid((512, 384), {(20, 30): 0.6})], (512, 384), 16.0)
    # two coarse peaks: one 32 network px tall (85 WORKING px), one 12 (32 WORKING px)
    coarse = SizedStub([_grid((256, 192), {(5, 5): 0.7, (15, 25): 0.8})], (256, 192), 32.0)
    stage = TemporalDetector(fine, coarse=coarse)
    channels = np.zeros((3, 384, 512), np.float32)
    found = stage.detect(channels, None)
    assert [round(d.score, 2) for d in found] == [0.8, 0.7, 0.6]
    # the coarse peaks land at twice their coarse coordinates, their boxes twice as tall
    tall = found[0]
    centre = tall.box[:2] + tall.box[2:] / 2
    np.testing.assert_allclose(centre, [2 * (25.5 * 8), 2 * (15.5 * 8)], atol=0.6)
    assert tall.box[3] == pytest.approx(64.0, abs=0.5)
    short = SizedStub([_grid((256, 192), {(5, 5): 0.7})], (256, 192), 12.0)
    assert len(TemporalDetector(fine, coarse=short).detect(channels, None)) == 1  # dropped
    assert TemporalDetector(fine, coarse=None).coarse is None


def test_merging_the_passes_drops_overlaps_across_them_only():
    from emts.stages.c_detect.detector import Detection
    from emts.stages.c_detect.temporal import merge_passes

    def d(x, y, w, h, score):
        return Detection(np.array([x, y, w, h], float), score, np.ones(8) / np.sqrt(8))

    fine = [d(10, 10, 10, 20, 0.6), d(12, 12, 10, 20, 0.5), d(100, 100, 10, 20, 0.4)]
    coarse = [d(11, 11, 12, 22, 0.55), d(95, 90, 16, 32, 0.9), d(200, 10, 20, 40, 0.35)]
    merged = merge_passes(fine, coarse)
    # the fine pass's own neighbours both stay; the coarse box under the 0.6 goes, the 0.9
    # coarse box takes the 0.4 fine one's place; best first
    assert [m.score for m in merged] == [0.9, 0.6, 0.5, 0.35]
    assert merge_passes(fine, []) is fine


def test_a_model_run_at_twice_its_training_size_gets_a_coarse_pass_at_that_size():
    from emts.stages.c_detect.detector import Detector
    from emts.stages.c_detect.stage import shipped_detector
    from emts.stages.c_detect.temporal import coarse_pass_for

    thermal = shipped_detector("thermal")  # trained at 256x192, runs at 512x384
    coarse = coarse_pass_for(thermal)
    assert coarse.network_size == (256, 192) and coarse.path == thermal.path
    assert coarse.residual_reference == thermal.residual_reference
    assert coarse_pass_for(shipped_detector("thermal", network_size=(256, 192))) is None
    assert coarse_pass_for(Detector()) is None  # the default model at its own size
    assert coarse_pass_for(Detector(network_size=(512, 384))).network_size == (256, 192)
    assert coarse_pass_for(Detector(network_size=(384, 288))) is None  # not twice
    assert detector_stage(thermal).coarse is not None
    assert detector_stage(thermal, coarse_pass=False).coarse is None


def test_the_default_pipeline_takes_the_coarse_pass_switch():
    assert Pipeline.default(model="thermal").detector.coarse is not None
    assert Pipeline.default(model="thermal", coarse_pass=False).detector.coarse is None
    assert Pipeline.default(model="default").detector.coarse is None  # at its own size


def test_the_coarse_pass_masks_a_letterboxed_inputs_padding_rows():
    from emts.geometry import FrameGeometry

    seen = []

    class Recording(SizedStub):
        def raw(self, channels, residual_reference=None):
            seen.append(channels.copy())
            return super().raw(channels, residual_reference)

    fine = SizedStub([_grid((512, 384), {})], (512, 384), 16.0)
    coarse = Recording([_grid((256, 192), {})], (256, 192), 32.0)
    stage = TemporalDetector(fine, coarse=coarse)
    channels = np.ones((3, 384, 512), np.float32)  # motion everywhere, padding rows included
    stage.detect_working(channels, None, FrameGeometry((1280, 720), (512, 384)))  # 16:9
    stage.detect_working(channels, None, FrameGeometry((640, 512), (512, 384)))  # fills it
    letterboxed, full = seen
    rows = letterboxed[1].any(axis=1)
    assert rows.sum() < 192 * 0.8 and not rows[0] and not rows[-1]  # rows above/below: 0
    assert letterboxed[0].all()  # L untouched
    assert full[1][5:-5, 12:-12].all()  # no letterbox: the image's R kept
