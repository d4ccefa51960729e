"""Stage C at run time: decoding (numpy only)."""

from pathlib import Path

import numpy as np
import pytest

from emts.errors import BadInputError
from emts.stages.b_channels import (
    RESIDUAL_REFERENCE,
    normalize_residual_level,
    residual_gain,
    residual_level,
)
from emts.stages.c_detect.detector import Detector, decode, session_options


def _heads(peaks):
    heat = np.zeros((1, 24, 32), np.float32)
    size = np.zeros((2, 24, 32), np.float32)
    offset = np.full((2, 24, 32), 0.5, np.float32)
    embedding = np.ones((8, 24, 32), np.float32)
    for (y, x), score in peaks.items():
        heat[0, y, x] = score
    return heat, size, offset, embedding


def test_decode_keeps_local_maxima_above_threshold_best_first():
    heat, size, offset, embedding = _heads({(5, 5): 0.9, (5, 6): 0.5, (10, 20): 0.6, (20, 3): 0.2})
    detections = decode(heat, size, offset, embedding, threshold=0.3)
    assert [round(d.score, 2) for d in detections] == [0.9, 0.6]  # (5,6) is not a local max


def test_decode_keeps_two_people_in_diagonally_adjacent_cells_and_one_peak_per_person():
    # two people walking side by side: their centres in diagonally adjacent cells, each box
    # 8 x 16 px -- two detections (a 3x3 max-pool would keep only the better one)
    heat, size, offset, embedding = _heads({(10, 10): 0.9, (11, 11): 0.8})
    size[:, 10:12, 10:12] = np.log([1.0, 2.0])[:, None, None]
    assert [round(d.score, 2) for d in decode(heat, size, offset, embedding)] == [0.9, 0.8]
    # an edge neighbour is no peak
    heat, size, offset, embedding = _heads({(10, 10): 0.9, (10, 11): 0.8})
    assert [round(d.score, 2) for d in decode(heat, size, offset, embedding)] == [0.9]
    # two diagonal peaks of one large person: their boxes overlap (IoU 0.9), one detection
    heat, size, offset, embedding = _heads({(10, 10): 0.9, (11, 11): 0.8})
    size[:, 10:12, 10:12] = np.log([8.0, 16.0])[:, None, None]
    assert [round(d.score, 2) for d in decode(heat, size, offset, embedding)] == [0.9]


def test_decode_geometry_and_unit_embeddings():
    heat, size, offset, embedding = _heads({(10, 20): 0.8})
    size[:, 10, 20] = np.log([2.0, 4.0])  # box = 8 * exp(S) = 16 x 32
    offset[:, 10, 20] = [0.25, 0.75]
    (d,) = decode(heat, size, offset, embedding, threshold=0.3)
    cx, cy = (20 + 0.25) * 8, (10 + 0.75) * 8
    np.testing.assert_allclose(d.box, [cx - 8, cy - 16, 16, 32], rtol=1e-6)
    assert abs(np.linalg.norm(d.embedding) - 1) < 1e-6


def test_decode_reads_every_peak_at_its_own_cell():
    heat, size, offset, embedding = _heads({(3, 4): 0.7, (12, 25): 0.9, (20, 10): 0.5})
    size[:, 12, 25] = np.log([3.0, 5.0])
    offset[:, 20, 10] = [0.1, 0.9]
    embedding[:, 3, 4] = np.arange(8)
    scores = np.zeros((24, 32), np.float32)
    scores[3, 4], scores[12, 25], scores[20, 10] = 0.2, 0.8, 0.6  # (3, 4): heatmap alone passes
    found = decode(heat, size, offset, embedding, threshold=0.4, box_scale=2.0, scores=scores)
    assert [(round(d.score, 2), round(d.raw_score, 2)) for d in found] == [
        (0.8, 0.9),
        (0.6, 0.5),
        (0.2, 0.7),
    ]
    np.testing.assert_allclose(found[0].box, [25.5 * 8 - 24, 12.5 * 8 - 40, 48, 80], rtol=1e-6)
    np.testing.assert_allclose(found[1].box[:2], [10.1 * 8 - 8, 20.9 * 8 - 8], rtol=1e-6)
    np.testing.assert_allclose(found[2].embedding, np.arange(8) / np.linalg.norm(np.arange(8)))
    assert decode(heat, size, offset, embedding, threshold=0.95) == []


