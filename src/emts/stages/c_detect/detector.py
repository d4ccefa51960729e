"""Stage C at run time: the micro-detector in onnxruntime, and its decoder (§3.4).

The graph maps the (1, 3, 192, 256) ``[L, R, D]`` stack to a heatmap (sigmoid applied), log-size,
offset and raw embedding at the 32x24 stride-8 grid. Decoding keeps local maxima of the heatmap (3x3
max-pool NMS) above the score threshold; box size is ``8 * exp(S)``, centre ``(cell + offset) * 8``;
embeddings are L2-normalized here, never inside the graph. Boxes come out in NETWORK pixels;
:class:`emts.geometry.FrameGeometry` maps them to the input."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import cv2
import numpy as np

from emts.config import NETWORK_SIZE
from emts.errors import BadInputError
from emts.geometry import box_iou
from emts.stages.b_channels import (
    RESIDUAL_REFERENCE,
    WARP_AT,
    default_reference_for,
    normalize_residual_level,
)

STRIDE = 8
DEFAULT_THRESHOLD = 0.3  # §6: tau_s
MAX_DETECTIONS = 100
# A peak is a heatmap cell at least as high as its eight neighbours (CenterNet's 3x3 max-pool)
# or, where its own heatmap value passes the threshold, as its four edge neighbours: two
# people whose centres fall in diagonally adjacent cells -- a pair walking together, 1-1.5
# cells apart -- each keep their peak (real thermal persons with another within 1.5 heights,
# half of HIT-UAV val's: recall 0.64 -> 0.71; docs/history.md "Two people standing close").
PEAK_KERNEL = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], np.uint8)
_SQUARE = np.ones((3, 3), np.uint8)
# ... unless its box overlaps a better 3x3 peak's box by more than this IoU: then it is a
# second peak of that one's person (two people side by side hardly overlap)
SECOND_PEAK_MAX_IOU = 0.2
DEFAULT_MODEL = "detector.onnx"


@dataclass(frozen=True)
class Detection:
    """One decoded detection in NETWORK pixels (256x192)."""

    box: np.ndarray  # [x, y, w, h], top-left edge
    score: float
    embedding: np.ndarray  # (8,) unit vector
    # The network's own heatmap at the peak on this frame, where ``score`` is another (Stage
    # C's temporal mode scores by a memory of the past frames: :mod:`emts.stages.c_detect.temporal`)
    raw_score: float | None = None

    @property
    def sighting(self) -> float:
        """This frame's evidence alone: ``raw_score`` where there is one, else ``score``."""
        return self.score if self.raw_score is None else self.raw_score


def default_model_path() -> Path:
    return Path(str(resources.files("emts") / "models" / DEFAULT_MODEL))


