"""Model files and training files that load but are wrong: one line and exit 2, never a
traceback mid-run or a silently meaningless result (the 2026-12 hostile-input review)."""

from __future__ import annotations

import json
import re

import cv2
import numpy as np
import pytest

from emts.errors import BadInputError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto  # noqa: E402
from onnx import helper as oh  # noqa: E402

from cli_checks import expect_refusal  # noqa: E402


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
    expect_refusal(capsys, [a.format(**subs) for a in argv], fragment)


# -- D: corrupt or unreadable files in the train, eval and synth tools ---------------------------
def _clip_set(folder, frames=3, clips=1):
    """A complete clip set of ``clips`` clips of ``frames`` random 640x512 frames."""
    from emts.synth.store import write_clip

    rng = np.random.default_rng(1)
    for index in range(clips):
        images = [rng.integers(0, 255, (512, 640), np.uint8) for _ in range(frames)]
        jpegs = [cv2.imencode(".jpg", image)[1].tobytes() for image in images]
        decoded = [cv2.imdecode(np.frombuffer(j, np.uint8), cv2.IMREAD_GRAYSCALE) for j in jpegs]
        labels = {
            "kind": "tier1",
            "frames": [{"frame": t, "persons": [], "distractors": []} for t in range(frames)],
            "plate": "random",
        }
        write_clip(folder, index, jpegs, decoded, labels)
    manifest = {"format_version": 1, "set": "bench", "kind": "tier1", "split": "heldout"}
    manifest |= {"clips": clips, "frames_per_clip": frames, "seed": 0, "complete": True}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def _truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _flip_middle(path):
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    path.write_bytes(bytes(data))


def _without_difference(path):
    with np.load(path) as npz:
        kept = {k: npz[k] for k in npz.files if k != "difference"}
    np.savez(path.with_suffix(""), **kept)  # (np.savez adds the .npz)


CLIP_DAMAGE = {
    "truncated-half": _truncate,
    "truncated-to-nothing": lambda p: _truncate(p, 0.0),
    "bytes-flipped-mid-file": _flip_middle,
    "text-file": lambda p: p.write_text("not a clip\n"),
    "no-difference-array": _without_difference,
    "labels-not-json": lambda p: p.with_suffix(".json").write_bytes(b"\xff\x00{"),
}


@pytest.mark.parametrize("damage", CLIP_DAMAGE.values(), ids=CLIP_DAMAGE.keys())
def test_a_damaged_clip_file_is_one_line_naming_it(tmp_path, damage):
    from emts.synth.store import ClipSet

    folder = _clip_set(tmp_path / "set")
    damage(folder / "clips" / "000000.npz")
    with pytest.raises(BadInputError, match=r"000000\.(npz|json): a corrupt or truncated clip"):
        ClipSet(folder).load(0)


def test_an_intact_clip_set_loads(tmp_path):
    from emts.synth.store import ClipSet

    clip = ClipSet(_clip_set(tmp_path / "set")).load(0)
    assert clip.channels.shape == (3, 3, 192, 256) and len(clip.frames) == 3


def _junk(path, content=b"junk\n"):
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["quantize", "detector", "--out", "q.onnx", "--model", "{text}", "SETS"], "as ONNX"),
        (["quantize", "detector", "--out", "q.onnx", "--model", "{empty}", "SETS"], "no ONNX"),
        (["export", "{textpt}", "--out", "e.onnx"], "is not a readable trained detector"),
        (["export", "{empty}", "--out", "e.onnx"], "is not a readable trained detector"),
        (["export", "{dict}", "--out", "e.onnx"], "does not hold a trained detector"),
        (["eval", "detect", "--bench", "{cut}", "--out", "ev"], "corrupt or truncated clip"),
        (["synth", "preview", "{cut}", "--out", "s.png"], "corrupt or truncated clip"),
        (["eval", "track", "{video}", "--gt", "{binary}", "--out", "ev"], "not a text file"),
    ],
    ids=[
        "quantize-text-model",
        "quantize-empty-model",
        "export-text-model-pt",
        "export-empty-model-pt",
        "export-checkpoint-as-model-pt",
        "eval-detect-truncated-clip",
        "synth-preview-truncated-clip",
        "eval-track-binary-gt",
    ],
)
def test_a_corrupt_file_given_to_a_tool_is_one_line_and_exit_2(
    tmp_path, monkeypatch, capsys, small_video, argv, fragment
):
    torch = pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    cut = _clip_set(tmp_path / "cut")
    _truncate(cut / "clips" / "000000.npz")
    torch.save({"model": {}, "optimizer": {}, "state": {}}, tmp_path / "checkpoint.pt")
    subs = {
        "text": str(_junk(tmp_path / "text.onnx")),
        "textpt": str(_junk(tmp_path / "model.pt")),
        "empty": str(_junk(tmp_path / "empty.pt", b"")),
        "dict": str(tmp_path / "checkpoint.pt"),
        "cut": str(cut),
        "video": str(small_video),
        "binary": str(_junk(tmp_path / "gt.txt", b"\x00\xff\xfe\x80binary\x00")),
    }
    sets = ["--tier1", str(_clip_set(tmp_path / "ok")), "--negatives", str(tmp_path / "ok")]
    argv = [part for a in argv for part in (sets if a == "SETS" else [a.format(**subs)])]
    expect_refusal(capsys, argv, fragment)
    assert not (tmp_path / "q.onnx").exists() and not (tmp_path / "e.onnx").exists()


@pytest.mark.parametrize(
    "content",
    [b"", b"junk\n", b"PK\x03\x04 cut mid-write"],
    ids=["empty", "text", "cut-zip"],
)
def test_a_checkpoint_that_cannot_resume_is_kept_and_said_in_one_line(tmp_path, content):
    torch = pytest.importorskip("torch")
    from emts.train.loop import CHECKPOINT, TrainConfig, run_phases
    from emts.train.model import DetectorConfig, MicroDetector

    model = MicroDetector(DetectorConfig())
    optimizer = torch.optim.AdamW(model.parameters())
    checkpoint = tmp_path / CHECKPOINT
    checkpoint.write_bytes(content)
    with pytest.raises(BadInputError, match="delete it to start this run over"):
        run_phases(model, optimizer, {}, [], TrainConfig(), tmp_path)
    assert checkpoint.read_bytes() == content  # not deleted, not overwritten


# -- K: a calibration stream that cannot be drawn --------------------------------------------------
@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        (["detector", "--clips", "0"], "--clips 0"),
        (["verifier", "--clips", "-2"], "--clips -2"),
        (["detector", "--frames", "0"], "--frames 0"),
        (["detector", "--seed", "-1"], "--seed -1"),
    ],
)
def test_quantize_refuses_an_empty_calibration_stream_in_one_line(
    tmp_path, capsys, options, fragment
):
    pytest.importorskip("torch")
    sets = str(_clip_set(tmp_path / "set"))
    kind, *rest = options
    out = tmp_path / "q.onnx"
    argv = ["quantize", kind, "--out", str(out), "--tier1", sets, "--negatives", sets, *rest]
    expect_refusal(capsys, argv, fragment)
    assert not out.exists()