def test_sessions_stop_spinning_when_a_run_returns():
    # a worker spinning between frames steals the second core from Stages A, B, D and E
    options = session_options(2)
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"
    assert options.intra_op_num_threads == 2


def test_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(BadInputError):
        Detector(tmp_path / "none.onnx")


def test_the_detector_normalizes_the_residual_level_of_loud_frames_only():
    rng = np.random.default_rng(0)
    channels = np.zeros((3, 192, 256), np.float32)
    channels[0] = rng.uniform(0.2, 0.8, (192, 256))
    channels[2, :, 8:248] = rng.normal(0.0, 0.2, (192, 240))
    channels[1] = np.abs(channels[2])
    assert residual_gain(channels) < 0.5
    normalized = Detector()
    raw = Detector(residual_reference=0.0)
    for a, b in zip(
        normalized.raw(channels), raw.raw(normalize_residual_level(channels)), strict=True
    ):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert not np.allclose(normalized.raw(channels)[0], raw.raw(channels)[0])
    quiet = channels.copy()
    quiet[1:] *= 0.5 * RESIDUAL_REFERENCE / residual_level(channels)
    for a, b in zip(normalized.raw(quiet), raw.raw(quiet), strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_shipped_detector_runs_at_any_size_and_unchanged_at_its_own(tmp_path):
    from emts.stages.c_detect.detector import Detector

    shipped = Detector(threshold=0.0)
    assert shipped.network_size == (256, 192)  # the size it was trained at, from its metadata
    x = np.random.default_rng(0).random((3, 192, 256), dtype=np.float32)
    large = Detector(threshold=0.0, network_size=(512, 384))
    assert large.network_size == (512, 384)
    heads = large.raw(np.zeros((3, 384, 512), np.float32))
    assert heads[0].shape == (1, 1, 48, 64)
    for a, b in zip(shipped.raw(x), Detector(network_size=(256, 192)).raw(x), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_fixed_size_model_refuses_another_size_in_one_line(tmp_path):
    pytest.importorskip("onnx")
    from emts.errors import BadInputError
    from emts.stages.c_detect.detector import Detector, default_model_path
    from emts.train.export import reshape_onnx

    fixed = reshape_onnx(default_model_path(), tmp_path / "fixed.onnx", (256, 192), False)
    assert Detector(fixed).network_size == (256, 192)
    with pytest.raises(BadInputError, match="takes 256x192 input only.*--any-size"):
        Detector(fixed, network_size=(512, 384))
    with pytest.raises(BadInputError, match="network size"):
        Detector(network_size=(500, 384))


def test_eval_real_model_specs_take_a_network_size(tmp_path):
    from emts.eval.real import parse_models

    path = tmp_path / "m.onnx"
    path.write_bytes(b"x")
    models = parse_models([f"big={path}@512x384", str(path)])
    assert models["big"] == (str(path), (512, 384)) and models["m"] == str(path)


def test_boxes_take_the_scale_recorded_for_the_size_the_network_runs_at(tmp_path):
    pytest.importorskip("onnx")
    from emts.stages.c_detect.detector import default_model_path
    from emts.train.export import record_box_scale

    # The shipped model records one for the larger sizes it runs at, none at its own.
    assert Detector().box_scale == 1.0
    assert 1.0 < Detector(network_size=(512, 384)).box_scale < 1.3
    plain = record_box_scale(_copy(default_model_path(), tmp_path), {})
    assert Detector(plain, network_size=(512, 384)).box_scale == 1.0
    doubled = record_box_scale(_copy(default_model_path(), tmp_path, "doubled"), {"512x384": 2})
    rng = np.random.default_rng(3)
    x = np.zeros((3, 384, 512), np.float32)
    x[0] = rng.random((384, 512))
    x[1:, 150:200, 240:260] = 0.3  # a person-sized moving blob
    a = Detector(plain, threshold=0.05, network_size=(512, 384))(x)
    b = Detector(doubled, threshold=0.05, network_size=(512, 384))(x)
    assert a and b
    # the best peak's box twice as large about the same centre (further down, larger boxes
    # overlap more, so the decoder's box suppression may keep other ones)
    np.testing.assert_allclose(b[0].box[2:], 2 * a[0].box[2:], rtol=1e-5)
    np.testing.assert_allclose(b[0].box[:2] + b[0].box[2:] / 2, a[0].box[:2] + a[0].box[2:] / 2)
    assert Detector(doubled).box_scale == 1.0  # at 256x192 nothing was recorded


def _copy(path, folder, name="plain"):
    import shutil

    return shutil.copy(path, folder / f"{name}.onnx")


def test_a_model_is_fed_the_residual_level_recorded_with_it(tmp_path, capsys):
    pytest.importorskip("onnx")
    from emts.cli import main
    from emts.stages.c_detect.detector import default_model_path

    loud = np.zeros((3, 192, 256), np.float32)
    loud[0] = np.random.default_rng(0).random((192, 256))
    loud[1] = 0.04  # a frame louder than either reference
    out = tmp_path / "r.onnx"
    assert main(["export", str(default_model_path()), "--out", str(out), "--any-size",
                 "--residual-reference", "0.005"]) == 0  # fmt: skip
    recorded = Detector(out)
    assert recorded.residual_reference == pytest.approx(0.005)
    assert Detector(out, residual_reference=0.02).residual_reference == 0.02  # asked for
    expected = Detector(residual_reference=0.005).raw(loud)
    for a, b in zip(recorded.raw(loud), expected, strict=True):
        np.testing.assert_array_equal(a, b)
    # 0 removes it: the earlier models' level again
    again = tmp_path / "r0.onnx"
    assert main(["export", str(out), "--out", str(again), "--residual-reference", "0"]) == 0
    assert Detector(again).residual_reference == RESIDUAL_REFERENCE
    code = main(["export", str(out), "--out", str(again), "--residual-reference", "-1"])
    assert code == 2 and "--residual-reference" in capsys.readouterr().err


def test_fitting_a_box_scale_needs_an_open_size(tmp_path, capsys):
    pytest.importorskip("onnx")
    from emts.cli import main
    from emts.stages.c_detect.detector import default_model_path

    code = main(
        ["export", str(default_model_path()), "--out", str(tmp_path / "x.onnx")]
        + ["--fit-box-scale", "512x384"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--any-size" in err[0]
    assert not (tmp_path / "x.onnx").exists()


def test_a_recorded_run_size_is_the_default_size_and_a_reshape_sets_it_as_asked(tmp_path, capsys):
    pytest.importorskip("onnx")
    from emts.cli import main
    from emts.stages.c_detect.detector import default_model_path, recorded_size

    out = tmp_path / "big.onnx"
    args = ["export", str(default_model_path()), "--out", str(out), "--any-size"]
    assert main([*args, "--run-size", "512x384"]) == 0
    big = Detector(out)
    assert big.network_size == (512, 384)  # run there unless told otherwise ...
    assert recorded_size(big.session) == (256, 192)  # ... trained at the paper's size
    assert big.box_scale == Detector(network_size=(512, 384)).box_scale  # scales kept
    assert Detector(out, network_size=(256, 192)).network_size == (256, 192)
    x = np.random.default_rng(1).random((3, 384, 512), dtype=np.float32)
    for a, b in zip(big.raw(x), Detector(network_size=(512, 384)).raw(x), strict=True):
        np.testing.assert_array_equal(a, b)  # the weights untouched
    # Reshaping it again keeps the entry (as every other option), --run-size sets another,
    # fixing its size drops it; a run size on a fixed-size model is refused.
    again = tmp_path / "again.onnx"
    assert main(["export", str(out), "--out", str(again), "--any-size"]) == 0
    assert Detector(again).network_size == (512, 384)
    assert (
        main(["export", str(out), "--out", str(again), "--any-size", "--run-size", "256x192"]) == 0
    )
    assert Detector(again).network_size == (256, 192)
    assert main(["export", str(out), "--out", str(again)]) == 0
    assert Detector(again).network_size == (256, 192)
    assert "run size 512x384 is dropped (add --any-size" in capsys.readouterr().err
    assert main(["export", str(out), "--out", str(again), "--run-size", "512x384"]) == 2


def test_the_thermal_model_is_reached_by_its_name(tmp_path, monkeypatch):
    from emts.cli import build_parser
    from emts.precision import named_model

    args = build_parser().parse_args(["detect", "c.mp4", "--jsonl", "o", "--model", "thermal"])
    assert args.model == named_model("thermal") and args.model.endswith("detector.thermal.onnx")
    detector = Detector(args.model, network_size=(512, 384))
    assert detector.box_scale != Detector(network_size=(512, 384)).box_scale  # other weights
    assert named_model("runs/x/model.onnx") == "runs/x/model.onnx"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "thermal").write_bytes(b"")  # a file of that name here is what the user means
    assert named_model("thermal") == "thermal"


def test_the_thermal_model_brings_its_own_files_for_precision_and_backend():
    from emts.precision import model_for, named_model, shipped_model

    thermal = named_model("thermal")
    assert model_for("detector", thermal, "fp32", 1, "onnxruntime") == Path(thermal)
    assert model_for("detector", thermal, "int8", 1, "onnxruntime").name == (
        "detector.thermal.int8.onnx"
    )
    assert shipped_model("detector", "fp32", "litert", "thermal").is_file()  # LiteRT fp32
    if not shipped_model("detector", "int8", "litert", "thermal").is_file():
        with pytest.raises(BadInputError, match="emts export-litert detector --model thermal"):
            model_for("detector", thermal, "int8", 1, "litert")  # not shipped: how to make it
    with pytest.raises(BadInputError, match="drop --precision"):
        model_for("detector", "runs/x/model.onnx", "int8", 1, None)  # any other file: as given


def test_a_mirror_averaged_detector_scores_a_mirrored_frame_as_the_frame_mirrored(tmp_path):
    pytest.importorskip("onnx")
    from emts.cli import main
    from emts.stages.c_detect.detector import default_model_path

    rng = np.random.default_rng(2)
    x = np.zeros((3, 192, 256), np.float32)
    x[0, :, 8:248] = rng.random((192, 240))  # the image between the letterbox's padding
    x[1, 60:90, 40:52] = 0.02  # a walker left of centre
    x[2, 60:90, 40:52] = 0.05
    mirrored = np.ascontiguousarray(x[..., ::-1])
    plain = Detector()
    # the network alone is not mirror-symmetric ...
    assert np.abs(plain.raw(mirrored)[0][..., ::-1] - plain.raw(x)[0]).max() > 1e-3
    out = tmp_path / "m.onnx"
    args = ["export", str(default_model_path()), "--out", str(out), "--any-size"]
    assert main([*args, "--mirror-average", "on"]) == 0
    averaged = Detector(out)
    assert averaged.mirror_average and not plain.mirror_average
    heat, size, offset, embedding = averaged.raw(x)
    # ... averaged with its mirror image it is, and it is the two runs' mean
    np.testing.assert_allclose(averaged.raw(mirrored)[0][..., ::-1], heat, atol=1e-6)
    np.testing.assert_allclose(
        heat, 0.5 * (plain.raw(x)[0] + plain.raw(mirrored)[0][..., ::-1]), atol=1e-6
    )
    for a, b in zip((size, offset, embedding), plain.raw(x)[1:], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)  # boxes and embeddings: the frame's own
    batch = averaged.raw(np.stack([x, mirrored]))[0]  # a batch: each frame on its own
    np.testing.assert_allclose(batch[1][..., ::-1], batch[0], atol=1e-6)
    assert not Detector(out, mirror_average=False).mirror_average  # asked for
    off = tmp_path / "off.onnx"
    assert main(["export", str(out), "--out", str(off), "--mirror-average", "off"]) == 0
    assert not Detector(off).mirror_average


def test_a_reshape_keeps_the_run_size_open_and_drops_it_fixed(tmp_path):
    """Re-exporting the thermal model to toggle an option must not put it back at 256x192."""
    pytest.importorskip("onnx")
    from emts.stages.c_detect.detector import (
        RUN_SIZE_METADATA,
        Detector,
        default_model_path,
        recorded_size,
    )
    from emts.train.export import record_mirror_average, record_run_size, reshape_onnx

    source = reshape_onnx(default_model_path(), tmp_path / "open.onnx", (256, 192), True)
    record_run_size(source, (512, 384))
    again = reshape_onnx(source, tmp_path / "again.onnx", (256, 192), True)
    record_mirror_average(again, True)
    assert recorded_size(Detector(again).session, RUN_SIZE_METADATA) == (512, 384)
    assert Detector(again).network_size == (512, 384)
    fixed = reshape_onnx(source, tmp_path / "fixed.onnx", (256, 192), False)
    assert recorded_size(Detector(fixed).session, RUN_SIZE_METADATA) is None
    assert Detector(fixed).network_size == (256, 192)
