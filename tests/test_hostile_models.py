"""Model files and training files that load but are wrong: one line and exit 2, never a
traceback mid-run or a silently meaningless result (the 2026-12 hostile-input review)."""

from __future__ import annotations

import re

import cv2
import numpy as np
import pytest

from emts.cli import main
from emts.errors import BadInputError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto  # noqa: E402
from onnx import helper as oh  # noqa: E402


def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


def _expect_refusal(capsys, argv, fragment):
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("emts: error:") and fragment in err[0], err[0]


def _save(path, inputs, outputs, nodes, initializers=()):
    graph = oh.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _detector_like(path, channels=(1, 2, 2, 8), stride=8, count=4):
    """A (batch, 3, H, W) -> heads graph: ``count`` heads of ``channels`` at ``stride``
    (average pool, then a 1x1 convolution)."""
    x = oh.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, "H", "W"])
    window = [stride, stride]
    pool = oh.make_node("AveragePool", ["x"], ["p"], kernel_shape=window, strides=window)
    nodes, weights, outputs = [pool], [], []
    for k in range(count):
        c = channels[k]
        w = np.full((c, 3, 1, 1), 0.1, np.float32)
        weights.append(onnx.numpy_helper.from_array(w, f"w{k}"))
        nodes.append(oh.make_node("Conv", ["p", f"w{k}"], [f"o{k}"]))
        outputs.append(oh.make_tensor_value_info(f"o{k}", TensorProto.FLOAT, None))
    return _save(path, [x], outputs, nodes, weights)


def _identity4(path):
    """The review's identity4.onnx: the right input, four outputs that are the input."""
    x = oh.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, "H", "W"])
    outs = [oh.make_tensor_value_info(f"o{k}", TensorProto.FLOAT, None) for k in range(4)]
    nodes = [oh.make_node("Identity", ["x"], [f"o{k}"]) for k in range(4)]
    return _save(path, [x], outs, nodes)


def _fails_on_a_frame(path):
    """The right signature, but a reshape that no frame fits: it fails when run."""
    x = oh.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, "H", "W"])
    shape = onnx.numpy_helper.from_array(np.array([1, 3, 7, 7], np.int64), "shape")
    outs = [oh.make_tensor_value_info(f"o{k}", TensorProto.FLOAT, None) for k in range(4)]
    nodes = [oh.make_node("Reshape", ["x", "shape"], ["r"])]
    nodes += [oh.make_node("Identity", ["r"], [f"o{k}"]) for k in range(4)]
    return _save(path, [x], outs, nodes, [shape])


def _verifier_like(path, reduce_axes, keepdims=0):
    """A (batch, 40, 16) -> ReduceMean(``reduce_axes``) graph (None: the identity)."""
    d = oh.make_tensor_value_info("d", TensorProto.FLOAT, ["b", 40, 16])
    y = oh.make_tensor_value_info("y", TensorProto.FLOAT, None)
    if reduce_axes is None:
        return _save(path, [d], [y], [oh.make_node("Identity", ["d"], ["y"])])
    node = oh.make_node("ReduceMean", ["d"], ["y"], axes=reduce_axes, keepdims=keepdims)
    return _save(path, [d], [y], [node])


BAD_DETECTORS = {
    "identity4": _identity4,
    "heatmap-of-two-channels": lambda p: _detector_like(p, channels=(2, 2, 2, 8)),
    "log-size-of-three-channels": lambda p: _detector_like(p, channels=(1, 3, 2, 8)),
    "stride-4-grid": lambda p: _detector_like(p, stride=4),
    "fails-when-run": _fails_on_a_frame,
}


@pytest.mark.parametrize("make", BAD_DETECTORS.values(), ids=BAD_DETECTORS.keys())
def test_a_detector_with_outputs_the_decoder_cannot_read_is_refused_at_load(tmp_path, make):
    from emts.stages.c_detect.detector import Detector

    path = make(tmp_path / "bad.onnx")
    with pytest.raises(BadInputError, match="is not a(n| working) EMTS detector"):
        Detector(path)


def test_a_detector_with_the_four_heads_at_stride_8_loads_and_decodes(tmp_path):
    from emts.stages.c_detect.detector import Detector

    detector = Detector(_detector_like(tmp_path / "good.onnx"), network_size=(320, 256))
    assert isinstance(detector(np.zeros((3, 256, 320), np.float32)), list)


BAD_VERIFIERS = {
    "identity": ([None], "(2, 40, 16)"),
    "one-score-per-descriptor": ([[2]], "(2, 40)"),
    "one-score-for-all-windows": ([[0, 1, 2]], "()"),
}


@pytest.mark.parametrize(("args", "shape"), BAD_VERIFIERS.values(), ids=BAD_VERIFIERS.keys())
def test_a_verifier_without_one_score_per_window_is_refused_at_load(tmp_path, args, shape):
    from emts.stages.e_verify import Verifier

    path = _verifier_like(tmp_path / "bad.onnx", *args)
    with pytest.raises(BadInputError, match=rf"is not an EMTS verifier.*{re.escape(shape)}"):
        Verifier(path)


@pytest.mark.parametrize("keepdims", [0, 1])
def test_a_verifier_with_one_score_per_window_loads(tmp_path, keepdims):
    from emts.stages.e_verify import Verifier

    verifier = Verifier(_verifier_like(tmp_path / "good.onnx", [1, 2], keepdims))
    assert verifier.classify(np.zeros((3, 40, 16), np.float32)).shape == (3,)


@pytest.fixture(scope="module")
def small_video(tmp_path_factory):
    path = tmp_path_factory.mktemp("video") / "in.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25, (320, 256))
    rng = np.random.default_rng(0)
    for _ in range(4):
        writer.write(rng.integers(0, 255, (256, 320, 3), np.uint8))
    writer.release()
    return path


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["track", "{v}", "--model", "{d}", "--jsonl", "{o}"], "is not an EMTS detector"),
        (["detect", "{v}", "--model", "{d}", "--jsonl", "{o}"], "is not an EMTS detector"),
        (["bench", "--frames", "2", "--warmup", "0", "--model", "{d}"], "is not an EMTS detector"),
        (["channels", "{v}", "--model", "{d}", "--no-video", "--jsonl", "{o}"], "EMTS detector"),
        (["track", "{v}", "--verifier", "{w}", "--jsonl", "{o}"], "is not an EMTS verifier"),
    ],
    ids=["track", "detect", "bench", "channels", "track-verifier"],
)
def test_every_command_refuses_a_wrong_model_in_one_line(
    tmp_path, capsys, small_video, argv, fragment
):
    subs = {
        "v": str(small_video),
        "d": str(_identity4(tmp_path / "identity4.onnx")),
        "w": str(_verifier_like(tmp_path / "verif_like.onnx", None)),
        "o": str(tmp_path / "x.jsonl"),
    }
    _expect_refusal(capsys, [a.format(**subs) for a in argv], fragment)
