"""The LiteRT backend (issue 11 part 4): the shipped ``.tflite`` files follow the ONNX models
they were converted from, run through the same Detector / Verifier interface, and
``--backend litert`` says in one line when the runtime is missing. Inputs are Stage A/B
channels of a gusty clip over the packaged real still (what the curriculum's frames look
like); data/ is never needed."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from emts.cli import main
from emts.errors import BadInputError
from emts.litert import litert_available
from emts.precision import model_for, model_path, resolve_precision, shipped_model
from emts.train.quantize import sha256

needs_litert = pytest.mark.skipif(
    not litert_available(),
    reason="ai-edge-litert is not installed (pip install 'emts[litert]'; the dev extra has it)",
)
KINDS = ("detector", "verifier")
# fp32: the same float graph in another runtime (kernel order and fusion only)
FP32_TOLERANCE = 1e-4
# int8 vs the float model on the gusty clip: the shipped ONNX int8 is off by up to 0.23 on
# single heatmap cells (0.006 on average); LiteRT's int8 is held to that, and to the ONNX int8
# itself within two steps of its 1/256 heatmap scale (same stream, same recipe)
INT8_HEATMAP_MAX = 0.3
INT8_HEATMAP_MEAN = 0.02


@pytest.fixture(scope="module")
def channels() -> np.ndarray:
    """(6, 3, 192, 256) [L, R, D] stacks of a gusty clip with a walker (frames 2-7)."""
    from emts.front_end import MotionFrontEnd
    from emts.synth.still_clip import gusty_clip

    front = MotionFrontEnd()
    stacks = [front.step(frame).channels for frame in gusty_clip(8, seed=3).frames]
    return np.stack(stacks[2:]).astype(np.float32)


@pytest.fixture(scope="module")
def windows() -> np.ndarray:
    """(8, 40, 16) descriptor windows around the verifier's own feature statistics."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(shipped_model("verifier", "fp32"))).graph
    values = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    rng = np.random.default_rng(0)
    x = values["mean"] + values["std"] * rng.normal(0, 1, (8, 40, 16))
    return np.maximum(x, 0).astype(np.float32)  # magnitudes and histogram shares are >= 0


def _run(kind: str, precision: str, backend: str, x: np.ndarray) -> list[np.ndarray]:
    from emts.stages.c_detect.detector import load_session

    session = load_session(shipped_model(kind, precision, backend), kind, 1)
    return session.run(None, {session.get_inputs()[0].name: x})


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_shipped_tflite_was_converted_from_the_shipped_fp32_onnx(kind, precision):
    """A new ONNX model without new .tflite files would ship two different detectors."""
    tflite = shipped_model(kind, precision, "litert")
    provenance = json.loads(tflite.with_name(tflite.name + ".json").read_text())
    assert provenance["sha256"] == sha256(tflite)
    assert provenance["from"]["sha256"] == sha256(shipped_model(kind, "fp32")), (
        f"the shipped {kind} changed: run `emts export-litert {kind} --precision {precision} "
        f"--out {tflite}` again"
    )
    assert provenance["converter"]["litert-torch"]
    assert tflite.stat().st_size < 400 * 1024


@needs_litert
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_a_tflite_carries_its_onnx_metadata_in_its_provenance(precision):
    """A .tflite holds no ONNX metadata: the Stage E input (and a detector's trained size)
    come from the provenance beside it, as the ONNX it was converted from says."""
    from emts.stages.c_detect.detector import Detector
    from emts.stages.e_verify import Verifier

    onnx_verifier = Verifier(shipped_model("verifier", "fp32"))
    assert Verifier(shipped_model("verifier", precision, "litert")).resolution == (
        onnx_verifier.resolution
    )
    detector = Detector(shipped_model("detector", precision, "litert"), threads=1)
    assert detector.network_size == Detector(shipped_model("detector", "fp32")).network_size


@needs_litert
def test_fp32_detector_matches_onnxruntime(channels):
    reference = _run("detector", "fp32", "onnxruntime", channels)
    converted = _run("detector", "fp32", "litert", channels)  # batch 6 through a batch-1 file
    for a, b in zip(reference, converted, strict=True):
        assert a.shape == b.shape and b.dtype == np.float32
        np.testing.assert_allclose(b, a, atol=FP32_TOLERANCE, rtol=0)


