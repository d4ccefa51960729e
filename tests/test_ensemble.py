"""emts ensemble: detectors averaged in one ONNX graph (tiny stand-in detectors, no torch)."""

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from emts.errors import BadInputError  # noqa: E402
from emts.stages.c_detect.detector import Detector  # noqa: E402
from emts.train.ensemble import merge_detectors  # noqa: E402


def _detector(path, gain: float, scales: dict | None = None, size: str = "256x192", reference=None):
    """A 'detector' whose heads are affine maps of the input's first channel, pooled by 8."""
    shape = ["batch", 3, "height", "width"]
    nodes = [
        helper.make_node("Slice", ["channels", "s0", "s1", "ax"], ["c0"]),
        helper.make_node("AveragePool", ["c0"], ["p"], kernel_shape=[8, 8], strides=[8, 8]),
        helper.make_node("Mul", ["p", "g"], ["h"]),
        helper.make_node("Sigmoid", ["h"], ["heatmap"]),
        helper.make_node("Concat", ["h", "h"], ["log_size"], axis=1),
        helper.make_node("Concat", ["p", "p"], ["offset"], axis=1),
        helper.make_node("Concat", ["h"] * 8, ["embedding"], axis=1),
    ]
    inits = [
        helper.make_tensor("s0", TensorProto.INT64, [1], [0]),
        helper.make_tensor("s1", TensorProto.INT64, [1], [1]),
        helper.make_tensor("ax", TensorProto.INT64, [1], [1]),
        helper.make_tensor("g", TensorProto.FLOAT, [], [gain]),
    ]
    outs = [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", c, "h8", "w8"])
        for n, c in (("heatmap", 1), ("log_size", 2), ("offset", 2), ("embedding", 8))
    ]
    graph = helper.make_graph(
        nodes,
        "d",
        [helper.make_tensor_value_info("channels", TensorProto.FLOAT, shape)],
        outs,
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    meta = {"emts_network_size": size}
    if scales:
        meta["emts_box_scale"] = json.dumps(scales)
    if reference:
        meta["emts_residual_reference"] = reference
    for key, value in meta.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(path))
    return path


def test_the_ensemble_averages_heatmap_sizes_and_offsets_and_keeps_the_first_embedding(tmp_path):
    a = _detector(tmp_path / "a.onnx", 1.0, {"512x384": 1.2, "384x288": 1.1})
    b = _detector(tmp_path / "b.onnx", 3.0, {"512x384": 1.5})
    meta = merge_detectors([a, b], tmp_path / "e.onnx")
    x = np.random.default_rng(0).random((3, 192, 256)).astype(np.float32)
    heads = [Detector(p, residual_reference=0.0).raw(x) for p in (a, b, tmp_path / "e.onnx")]
    for k in range(3):  # heatmap, log-size, offset: the mean
        np.testing.assert_allclose(heads[2][k], (heads[0][k] + heads[1][k]) / 2, atol=1e-6)
    np.testing.assert_allclose(heads[2][3], heads[0][3])  # the first member's embedding
    # box scales: the geometric mean where both record one, none where one does not
    assert json.loads(meta["emts_box_scale"]) == {
        "512x384": pytest.approx(np.sqrt(1.2 * 1.5), abs=1e-4)
    }
    assert [m["file"] for m in json.loads(meta["emts_ensemble"])] == [str(a), str(b)]
    assert Detector(tmp_path / "e.onnx", network_size=(512, 384)).box_scale == pytest.approx(
        1.3416, abs=1e-4
    )


def test_members_that_cannot_be_averaged_are_refused(tmp_path):
    a = _detector(tmp_path / "a.onnx", 1.0)
    with pytest.raises(BadInputError, match="at least two"):
        merge_detectors([a], tmp_path / "e.onnx")
    other = _detector(tmp_path / "o.onnx", 1.0, size="384x288")
    with pytest.raises(BadInputError, match="different sizes"):
        merge_detectors([a, other], tmp_path / "e.onnx")
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    with pytest.raises(BadInputError, match="not a readable ONNX"):
        merge_detectors([a, tmp_path / "bad.onnx"], tmp_path / "e.onnx")
    with pytest.raises(BadInputError, match="not found"):
        merge_detectors([a, tmp_path / "missing.onnx"], tmp_path / "e.onnx")


def test_members_fed_different_residual_levels_are_refused_and_a_shared_one_is_kept(tmp_path):
    a = _detector(tmp_path / "a.onnx", 1.0, reference="0.0072")
    b = _detector(tmp_path / "b.onnx", 2.0, reference="0.0072")
    merge_detectors([a, b], tmp_path / "e.onnx")
    assert Detector(tmp_path / "e.onnx").residual_reference == pytest.approx(0.0072)
    old = _detector(tmp_path / "old.onnx", 2.0)  # none recorded: trained on older channels
    with pytest.raises(BadInputError, match="different residual levels"):
        merge_detectors([a, old], tmp_path / "e2.onnx")
    warped = _detector(tmp_path / "w.onnx", 2.0, reference="0.0072")
    model = onnx.load(str(warped))
    model.metadata_props.add(key="emts_stage_b_warp", value="working")
    onnx.save(model, str(warped))
    with pytest.raises(BadInputError, match="different Stage B warps"):
        merge_detectors([a, warped], tmp_path / "e3.onnx")
    merge_detectors([warped, warped], tmp_path / "e4.onnx")
    assert Detector(tmp_path / "e4.onnx").stage_b_warp == "working"