def session_options(threads: int):
    """onnxruntime options of every EMTS session: one intra-op pool of ``threads``, all graph
    optimizations, and the pool's spinning stopped at the end of each run.

    onnxruntime's worker threads spin-wait between runs by default. Ours run once a frame
    between Stages A-B and D-E, and a worker spinning on the second core slowed Stage A's
    OpenCV calls by ~25 % (``emts bench``, 2 threads: A 0.70 -> 0.53-0.58 ms, run to run).
    ``session.force_spinning_stop`` keeps the spinning inside a run (the detector's run time
    unchanged: 0.343 vs 0.356 ms alone) and ends it when the run returns;
    ``session.intra_op.allow_spinning = 0`` would slow the run itself (0.50 ms).
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.force_spinning_stop", "1")
    return options


def load_session(path: Path, kind: str, threads: int):
    """An onnxruntime CPU session for the ``kind`` model at ``path`` (one intra-op pool of
    ``threads``), or for a ``.tflite`` file a LiteRT interpreter behind the same interface
    (:class:`emts.litert.LiteRTSession`, XNNPACK on ``threads`` threads); a missing or
    unloadable file, or a missing LiteRT runtime, is bad input, said in one line."""
    if path.suffix == ".tflite":
        from emts.litert import LiteRTSession

        return LiteRTSession(path, kind, threads)
    import onnxruntime as ort

    if not path.is_file():
        raise BadInputError(f"{kind} model {path} not found")
    try:
        return ort.InferenceSession(
            str(path), session_options(threads), providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # onnxruntime raises its own exception types
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else "unknown"
        raise BadInputError(
            f"{kind} model {path} cannot be loaded ({reason}); pass a {kind} .onnx"
        ) from None


def load_graph(path: Path, kind: str, external_data: bool = True):
    """The ONNX graph (``onnx.ModelProto``) of the ``kind`` model at ``path``, for the tools
    that inspect or rewrite one (export, quantize, streaming); a missing, unreadable or empty
    file is bad input, said in one line (needs the ``onnx`` package: the train extra)."""
    import onnx

    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"{kind} model {path} not found")
    try:
        model = onnx.load(str(path), load_external_data=external_data)
    except Exception as error:  # protobuf's DecodeError, onnx's own types, OSError
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else "unknown"
        raise BadInputError(
            f"{kind} model {path} cannot be read as ONNX ({reason}); pass a {kind} .onnx"
        ) from None
    if not model.graph.input or not model.graph.output:
        raise BadInputError(f"{kind} model {path} holds no ONNX graph; pass a {kind} .onnx")
    check_weights(model, path, kind)
    return model


def check_weights(model, path: Path, kind: str) -> None:
    """Refuse an ONNX graph (``onnx.ModelProto``) with a NaN or infinite weight: a model
    rewritten from it (exported, quantized, merged) would score every frame NaN."""
    from onnx import TensorProto, numpy_helper

    for tensor in model.graph.initializer:
        if tensor.data_location == TensorProto.EXTERNAL and not tensor.raw_data:
            continue  # not loaded (external_data=False)
        values = numpy_helper.to_array(tensor)
        if np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all():
            raise BadInputError(
                f"{kind} model {path} has NaN or infinite weights ({tensor.name}); pass a "
                f"{kind} .onnx trained to the end"
            )


def decode(
    heatmap: np.ndarray,
    log_size: np.ndarray,
    offset: np.ndarray,
    embedding: np.ndarray,
    threshold: float = DEFAULT_THRESHOLD,
    max_detections: int = MAX_DETECTIONS,
    box_scale: float = 1.0,
    scores: np.ndarray | None = None,
) -> list[Detection]:
    """Decode one frame's head outputs (each (C, 24, 32)) into detections, best first; ``box_scale``
    multiplies every box's width and height about its centre. ``scores`` (24, 32): read each peak's
    score there instead of the heatmap (Stage C's temporal mode,
    :mod:`emts.stages.c_detect.temporal`), its heatmap value going to ``raw_score``; peaks are still
    the heatmap's local maxima (3x3), kept where either value reaches ``threshold``, and its second
    peaks (:data:`PEAK_KERNEL`), kept where the heatmap's own value does and their box overlaps no
    better 3x3 peak's by more than :data:`SECOND_PEAK_MAX_IOU`."""
    heat = heatmap[0].astype(np.float32)
    score = heat if scores is None else np.asarray(scores, np.float32)
    either = heat if scores is None else np.maximum(heat, score)
    peaks = (heat >= cv2.dilate(heat, _SQUARE)) & (either >= threshold)
    # a peak among its edge neighbours only (PEAK_KERNEL) must pass on the heatmap itself: the
    # network sees a second person there, not the score memory's trail of the first
    second = (heat >= cv2.dilate(heat, PEAK_KERNEL)) & (heat >= threshold) & ~peaks
    ys, xs = np.nonzero(peaks | second)
    order = np.argsort(-score[ys, xs], kind="stable")
    ys, xs = ys[order], xs[order]
    # every peak at once (one frame has up to max_detections; a loop per peak cost ~12 us each)
    # (np.minimum / np.maximum: np.clip's wrapper costs several times the two ufuncs here)
    w, h = box_scale * STRIDE * np.exp(np.minimum(np.maximum(log_size[:, ys, xs], -4.0), 5.0))
    cx, cy = (xs + offset[0, ys, xs]) * STRIDE, (ys + offset[1, ys, xs]) * STRIDE
    boxes = np.stack([cx - w / 2, cy - h / 2, w, h], axis=1)
    extra = second[ys, xs]
    if extra.any():  # (there is a 3x3 peak up every second peak's slope: ``others`` is not empty)
        # a second peak whose box overlaps a better 3x3 peak's is that one's person
        seconds, others = np.nonzero(extra)[0], np.nonzero(~extra)[0]
        overlap = box_iou(boxes[seconds].T[:, :, None], boxes[others]) > SECOND_PEAK_MAX_IOU
        better = others[None, :] < seconds[:, None]
        keep = np.ones(len(boxes), bool)
        keep[seconds[(overlap & better).any(axis=1)]] = False
        ys, xs, boxes = ys[keep], xs[keep], boxes[keep]
    ys, xs, boxes = ys[:max_detections], xs[:max_detections], boxes[:max_detections]
    vectors = embedding[:, ys, xs].T.astype(np.float32)
    # (np.linalg.norm's own computation for a vector axis, without its checks)
    norms = np.sqrt(np.add.reduce(vectors * vectors, axis=1, keepdims=True))
    vectors /= np.maximum(norms, 1e-12)
    values = score[ys, xs].tolist()
    raws = [None] * len(ys) if scores is None else heat[ys, xs].tolist()
    return [
        Detection(box, value, vector, raw)
        for box, value, vector, raw in zip(boxes, values, vectors, raws, strict=True)
    ]


