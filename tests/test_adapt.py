"""emts adapt: the shipped ONNX rebuilt in torch, footage samples, the command end to end."""

import json

import numpy as np
import pytest

from conftest import render

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from emts.cli import main  # noqa: E402
from emts.stages.c_detect.detector import Detector, default_model_path  # noqa: E402
from emts.train.adapt import (  # noqa: E402
    AdaptConfig,
    FootageSegment,
    OwnFootage,
    prepare_segment,
)
from emts.train.export import detector_from_onnx, freeze_batch_norm  # noqa: E402

SHIFT = (8.0, -5.0)  # camera drift of the test footage, input px per frame


def _footage(scene: np.ndarray, frames: int = 8, size=(640, 360)) -> list[np.ndarray]:
    """A drifting camera over a real aerial still, 16:9 like most RGB drone video."""
    out = []
    for t in range(frames):
        pose = np.array([[1.0, 0, -60 - SHIFT[0] * t], [0, 1.0, -60 - SHIFT[1] * t]])
        out.append(render(scene, pose, size))
    return out


def test_shipped_onnx_rebuilt_in_torch_gives_the_same_outputs():
    model = detector_from_onnx(default_model_path())
    x = np.random.default_rng(0).random((2, 3, 192, 256)).astype(np.float32)
    x[:, 2] -= 0.5
    heat, size, offset, embedding = Detector(residual_reference=0.0).raw(x)  # the graph alone
    with torch.no_grad():
        outputs = model(torch.from_numpy(x))
    np.testing.assert_allclose(torch.sigmoid(outputs[0]).numpy(), heat, atol=1e-4)
    for ours, theirs in zip(outputs[1:], (size, offset, embedding), strict=True):
        np.testing.assert_allclose(ours.numpy(), theirs, atol=1e-4)


def test_frozen_batch_norm_keeps_its_statistics_while_training():
    model = detector_from_onnx(default_model_path())
    model.train()
    freeze_batch_norm(model)
    before = model.stem[1].running_mean.clone()
    model(torch.rand(2, 3, 192, 256))
    assert torch.equal(model.stem[1].running_mean, before)
    assert not model.stem[1].training and model.stem[0].training


@pytest.fixture(scope="module")
def segment(aerial_scene) -> FootageSegment:
    config = AdaptConfig(fps=30.0)
    detector = Detector(threshold=config.ignore_score)
    return prepare_segment("drift", _footage(aerial_scene), detector, config, progress=False)


def test_prepared_footage_keeps_input_frames_and_the_camera_motion(segment):
    assert segment.geometry.input_size == (640, 360)
    assert segment.frames[0].shape == (360, 640) and segment.frames[0].dtype == np.uint8
    # Stage A's motion, in input px: the scene moves by -SHIFT a frame.
    for motion in segment.motions[2:]:
        np.testing.assert_allclose(motion[:2, 2], [-SHIFT[0], -SHIFT[1]], atol=0.5)
        np.testing.assert_allclose(motion[:2, :2], np.eye(2), atol=0.01)


def test_footage_samples_hold_pasted_walkers_moving_with_the_ground(segment):
    config = AdaptConfig(fps=30.0, empty_share=0.0, walkers=(2, 2), person_height=(30, 30))
    source = OwnFootage([segment], config)
    sample = source.sample(np.random.default_rng(3), frames=4, clip_number=5)
    assert sample.channels.shape == (4, 3, 192, 256) and sample.source == "footage"
    assert all(int(t.mask.sum()) == 2 for t in sample.targets)
    assert {int(i) for i in sample.targets[0].identity if i >= 0} == {5000, 5001}
    # Over three frames a walker's centre moves with the scene (-SHIFT a frame in input px;
    # network px = 0.375 x input px here) plus its own walk (under 3 px at 30 px tall).
    first, last = sample.targets[0], sample.targets[-1]
    cells = {}
    for t in (first, last):
        for k in range(2):
            cy, cx = divmod(int(t.indices[k]), 32)
            cells.setdefault(int(t.identity[k]), []).append(np.array([cx, cy]) + t.offset[k])
    drift = np.array([-SHIFT[0], -SHIFT[1]]) * 0.375 * 3 / 8  # 3 frames, in cells
    for start, end in cells.values():
        assert np.linalg.norm(end - start - drift) < 0.35  # the drift alone is 1.3 cells


def test_frames_without_walkers_are_negatives_with_ignore_regions(segment):
    config = AdaptConfig(fps=30.0, empty_share=1.0)
    sample = OwnFootage([segment], config).sample(np.random.default_rng(0), 4, 0)
    assert all(t.mask.sum() == 0 and t.heatmap.max() == 0 for t in sample.targets)
    # Ignore regions are what the starting model or the frame difference flagged, no more.
    flagged = [len(b) for b in segment.ignore]
    ignored = [float((t.weight == 0).mean()) for t in sample.targets]
    assert all(share < 0.5 for share in ignored)
    assert (max(ignored) > 0) == (max(flagged) > 0)


