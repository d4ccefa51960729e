"""int8 deployment (issue 11): static quantization, the calibration estimators, no in-graph L2
normalization, precision selection, and the peer-detector timing. Calibration sets here are
built in the test (a few synthetic frames); data/ is never needed."""

from __future__ import annotations

import json
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from emts import precision as precision_module
from emts.cli import main
from emts.errors import BadInputError
from emts.precision import model_for, model_path, resolve_precision, shipped_model
from emts.train.quantize import (
    Calibration,
    detector_calibration,
    input_convolutions,
    l2_normalization_nodes,
    quantize,
)

FP32 = shipped_model("detector", "fp32")
INT8 = shipped_model("detector", "int8")


def _channels(rng: np.random.Generator, count: int, strong: int = 0) -> np.ndarray:
    """(count, 3, 192, 256) [L, R, D] stacks: textured L, faint motion; the last ``strong``
    frames carry a bright moving blob (a heavy tail for the activation ranges)."""
    frames = np.zeros((count, 3, 192, 256), np.float32)
    frames[:, 0] = rng.uniform(0.3, 0.6, (count, 192, 256))
    frames[:, 2] = rng.normal(0, 0.01, (count, 192, 256))
    for k in range(count - strong, count):
        frames[k, 0, 80:110, 100:112] = 0.95
        frames[k, 2, 80:110, 100:112] = 0.5
    frames[:, 1] = np.abs(frames[:, 2])
    return frames


@pytest.fixture(scope="module")
def calibration() -> Calibration:
    return Calibration(_channels(np.random.default_rng(0), 8, strong=1), 8, "test frames")


@pytest.fixture(scope="module")
def quantized(tmp_path_factory, calibration):
    folder = tmp_path_factory.mktemp("int8")
    return {
        method: quantize(FP32, folder / f"{method}.onnx", calibration, method)
        for method in ("minmax", "moving-average")
    }