@needs_litert
def test_int8_detector_follows_the_float_model_like_the_onnx_int8(channels):
    heat_fp32 = _run("detector", "fp32", "onnxruntime", channels)[0]
    heat_onnx_int8 = _run("detector", "int8", "onnxruntime", channels)[0]
    outputs = _run("detector", "int8", "litert", channels)
    assert all(o.dtype == np.float32 and np.isfinite(o).all() for o in outputs)
    heat = outputs[0]
    assert np.abs(heat - heat_fp32).max() < INT8_HEATMAP_MAX
    assert np.abs(heat - heat_fp32).mean() < INT8_HEATMAP_MEAN
    assert not np.allclose(heat, heat_fp32, atol=1e-3)  # really the integer model
    # Both int8 files keep the input convolution float (`--input-conv float`) and are
    # calibrated on the same stream: the same model up to the runtimes' rounding (2/256).
    assert np.abs(heat - heat_onnx_int8).max() < 2 / 256 + 1e-6
    assert np.abs(heat - heat_onnx_int8).mean() < INT8_HEATMAP_MEAN / 4


def test_the_thermal_tflite_files_were_converted_from_its_fp32_onnx():
    for precision in ("fp32", "int8"):
        tflite = shipped_model("detector", precision, "litert", "thermal")
        provenance = json.loads(tflite.with_name(tflite.name + ".json").read_text())
        assert provenance["sha256"] == sha256(tflite)
        source = shipped_model("detector", "fp32", variant="thermal")
        assert provenance["from"]["sha256"] == sha256(source), (
            f"the thermal model changed: run `emts export-litert detector --model thermal "
            f"--precision {precision} --out {tflite}` again"
        )


@needs_litert
def test_the_thermal_int8_tflite_follows_its_onnx_int8_at_512x384():
    """Both keep the stem and stage 1's first block float (`--float-convs 3`)."""
    from emts.front_end import MotionFrontEnd
    from emts.synth.still_clip import gusty_clip

    front = MotionFrontEnd(network_size=(512, 384))
    x = np.stack([front.step(f).channels for f in gusty_clip(6, seed=3).frames][2:])
    x = x.astype(np.float32)

    def run(precision, backend):
        from emts.stages.c_detect.detector import load_session

        path = shipped_model("detector", precision, backend, "thermal")
        session = load_session(path, "detector", 1)
        return session.run(None, {session.get_inputs()[0].name: x})[0]

    heat_fp32, heat_onnx_int8 = run("fp32", "onnxruntime"), run("int8", "onnxruntime")
    heat = run("int8", "litert")
    assert heat.shape == heat_fp32.shape == (4, 1, 48, 64)
    assert np.abs(heat - heat_fp32).mean() < INT8_HEATMAP_MEAN
    assert np.abs(heat - heat_onnx_int8).max() < INT8_HEATMAP_MAX
    assert np.abs(heat - heat_onnx_int8).mean() < INT8_HEATMAP_MEAN / 4


@needs_litert
def test_int8_detector_takes_float_input_and_quantizes_after_its_first_convolution():
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(str(shipped_model("detector", "int8", "litert")))
    (entry,) = interpreter.get_input_details()
    assert entry["dtype"] == np.float32
    assert all(d["dtype"] == np.int8 for d in interpreter.get_output_details())


@needs_litert
def test_int8_detector_finds_the_float_models_peaks(channels):
    """Decoded detections, not just tensors: the strongest peak stays where it was."""
    from emts.stages.c_detect.detector import Detector

    fp32 = Detector(shipped_model("detector", "fp32"), threads=1, threshold=0.05)
    int8 = Detector(shipped_model("detector", "int8", "litert"), threads=1, threshold=0.05)
    for x in channels[-3:]:
        a, b = fp32(x), int8(x)
        if not a:
            continue
        assert b, "the int8 model lost every peak of the float model"
        assert np.abs(a[0].box[:2] - b[0].box[:2]).max() <= 8.0  # within one grid cell


@needs_litert
def test_fp32_verifier_matches_onnxruntime(windows):
    (reference,) = _run("verifier", "fp32", "onnxruntime", windows)
    (converted,) = _run("verifier", "fp32", "litert", windows)
    np.testing.assert_allclose(converted, reference, atol=FP32_TOLERANCE, rtol=0)


@needs_litert
def test_int8_verifier_stays_near_the_onnx_int8(windows):
    """The int8 verifiers (both runtimes) round the descriptors to one per-tensor scale; the
    LiteRT one is held to the ONNX one (same recipe), and to a loose bound on P(human)."""
    (fp32,) = _run("verifier", "fp32", "onnxruntime", windows)
    (onnx_int8,) = _run("verifier", "int8", "onnxruntime", windows)
    (int8,) = _run("verifier", "int8", "litert", windows)

    def p(v):
        return 1 / (1 + np.exp(-v))

    assert np.abs(p(int8) - p(onnx_int8)).max() < 0.05
    assert np.abs(p(int8) - p(fp32)).max() < 0.5