def test_adapt_command_writes_a_usable_model_and_its_provenance(
    tmp_path, aerial_scene, capsys, caplog
):
    import cv2

    folder = tmp_path / "flight"
    folder.mkdir()
    for t, frame in enumerate(_footage(aerial_scene, frames=10)):
        cv2.imwrite(str(folder / f"{t:04d}.png"), frame)
    out = tmp_path / "adapted"
    code = main(
        ["adapt", str(folder), "--out", str(out), "--steps", "2", "--frames", "1:9"]
        + ["--curriculum", str(tmp_path / "none"), "--hituav", str(tmp_path / "none")]
        + ["--model", "default"]  # (the gray test footage would pick the thermal model)
    )
    assert code == 0
    report = json.loads((out / "adapt.json").read_text())
    assert report["footage"][0]["frames"] == 9 and report["replay"] == []
    assert report["mixture"] == {"footage": 0.5}
    assert report["partial"] is False and report["steps_done"] == 2
    # No replay: one warning says what was looked for and what it means; adapt.json keeps it.
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and warnings[0] == report["replay_warning"]
    assert "no replay data found" in warnings[0] and "forget" in warnings[0]
    assert str(tmp_path / "none" / "tier1" / "manifest.json") in warnings[0]
    assert str(tmp_path / "none" / "train.json") in warnings[0]
    Detector(out / "model.onnx")(np.zeros((3, 192, 256), np.float32))  # loads and runs
    assert "model.onnx" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.mp4"], "missing.mp4"),
        (["{folder}", "--frames", "50:60"], "no frames"),
        (["{folder}", "--person-height", "40", "20"], "--person-height"),
        (["{folder}", "--model", "nope.onnx"], "nope.onnx"),
        (["{folder}", "--resume"], "nothing to resume"),
    ],
)
def test_adapt_bad_input_is_one_line_and_exit_2(tmp_path, aerial_scene, capsys, args, message):
    import cv2

    folder = tmp_path / "flight"
    folder.mkdir()
    for t, frame in enumerate(_footage(aerial_scene, frames=6)):
        cv2.imwrite(str(folder / f"{t:04d}.png"), frame)
    args = [a.replace("{folder}", str(folder)) for a in args]
    assert main(["adapt", *args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()  # a refusal leaves no empty --out folder


def test_verified_tracks_become_positives_and_unsure_ones_ignore_regions(tmp_path, segment):
    from emts.train.adapt import read_tracks

    lines = [
        {
            "frame": 11,
            "mode": "locked",
            "target": {"box": [100, 50, 20, 50], "verified": True, "measured_by": "appearance"},
        },
        {
            "frame": 12,
            "mode": "locked",
            "target": {"box": [104, 50, 20, 50], "verified": False, "measured_by": "appearance"},
        },
        {
            "frame": 13,
            "mode": "reacquire",
            "target": {"box": [108, 50, 20, 50], "verified": True, "measured_by": None},
        },
        {"frame": 14, "mode": "search", "target": None},
        {
            "frame": 99,
            "mode": "locked",
            "target": {"box": [1, 1, 9, 9], "verified": True, "measured_by": "both"},
        },
    ]
    path = tmp_path / "track.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    positives, unsure = read_tracks(path, first=10, count=8)
    assert [len(b) for b in positives] == [0, 1, 0, 0, 0, 0, 0, 0]
    assert [len(b) for b in unsure] == [0, 0, 1, 1, 0, 0, 0, 0]
    segment = FootageSegment(
        segment.name,
        segment.geometry,
        segment.frames,
        segment.motions,
        segment.ignore,
        tracked=[np.array([[300.0, 150.0, 24.0, 60.0]])] * len(segment.frames),
    )
    config = AdaptConfig(fps=30.0, empty_share=1.0)
    sample = OwnFootage([segment], config).sample(np.random.default_rng(0), 4, 2)
    assert all(int(t.mask.sum()) == 1 and t.identity[0] == 2900 for t in sample.targets)


def test_a_tracks_file_that_is_not_emts_track_output_is_bad_input(tmp_path):
    from emts.errors import BadInputError
    from emts.train.adapt import read_tracks

    path = tmp_path / "track.jsonl"
    path.write_text('{"frame": 1, "target": {"box": "x"}}\n')
    with pytest.raises(BadInputError, match="line 1"):
        read_tracks(path, 0, 5)
    with pytest.raises(BadInputError, match="missing.jsonl"):
        read_tracks(tmp_path / "missing.jsonl", 0, 5)