def _initializers(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def test_int8_detector_has_per_channel_symmetric_int8_weights_and_uint8_activations(quantized):
    model = onnx.load(str(quantized["minmax"]))
    values = _initializers(model)
    dequantized = {n.output[0]: n for n in model.graph.node if n.op_type == "DequantizeLinear"}
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    assert len(convs) == 21
    for conv in convs:
        weight = dequantized[conv.input[1]]  # every Conv weight arrives through a DequantizeLinear
        q, scale, zero = (values[name] for name in weight.input)
        assert q.dtype == np.int8 and zero.dtype == np.int8 and not zero.any()  # symmetric
        assert scale.shape == (q.shape[0],)  # one scale per output channel
    activations = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    assert activations
    for node in activations:
        scale, zero = values[node.input[1]], values[node.input[2]]
        assert zero.dtype == np.uint8 and scale.size == 1  # per tensor, asymmetric uint8


def test_int8_detector_follows_the_float_model(quantized, calibration):
    import onnxruntime as ort

    x = calibration.samples[-1:]
    heat_fp32 = ort.InferenceSession(str(FP32)).run(None, {"channels": x})[0]
    heat_int8 = ort.InferenceSession(str(quantized["minmax"])).run(None, {"channels": x})[0]
    assert np.abs(heat_fp32 - heat_int8).max() < 0.1
    assert not np.allclose(heat_fp32, heat_int8)  # it is really a different (integer) model


def test_moving_average_ranges_are_narrower_than_min_max_on_a_heavy_tail(quantized):
    """The paper's failure mode: averaging per-frame extremes clips the rare large values."""

    def scales(path):
        model = onnx.load(str(path))
        values = _initializers(model)
        return {
            n.input[0]: float(values[n.input[1]])
            for n in model.graph.node
            if n.op_type == "QuantizeLinear"
        }

    minmax, moving = scales(quantized["minmax"]), scales(quantized["moving-average"])
    assert minmax.keys() == moving.keys()
    assert all(moving[k] <= minmax[k] * (1 + 1e-6) for k in minmax)
    assert min(moving[k] / minmax[k] for k in minmax) < 0.7


def test_int8_detector_runs_on_an_all_zero_frame(quantized):
    import onnxruntime as ort

    outputs = ort.InferenceSession(str(quantized["minmax"])).run(
        None, {"channels": np.zeros((1, 3, 192, 256), np.float32)}
    )
    assert all(np.isfinite(o).all() for o in outputs)


@pytest.mark.parametrize(
    "path",
    [shipped_model(kind, p) for kind in ("detector", "verifier") for p in ("fp32", "int8")],
    ids=lambda p: p.name,
)
def test_shipped_graphs_hold_no_l2_normalization(path):
    assert l2_normalization_nodes(onnx.load(str(path))) == []


def _graph(nodes, initializers=()) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_l2_check_finds_lp_normalization_and_the_div_by_root_sum_of_squares():
    lp = _graph([helper.make_node("LpNormalization", ["x"], ["y"], axis=1, p=2, name="norm")])
    assert l2_normalization_nodes(lp) == ["norm"]
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    eps = numpy_helper.from_array(np.array(1e-12, np.float32), "eps")
    manual = _graph(
        [
            helper.make_node("Mul", ["x", "x"], ["sq"]),
            helper.make_node("ReduceSum", ["sq", "axes"], ["sum"], keepdims=1),
            helper.make_node("Sqrt", ["sum"], ["root"]),
            helper.make_node("Max", ["root", "eps"], ["guarded"]),
            helper.make_node("Div", ["x", "guarded"], ["y"], name="div"),
        ],
        [axes, eps],
    )
    assert l2_normalization_nodes(manual) == ["div"]
    plain = _graph([helper.make_node("Relu", ["x"], ["y"])])
    assert l2_normalization_nodes(plain) == []


def test_quantize_refuses_a_graph_that_normalizes_inside(tmp_path, calibration):
    path = tmp_path / "lp.onnx"
    onnx.save(_graph([helper.make_node("LpNormalization", ["x"], ["y"], axis=1, p=2)]), path)
    with pytest.raises(BadInputError, match="normalizes inside the graph"):
        quantize(path, tmp_path / "out.onnx", calibration)


def test_missing_calibration_set_is_one_clear_error(tmp_path):
    sets = {"tier1": tmp_path / "tier1", "negatives": tmp_path / "negatives"}
    with pytest.raises(BadInputError, match="make data"):
        detector_calibration(sets, clips=2, frames=2)


@pytest.mark.parametrize(
    ("kind", "variant"), [("detector", ""), ("verifier", ""), ("detector", "thermal")]
)
def test_shipped_int8_model_was_made_from_the_shipped_fp32_model(kind, variant):
    """A new fp32 model without a new int8 one would ship two different detectors."""
    from emts.train.quantize import sha256

    int8 = shipped_model(kind, "int8", variant=variant)
    provenance = json.loads(int8.with_suffix(".json").read_text())
    assert provenance["sha256"] == sha256(int8)
    assert provenance["from"]["sha256"] == sha256(shipped_model(kind, "fp32", variant=variant)), (
        f"the shipped {kind} changed: run `emts quantize {kind} --out {int8}` again"
    )


# --- precision selection (runtime, onnxruntime only) ---


def test_fp32_and_int8_pick_the_shipped_files():
    assert model_path("detector", "fp32") == FP32
    assert model_path("detector", "int8") == INT8
    assert model_path("verifier", "int8").name == "verifier.int8.onnx"
    with pytest.raises(BadInputError, match="choose one of"):
        model_path("detector", "int4")


def test_an_explicit_model_file_is_run_as_given_and_refuses_another_precision(tmp_path):
    assert model_for("detector", tmp_path / "m.onnx", None) == tmp_path / "m.onnx"
    assert model_for("detector", None, "int8") == INT8
    with pytest.raises(BadInputError, match="drop --precision"):
        model_for("detector", tmp_path / "m.onnx", "int8")


class _Session:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def get_inputs(self):
        return [type("Input", (), {"name": "x"})()]

    def run(self, _outputs, _feed):
        time.sleep(self.seconds)


@pytest.mark.parametrize(("int8_seconds", "expected"), [(0.0, "int8"), (0.002, "fp32")])
def test_auto_picks_the_precision_that_runs_faster(monkeypatch, int8_seconds, expected):
    import emts.stages.c_detect.detector

    def fake(path, kind, threads):
        return _Session(int8_seconds if "int8" in path.name else 0.001)

    monkeypatch.setattr(emts.stages.c_detect.detector, "load_session", fake)
    precision_module._measured_choice.cache_clear()
    try:
        assert resolve_precision("detector", "auto", threads=1) == expected
    finally:
        precision_module._measured_choice.cache_clear()


def test_pipeline_default_runs_the_int8_models():
    from emts.pipeline import Pipeline

    pipeline = Pipeline.default(threads=1, precision="int8", model="default")
    assert pipeline.detector.path == INT8
    result = pipeline.step(np.full((512, 640), 128, np.uint8))
    assert result.index == 0


def test_detect_with_precision_and_model_is_refused_in_one_line(tmp_path, capsys):
    argv = ["detect", "0", "--jsonl", str(tmp_path / "o.jsonl")]
    assert main([*argv, "--precision", "int8", "--model", str(FP32)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "drop --precision" in err[0], err


# --- the peer ratio (emts bench --peer-yolo) ---


def _peer_model(tmp_path):
    weight = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    x = helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 64, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 62, 62])
    graph = helper.make_graph(
        [helper.make_node("Conv", ["images", "w"], ["y"])], "peer", [x], [y], [weight]
    )
    peer = tmp_path / "peer.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), peer)
    return peer


def test_peer_is_timed_interleaved_and_reported_as_a_ratio(tmp_path, capsys):
    peer = _peer_model(tmp_path)
    out = tmp_path / "peer.json"
    argv = ["bench", "--peer-yolo", str(peer), "--frames", "4", "--warmup", "1"]
    assert main([*argv, "--rounds", "2", "--threads", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["peer_input"] == [1, 3, 64, 64] and len(report["rounds"]) == 2
    assert all(r["emts_ms"] > 0 and r["peer_ms"] > 0 for r in report["rounds"])
    ratios = sorted(r["ratio"] for r in report["rounds"])
    assert report["ratio_median"] == pytest.approx((ratios[0] + ratios[1]) / 2, rel=1e-3)
    assert "ratio peer / EMTS" in capsys.readouterr().out
    assert report["models"]["stage B warp"] == "network"
    assert main([*argv, "--threads", "1", "--stage-b", "working", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["models"]["stage B warp"] == "working"


def test_peer_timing_in_blocks_is_reported_as_such_and_refuses_a_block_under_1(tmp_path):
    from emts.apps.peer import format_peer, run_peer

    peer = _peer_model(tmp_path)
    report = run_peer(peer, frames=5, warmup=1, threads=1, rounds=1, block=3)
    assert report["block"] == 3 and len(report["rounds"]) == 1
    assert report["rounds"][0]["emts_ms"] > 0 and report["rounds"][0]["peer_ms"] > 0
    assert "in blocks of 3" in format_peer(report)
    with pytest.raises(BadInputError, match="block"):
        run_peer(peer, frames=2, block=0)


def test_the_input_convolution_can_stay_float_so_the_input_is_never_quantized(
    tmp_path, calibration
):
    def input_feeds(path):
        model = onnx.load(str(path))
        source = model.graph.input[0].name
        return sorted(n.op_type for n in model.graph.node if source in n.input)

    assert input_convolutions(onnx.load(str(FP32))) == ["/model/stem/stem.0/Conv"]
    kept = quantize(FP32, tmp_path / "kept.onnx", calibration, float_input_conv=True)
    full = quantize(FP32, tmp_path / "full.onnx", calibration)
    assert input_feeds(kept) == ["Conv"]  # the stem reads the float input itself
    assert input_feeds(full) == ["QuantizeLinear"]
    kept_model = onnx.load(str(kept))
    # ... and the rest of the graph is still integer: 20 of the 21 convolutions quantized
    dequantized = {n.output[0] for n in kept_model.graph.node if n.op_type == "DequantizeLinear"}
    convs = [n for n in kept_model.graph.node if n.op_type == "Conv"]
    assert sum(c.input[1] in dequantized for c in convs) == 20


def test_the_shipped_int8_thermal_detector_keeps_its_first_three_convolutions_float():
    """Its stem's output quantized cost 0.018 AP@0.25 on HIT-UAV; with stage 1's first block
    float too (`--float-convs 3`) the bench's AP@0.25 stays within 0.008 of float (0.007;
    two float: 0.010)."""
    fp32 = onnx.load(str(shipped_model("detector", "fp32", variant="thermal")))
    assert input_convolutions(fp32, 3)[-1] == "/model/stage1.0/stage1.0.3/Conv"
    assert input_convolutions(fp32, 0) == []
    int8 = onnx.load(str(shipped_model("detector", "int8", variant="thermal")))
    dequantized = {n.output[0] for n in int8.graph.node if n.op_type == "DequantizeLinear"}
    convs = [n for n in int8.graph.node if n.op_type == "Conv"]
    assert [c.input[1] in dequantized for c in convs] == [False] * 3 + [True] * 18
    from emts.stages.c_detect.detector import Detector

    assert Detector(shipped_model("detector", "int8", variant="thermal")).network_size == (512, 384)


def test_the_shipped_int8_verifier_keeps_its_input_stage_float():
    """One uint8 scale over the 40 raw descriptors rounds their small features away (12 % of
    held-out accept/reject decisions flipped); standardization and the first convolution
    stay float, the rest is integer."""
    fp32 = onnx.load(str(shipped_model("verifier", "fp32")))
    stage = input_convolutions(fp32)
    assert [n.op_type for n in fp32.graph.node if n.name in stage] == ["Sub", "Div", "Conv"]
    int8 = onnx.load(str(shipped_model("verifier", "int8")))
    source = int8.graph.input[0].name
    assert [n.op_type for n in int8.graph.node if source in n.input] == ["Sub"]
    dequantized = {n.output[0] for n in int8.graph.node if n.op_type == "DequantizeLinear"}
    convs = [n for n in int8.graph.node if n.op_type == "Conv"]
    assert [c.input[1] in dequantized for c in convs] == [False, True]


def test_the_int8_verifier_decides_as_the_float_one():
    from emts.stages.e_verify import Verifier

    # windows with the training data's per-descriptor scales (the graph's standardization)
    model = onnx.load(str(shipped_model("verifier", "fp32")))
    stats = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    mean, std = stats["mean"], stats["std"]
    noise = np.random.default_rng(4).normal(0, 1, (256, 40, 16)).astype(np.float32)
    windows = np.maximum(mean + std * noise, 0).astype(np.float32)
    p32 = Verifier(shipped_model("verifier", "fp32")).classify(windows)
    p8 = Verifier(shipped_model("verifier", "int8")).classify(windows)
    assert np.abs(p8 - p32).max() < 0.1
    assert np.mean((p8 >= 0.35) != (p32 >= 0.35)) <= 0.03
