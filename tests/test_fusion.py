"""Stage C mode ``fused``: compensated-difference blobs scored by the network (no data needed)."""

import cv2
import numpy as np
import pytest

from emts.errors import BadInputError
from emts.geometry import Frame, FrameGeometry
from emts.pipeline import Pipeline
from emts.stages.c_detect.fusion import FusedDetector, FusionConfig, blob_features
from emts.stages.c_detect.stage import detector_stage

GEOMETRY = FrameGeometry((640, 512))
IDENTITY = np.array([[1.0, 0, 0], [0, 1.0, 0]])
PERSON = np.array([300.0, 200.0, 8.0, 20.0])  # WORKING px, frame t
PATCH = np.array([100.0, 350.0, 10.0, 22.0])  # static textured patch, WORKING px


class StubNetwork:
    """Heads of a detector whose heatmap is ``heat`` at the cells of ``hot`` working boxes."""

    threshold = 0.3

    def __init__(self, hot: list[np.ndarray], heat: float = 0.8) -> None:
        self.heatmap = np.full((1, 1, 24, 32), 0.01, np.float32)
        for box in hot:
            centre = GEOMETRY.points([box[:2] + box[2:] / 2 - 0.5], Frame.WORKING, Frame.NETWORK)
            x, y = ((centre[0] + 0.5) // 8).astype(int)
            self.heatmap[0, 0, y, x] = heat

    def raw(self, channels, residual_reference=None):
        self.residual_reference = residual_reference
        size = np.zeros((1, 2, 24, 32), np.float32)
        size[0, 1] = np.log(20 * 0.375 / 8)  # 20 working px tall
        embedding = np.ones((1, 8, 24, 32), np.float32)
        return [self.heatmap, size, np.zeros((1, 2, 24, 32), np.float32), embedding]


def _frames(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two working frames: static texture (incl. a textured patch); a person moves 3 px."""
    rng = np.random.default_rng(seed)
    plate = cv2.GaussianBlur(rng.integers(90, 110, (512, 640)).astype(np.uint8), (3, 3), 0)
    x, y, w, h = PATCH.astype(int)
    plate[y : y + h, x : x + w] = rng.integers(0, 255, (h, w))  # high contrast, but static
    frames = []
    x, y, w, h = PERSON.astype(int)
    body = rng.integers(150, 255, (h, w))  # a textured walker: all of it changes
    for dx in (-3, 0):
        frame = plate.copy()
        frame[y : y + h, x + dx : x + dx + w] = body
        frames.append(frame)
    return frames[0], frames[1]


def _detect(network: StubNetwork, config: FusionConfig | None = None):
    previous, current = _frames()
    fused = FusedDetector(network, config)
    assert fused.detect(np.zeros((3, 192, 256), np.float32), previous, IDENTITY, GEOMETRY) == []
    return fused.detect(np.zeros((3, 192, 256), np.float32), current, IDENTITY, GEOMETRY)


def test_a_moving_blob_is_found_and_its_box_maps_back_to_the_person():
    detections = _detect(StubNetwork([PERSON]))
    assert len(detections) == 1
    box = GEOMETRY.boxes([detections[0].box], Frame.NETWORK, Frame.WORKING)[0]
    # the blob spans the person at t and t-1 (3 px) plus the 5x5 blur: within a few px
    assert np.abs(box[:2] - PERSON[:2]).max() <= 6
    assert PERSON[2] <= box[2] <= PERSON[2] + 10 and PERSON[3] <= box[3] <= PERSON[3] + 6
    assert detections[0].score >= 0.3
    assert np.isclose(np.linalg.norm(detections[0].embedding), 1.0)


def test_a_static_textured_patch_is_not_boosted_by_the_network():
    detections = _detect(StubNetwork([PERSON, PATCH], heat=0.95))
    boxes = [GEOMETRY.boxes([d.box], Frame.NETWORK, Frame.WORKING)[0] for d in detections]
    assert boxes and all(np.abs(b[:2] - PATCH[:2]).max() > 50 for b in boxes)


def test_the_network_ranks_blobs():
    cold = _detect(StubNetwork([PERSON], heat=0.02), FusionConfig(bias=FusionConfig().bias + 20))
    hot = _detect(StubNetwork([PERSON], heat=0.9), FusionConfig(bias=FusionConfig().bias + 20))
    assert hot[0].score > cold[0].score


def test_fused_mode_runs_in_the_pipeline_and_resets_with_it():
    previous, current = _frames()
    pipeline = Pipeline(detector_stage(StubNetwork([PERSON]), "fused"), None, auto_lock=False)
    assert pipeline.step(previous).detections == []
    result = pipeline.step(current)
    assert len(result.detections) == 1 and "C" in result.ms
    pipeline.reset()
    assert pipeline.step(current).detections == []  # no stale previous frame


def test_an_unknown_detector_mode_is_bad_input():
    with pytest.raises(BadInputError):
        detector_stage(StubNetwork([]), "magic")


def test_blobs_a_closing_apart_are_one_blob():
    residual = np.zeros((512, 640), np.float32)
    residual[100:120, 200:206] = 10.0
    residual[100:120, 208:214] = 10.0  # a 2-px gap: the 5x5 close joins it
    residual += 0.1
    heads = StubNetwork([]).raw(None)
    boxes, features, _ = blob_features(
        residual, np.ones_like(residual, bool), 4.0, [h[0] for h in heads]
    )
    assert len(boxes) == 1 and boxes[0][2] == 14


def test_the_blend_reads_the_heatmap_it_was_fitted_on_without_residual_normalization():
    network = StubNetwork([PERSON])
    _detect(network)
    assert network.residual_reference == FusionConfig().residual_reference == 0.0


def test_the_blend_follows_the_network_size_it_was_fitted_at(caplog):
    from emts.stages.c_detect.fusion import FITTED, FusedDetector, fusion_config

    class Sized:
        threshold = 0.3

        def __init__(self, size):
            self.network_size = size

    assert FusedDetector(Sized((256, 192))).config == FITTED[(256, 192)]
    assert FusedDetector(Sized((512, 384))).config == FITTED[(512, 384)]
    assert FITTED[(512, 384)].weights != FITTED[(256, 192)].weights
    with caplog.at_level("WARNING", logger="emts"):
        assert fusion_config((384, 288)) == FITTED[(256, 192)]
    assert "no blend fitted at network size 384x288" in caplog.text


def test_the_pipeline_builds_stage_b_at_the_fused_networks_size():
    from emts.stages.c_detect.detector import Detector

    stage = detector_stage(Detector(network_size=(512, 384)), "fused")
    assert stage.network_size == (512, 384)
    pipeline = Pipeline(stage, verifier=None, auto_lock=False)
    frame = np.random.default_rng(0).integers(0, 255, (512, 640), np.uint8)
    assert pipeline.step(frame).channels.shape == (3, 384, 512)
    with pytest.raises(BadInputError, match="detector runs at 512x384"):
        stage.detector(np.zeros((3, 192, 256), np.float32))