@needs_litert
def test_detector_and_verifier_classes_run_tflite_files(channels, windows):
    from emts.stages.c_detect.detector import Detector
    from emts.stages.e_verify import Verifier

    detector = Detector(shipped_model("detector", "int8", "litert"), threads=2)
    assert isinstance(detector(channels[-1]), list)
    assert [r.shape for r in detector.raw(channels[:2])][0] == (2, 1, 24, 32)
    verifier = Verifier(shipped_model("verifier", "fp32", "litert"))
    probabilities = verifier.classify(windows)
    assert probabilities.shape == (8,) and ((probabilities >= 0) & (probabilities <= 1)).all()


@needs_litert
def test_a_verifier_file_is_refused_as_a_detector():
    from emts.stages.c_detect.detector import Detector

    with pytest.raises(BadInputError, match="not an EMTS detector"):
        Detector(shipped_model("verifier", "fp32", "litert"))


@needs_litert
def test_pipeline_default_runs_litert_int8():
    from emts.pipeline import Pipeline

    pipeline = Pipeline.default(threads=1, precision="int8", backend="litert", model="default")
    assert pipeline.detector.path == shipped_model("detector", "int8", "litert")
    assert pipeline.verifier.session.path.name == "verifier.int8.tflite"
    result = pipeline.step(np.full((512, 640), 128, np.uint8))
    assert result.index == 0


@needs_litert
def test_auto_measures_the_two_litert_files():
    assert resolve_precision("detector", "auto", threads=1, backend="litert") in ("fp32", "int8")


@needs_litert
def test_bench_and_detect_run_with_backend_litert(tmp_path, capsys):
    out = tmp_path / "bench.json"
    argv = ["bench", "--frames", "4", "--warmup", "2", "--threads", "1", "--json", str(out)]
    assert main([*argv, "--backend", "litert", "--precision", "int8"]) == 0
    report = json.loads(out.read_text())
    assert report["models"]["detector"] == "detector.int8.tflite"
    assert report["models"]["backend"] == "litert"


def test_shipped_files_by_backend():
    assert shipped_model("detector", "fp32", "litert").name == "detector.tflite"
    assert shipped_model("verifier", "int8", "litert").name == "verifier.int8.tflite"
    assert shipped_model("detector", "int8").name == "detector.int8.onnx"
    with pytest.raises(BadInputError, match="choose one of"):
        model_path("detector", "fp32", backend="tensorrt")


def test_backend_and_an_explicit_model_of_the_other_runtime_are_refused(tmp_path):
    with pytest.raises(BadInputError, match="drop --backend"):
        model_for("detector", tmp_path / "m.onnx", None, backend="litert")
    assert model_for("detector", tmp_path / "m.onnx", None, backend="onnxruntime") == (
        tmp_path / "m.onnx"
    )


@pytest.fixture
def no_litert(monkeypatch):
    """The LiteRT runtime as if it were not installed."""
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "--frames", "2", "--warmup", "1", "--backend", "litert"],
        ["detect", "0", "--jsonl", "{tmp}/d.jsonl", "--backend", "litert"],
        ["detect", "0", "--jsonl", "{tmp}/d.jsonl", "--model", "{tmp}/m.tflite"],
        ["track", "0", "--backend", "litert", "--precision", "int8"],
    ],
    ids=["bench", "detect", "detect-model", "track"],
)
def test_missing_runtime_is_one_line_and_exit_2(no_litert, tmp_path, capsys, argv):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "emts[litert]" in err[0], err


def test_pipeline_default_without_the_runtime_is_one_error(no_litert):
    from emts.pipeline import Pipeline

    with pytest.raises(BadInputError, match=r"emts\[litert\]"):
        Pipeline.default(threads=1, backend="litert")


@needs_litert
def test_an_unreadable_tflite_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a flatbuffer")
    argv = ["detect", "0", "--jsonl", str(tmp_path / "d.jsonl"), "--model", str(bad)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be loaded" in err[0], err


@needs_litert
def test_a_litert_model_run_at_twice_its_size_takes_its_coarse_pass_from_the_file_beside_it(
    tmp_path,
):
    import shutil

    from emts.stages.c_detect.detector import Detector
    from emts.stages.c_detect.stage import shipped_detector
    from emts.stages.c_detect.temporal import coarse_pass_for

    for precision in ("fp32", "int8"):
        fine = shipped_detector("thermal", precision, backend="litert")
        coarse = coarse_pass_for(fine)
        assert fine.network_size == (512, 384) and coarse.network_size == (256, 192)
        stem = fine.path.name.removesuffix(".tflite")
        assert coarse.path.name == f"{stem}.256x192.tflite"
    # without the file beside it: no coarse pass (the fixed size cannot be run at 256x192)
    alone = tmp_path / "detector.thermal.tflite"
    for suffix in ("", ".json"):
        shutil.copy(fine.path.with_name(f"detector.thermal.tflite{suffix}"), f"{alone}{suffix}")
    assert coarse_pass_for(Detector(alone)) is None