DETECTOR_OUTPUTS = 4  # heatmap, log-size, offset, embedding


def _check_detector_graph(session, path: Path) -> None:
    """Refuse a model that is not a detector (e.g. the verifier) before it runs a frame."""
    inputs, outputs = session.get_inputs(), session.get_outputs()
    shape = list(inputs[0].shape) if len(inputs) == 1 else []
    channels_ok = len(shape) == 4 and (shape[1] == 3 or not isinstance(shape[1], int))
    if not channels_ok or len(outputs) != DETECTOR_OUTPUTS:
        raise BadInputError(
            f"{path} is not an EMTS detector (input {shape}, {len(outputs)} outputs; expected "
            f"one (batch, 3, H, W) input and {DETECTOR_OUTPUTS} outputs); pass a detector .onnx"
        )


# channels of each output (None: any number, at least one); every output is (batch, C, H/8, W/8)
DETECTOR_OUTPUT_CHANNELS = (("heatmap", 1), ("log-size", 2), ("offset", 2), ("embedding", None))


def _check_detector_outputs(session, path: Path, network_size: tuple[int, int]) -> None:
    """Refuse a model whose outputs the decoder cannot read, before it runs a frame: one dry
    run on a zero input of ``network_size`` (about a frame's network time) must give the
    four heads of :data:`DETECTOR_OUTPUT_CHANNELS`, each (1, C, H/8, W/8)."""
    width, height = network_size
    grid = (height // STRIDE, width // STRIDE)
    zeros = np.zeros((1, 3, height, width), np.float32)
    try:
        outputs = session.run(None, {session.get_inputs()[0].name: zeros})
    except Exception as error:  # onnxruntime / LiteRT raise their own exception types
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else "unknown"
        raise BadInputError(
            f"{path} is not a working EMTS detector: it fails on a {width}x{height} input "
            f"({reason}); pass a detector .onnx"
        ) from None
    shapes = [tuple(np.shape(output)) for output in outputs]
    heads_ok = len(shapes) == DETECTOR_OUTPUTS and all(
        len(shape) == 4
        and shape[0] == 1
        and shape[2:] == grid
        and (shape[1] == channels if channels is not None else shape[1] >= 1)
        for shape, (_, channels) in zip(shapes, DETECTOR_OUTPUT_CHANNELS, strict=True)
    )
    if heads_ok:
        check_output_values(outputs, path, f"on a {width}x{height} zero input", "detector")
        return
    expected = ", ".join(
        f"{name} (1, {'C' if channels is None else channels}, {grid[0]}, {grid[1]})"
        for name, channels in DETECTOR_OUTPUT_CHANNELS
    )
    got = ", ".join(str(shape) for shape in shapes)
    raise BadInputError(
        f"{path} is not an EMTS detector: on a {width}x{height} input its outputs are {got}; "
        f"expected {expected}; pass a detector .onnx"
    )


def check_output_values(outputs, path: Path, where: str, kind: str) -> None:
    """Refuse a model whose outputs ``where`` (its dry run) are not finite floating-point
    numbers: NaN or infinite weights, or an integer output, would give every frame a
    meaningless score that no later line explains."""
    for output in outputs:
        values = np.asarray(output)
        if not np.issubdtype(values.dtype, np.floating):
            why = f"of type {values.dtype}, not floating-point scores"
        elif not np.isfinite(values).all():
            why = "NaN or infinite (weights NaN or infinite?)"
        else:
            continue
        raise BadInputError(
            f"{path} is not a working EMTS {kind}: {where} its outputs are {why}; pass a "
            f"{kind} .onnx"
        )


SIZE_METADATA = "emts_network_size"  # ONNX metadata: the "WxH" a model was trained at
# ONNX metadata: the "WxH" to run an open-size model at when no size is asked for, where that
# is not the size it was trained at (``emts export --run-size``: the thermal model runs at
# 512x384, where it finds small people far better than at its training size)
RUN_SIZE_METADATA = "emts_run_size"
# ONNX metadata: JSON {"WxH": factor} -- at those network sizes the model's boxes are scaled
# by the factor (``emts export --fit-box-scale``: a network run larger than it was trained
# at draws its boxes too small)
BOX_SCALE_METADATA = "emts_box_scale"
# ONNX metadata: the residual level (R's 90th percentile) the model is fed at most
# (``emts export --residual-reference``): it follows the channels the model was trained on;
# a model without it gets RESIDUAL_REFERENCE, the level of the sets the earlier models learnt
RESIDUAL_REFERENCE_METADATA = "emts_residual_reference"
# ONNX metadata: Stage B's warp the model runs with (emts.config.ChannelConfig.warp_at;
# ``emts export --stage-b``); none: "network", the paper's
STAGE_B_METADATA = "emts_stage_b_warp"
# ONNX metadata: the frames R spans for this model (emts.config.ChannelConfig.residual_baseline;
# ``emts export --residual-baseline``); none: 1, eq. 2's R of the previous frame
RESIDUAL_BASELINE_METADATA = "emts_residual_baseline"
# ONNX metadata: "1" -- the model's heatmap is averaged with that of the left-right mirrored
# input, mirrored back (``emts export --mirror-average on``; :class:`Detector`); none: off
MIRROR_AVERAGE_METADATA = "emts_mirror_average"


def fixed_size(session) -> tuple[int, int] | None:
    """(w, h) of the model's input when the graph fixes it, else None (an open size)."""
    shape = list(session.get_inputs()[0].shape)
    height, width = shape[2], shape[3]
    if isinstance(width, int) and isinstance(height, int):
        return (width, height)
    return None


def model_metadata(session, key: str) -> str | None:
    """The model's ONNX metadata entry ``key``, if any (LiteRT sessions carry none)."""
    try:
        return session.get_modelmeta().custom_metadata_map.get(key) or None
    except AttributeError:  # a session without metadata
        return None


def recorded_size(session, key: str = SIZE_METADATA) -> tuple[int, int] | None:
    """A "WxH" size recorded by ``emts export`` in the model's metadata (by default the size
    it was trained at; ``RUN_SIZE_METADATA``: the size to run it at), if any."""
    text = model_metadata(session, key)
    if text is None:
        return None
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise BadInputError(
            f"the model's metadata {key} is {text!r}, not a size WxH; re-export it"
        ) from None
    return (width, height)


def box_scale_for(session, network_size: tuple[int, int]) -> float:
    """The box scale recorded for ``network_size`` in the model's metadata (1 if none)."""
    text = model_metadata(session, BOX_SCALE_METADATA)
    if text is None:
        return 1.0
    return float(json.loads(text).get("{}x{}".format(*network_size), 1.0))


def residual_reference_for(session, default: float = RESIDUAL_REFERENCE) -> float:
    """The residual reference recorded in the model's metadata (``default`` if none)."""
    text = model_metadata(session, RESIDUAL_REFERENCE_METADATA)
    return default if text is None else float(text)


def stage_b_warp_for(session, path: Path) -> str:
    """Stage B's warp recorded in the model's metadata ("network", the paper's, if none)."""
    warp = model_metadata(session, STAGE_B_METADATA) or "network"
    if warp not in WARP_AT:
        raise BadInputError(
            f"{path.name} asks for Stage B warp {warp!r}; expected one of {WARP_AT}"
        )
    return warp


def residual_baseline_for(session, path: Path) -> int:
    """The frames R spans for this model, from its metadata (1, eq. 2's, if none)."""
    text = model_metadata(session, RESIDUAL_BASELINE_METADATA)
    try:
        baseline = 1 if text is None else int(text)
    except ValueError:
        baseline = 0
    if baseline < 1:
        raise BadInputError(f"{path.name} asks for an R over {text!r} frames; expected 1 or more")
    return baseline


def mirror_average_for(session) -> bool:
    """Whether the model's metadata asks for mirror averaging (:class:`Detector`)."""
    return model_metadata(session, MIRROR_AVERAGE_METADATA) == "1"


def network_size_for(session, path: Path, requested=None) -> tuple[int, int]:
    """The NETWORK frame size to run a detector session at: ``requested`` (checked against a
    fixed input), else the size the graph fixes, else the size to run it at or the size it
    was trained at (metadata), else the paper's 256x192."""
    from emts.geometry import check_network_size, network_letterbox

    fixed = fixed_size(session)
    if requested is None:
        size = (
            fixed
            or recorded_size(session, RUN_SIZE_METADATA)
            or recorded_size(session)
            or NETWORK_SIZE
        )
        try:
            return check_network_size(size)
        except BadInputError as error:
            raise BadInputError(f"{path.name} runs at a size EMTS cannot use: {error}") from None
    requested = (int(requested[0]), int(requested[1]))
    if fixed is not None and requested != fixed:
        how = (
            "LiteRT models have a fixed size: use the .onnx"
            if path.suffix == ".tflite"
            else "re-export it with an open size (emts export --any-size)"
        )
        raise BadInputError(
            f"{path.name} takes {fixed[0]}x{fixed[1]} input only; to run it at "
            f"{requested[0]}x{requested[1]} {how}"
        )
    network_letterbox(requested)  # one line for a size the geometry cannot use
    return requested


class Detector:
    """onnxruntime session of the detector plus the decoder.

    Args:
        model: path of an exported ONNX model (default: the one shipped in the package).
        threads: intra-op threads of the session.
        threshold: score threshold tau_s of the decoder.
        residual_reference: frames whose residual level (90th percentile of R) exceeds this
            are scaled down to it before the network
            (:func:`emts.stages.b_channels.normalize_residual_level`); 0 feeds Stage B's channels as
            they are; None: the model's own (metadata ``emts_residual_reference``, else the
            level of the Stage B warp it runs with,
            :func:`emts.stages.b_channels.default_reference_for`: 0.0095 for the paper's, 0.0067 for
            ``"working"``).
        network_size: (w, h) of the NETWORK frame to run at (Stage B is built for it): a
            model with an open input size (the shipped one) runs at any size, e.g. 512x384
            for small people in thermal video; None: the model's own (fixed, or the size it
            was trained at, else the paper's 256x192).
        mirror_average: run every frame twice, as it is and mirrored left-right (one batch
            of two), and average the two heatmaps (the mirrored one mirrored back); boxes,
            offsets and embeddings are the unmirrored run's. The detector then scores a
            scene and its mirror image alike, at about twice the network's time (docs/history.md,
            "Mirrored samples"); None: the model's own (metadata ``emts_mirror_average``,
            ``emts export --mirror-average``; off where none, and for a LiteRT file, which
            carries no metadata: pass True).

    Example:
        >>> detector = Detector()                               # doctest: +SKIP
        >>> detections = detector(channels)                      # doctest: +SKIP
    """

    def __init__(
        self,
        model: str | Path | None = None,
        threads: int = 2,
        threshold: float = DEFAULT_THRESHOLD,
        residual_reference: float | None = None,
        network_size: tuple[int, int] | None = None,
        mirror_average: bool | None = None,
    ) -> None:
        path = Path(model) if model is not None else default_model_path()
        self.session = load_session(path, "detector", threads)
        _check_detector_graph(self.session, path)
        self.mirror_average = (
            mirror_average_for(self.session) if mirror_average is None else bool(mirror_average)
        )
        self.input_name = self.session.get_inputs()[0].name
        self.network_size = network_size_for(self.session, path, network_size)
        _check_detector_outputs(self.session, path, self.network_size)
        self.box_scale = box_scale_for(self.session, self.network_size)
        # Stage B's warp the model runs with (the pipeline builds Stage B for it)
        self.stage_b_warp = stage_b_warp_for(self.session, path)
        self.residual_baseline = residual_baseline_for(self.session, path)  # R over n frames
        self.threshold = threshold
        self.threads = threads
        self.residual_reference = (
            residual_reference_for(self.session, default_reference_for(self.stage_b_warp))
            if residual_reference is None
            else float(residual_reference)
        )
        self.path = path

    def raw(
        self, channels: np.ndarray, residual_reference: float | None = None
    ) -> list[np.ndarray]:
        """Head outputs for a (3, H, W) or (B, 3, H, W) float32 stack at :attr:`network_size`
        (the model's input, e.g. the paper's (3, 192, 256); residual level
        normalized first to ``residual_reference``, by default the detector's own)."""
        if (channels.shape[-1], channels.shape[-2]) != self.network_size:
            raise BadInputError(
                f"detector runs at {self.network_size[0]}x{self.network_size[1]}, got channels "
                f"of {channels.shape[-1]}x{channels.shape[-2]} (build Stage B for "
                "Detector.network_size)"
            )
        reference = self.residual_reference if residual_reference is None else residual_reference
        x = normalize_residual_level(channels, reference)  # one frame: no batch copy
        x = x[None] if x.ndim == 3 else x
        if not self.mirror_average:
            return self.session.run(None, {self.input_name: np.ascontiguousarray(x, np.float32)})
        # (at every network size the geometry accepts the letterbox pads both sides alike,
        # and the grid is whole stride-8 cells: the mirrored input's cell i is cell W/8 - 1 - i)
        count = len(x)
        both = np.concatenate([x, x[..., ::-1]]).astype(np.float32, copy=False)
        heat, *rest = self.session.run(None, {self.input_name: both})
        heat = 0.5 * (heat[:count] + heat[count:, ..., ::-1])
        return [heat, *(output[:count] for output in rest)]

    def __call__(
        self, channels: np.ndarray, residual_reference: float | None = None
    ) -> list[Detection]:
        heat, size, offset, embedding = self.raw(channels, residual_reference)
        return decode(
            heat[0], size[0], offset[0], embedding[0], self.threshold, box_scale=self.box_scale
        )
