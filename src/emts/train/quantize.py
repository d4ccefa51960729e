"""Static int8 quantization of the shipped ONNX models (§5, `sec:quant`; issue 11 part 2).

onnxruntime static quantization in QDQ format: weights int8, per channel, symmetric;
activations uint8, per tensor, asymmetric (the recipe of `sec:quant`). The activation ranges
come from a *calibration stream* drawn from the training curriculum:

* detector: ``clips`` clips (default 100) x ``frames`` consecutive frames (default 10) of the
  Tier-1 and hard-negative sets (drawn 5:3, the phase-2 mixture's Tier-1 : negative ratio),
  channels exactly as the package's Stage A/B made them (:class:`emts.synth.store.ClipSet`);
* verifier: 16-frame descriptor windows of the same clips' labelled tracks (persons,
  animals, vehicles) and of ground-fixed boxes on person-free clips (as in training).

Two range estimators (``calibration``):

* ``minmax`` (default): the smallest and largest value of each tensor over the whole stream.
* ``moving-average``: onnxruntime's MinMax calibrator with ``moving_average=True``, fed one
  clip (``frames`` frames) per step: per step the mean over its frames of each frame's
  min / max, merged across steps by an exponential moving average with smoothing 0.95
  (``CalibMovingAverageConstant`` 0.05), the library recipe `sec:minmax` warns about; kept
  to reproduce that failure, not to be shipped.

The graph must hold no L2 normalization (`sec:stateful`: the norm of an all-zero embedding quantizes
to zero and integer inference divides by it); the detector's embedding is normalized in the float
decoder (:func:`emts.stages.c_detect.detector.decode`), and quantization refuses a graph that
normalizes inside."""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)

from emts.config import NETWORK_SIZE, ChannelConfig
from emts.errors import BadInputError
from emts.stages.b_channels import RESIDUAL_REFERENCE, normalize_residual_level
from emts.stages.c_detect.detector import load_graph

CALIBRATIONS = ("minmax", "moving-average")
DEFAULT_CLIPS = 100  # sec:stateful: 100 clips of 10 consecutive frames
DEFAULT_FRAMES = 10
MOVING_AVERAGE_CONSTANT = 0.05  # sec:minmax: the library default's smoothing factor 0.95
SET_WEIGHTS = {"tier1": 5, "negatives": 3}  # phase 2's 0.5 : 0.3 Tier-1 : negatives
L2_NORMALIZATION_OPS = {"LpNormalization", "ReduceL2"}


@dataclass(frozen=True)
class Calibration:
    """A calibration stream: model inputs in the order they are fed, ``step`` per EMA step."""

    samples: np.ndarray  # (N, ...) float32, one model input each
    step: int  # samples per moving-average step (one clip)
    source: str  # what the stream is, for the provenance file
    # further graph inputs fed with each sample (a stateful graph's caches): name -> (N, ...)
    extra: dict[str, np.ndarray] | None = None


class _Reader(CalibrationDataReader):
    """Feeds one sample at a time; supports onnxruntime's strided (per-step) collection."""

    def __init__(
        self, input_name: str, samples: np.ndarray, extra: dict[str, np.ndarray] | None = None
    ) -> None:
        self.input_name = input_name
        self.samples = samples
        self.extra = extra or {}
        self.set_range(0, len(samples))

    def __len__(self) -> int:
        return len(self.samples)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._next, self._end = start_index, end_index

    def get_next(self):
        if self._next >= self._end:
            return None
        feed = {self.input_name: self.samples[self._next][None].astype(np.float32)}
        for name, values in self.extra.items():
            feed[name] = values[self._next][None].astype(np.float32)
        self._next += 1
        return feed


def l2_normalization_nodes(model: onnx.ModelProto) -> list[str]:
    """Names of nodes that L2-normalize inside ``model``: ``LpNormalization`` / ``ReduceL2``,
    or a division by the square root of a sum of squares (``Div(x, Sqrt(ReduceSum(x*x)))``,
    also with a ``Clip``/``Max`` epsilon guard between them, as exporters write it)."""
    producers = {out: node for node in model.graph.node for out in node.output}

    def upstream(name: str, depth: int = 4) -> set[str]:
        node = producers.get(name)
        if node is None or depth == 0:
            return set()
        found = {node.op_type}
        for source in node.input:
            found |= upstream(source, depth - 1)
        return found

    hits = []
    for node in model.graph.node:
        if node.op_type in L2_NORMALIZATION_OPS:
            hits.append(node.name or node.op_type)
        elif node.op_type == "Div" and len(node.input) == 2:
            ops = upstream(node.input[1])
            if "Sqrt" in ops and ({"ReduceSum", "ReduceSumSquare"} & ops):
                hits.append(node.name or "Div")
    return hits


def _check_stream(clips: int, seed: int, frames: int = 1) -> None:
    """One line for a calibration stream that cannot be drawn (the command's options)."""
    if clips < 1:
        raise BadInputError(f"--clips {clips}: calibration needs at least 1 clip")
    if frames < 1:
        raise BadInputError(f"--frames {frames}: calibration needs at least 1 frame per clip")
    if seed < 0:
        raise BadInputError(f"--seed {seed}: expected 0 or more")


def _choose_clips(
    sets: dict[str, str | Path], clips: int, seed: int
) -> list[tuple[str, object, int]]:
    """(set name, ClipSet, clip index) for ``clips`` clips drawn by SET_WEIGHTS, no repeats."""
    from emts.synth.store import ClipSet

    opened = {}
    for name, folder in sets.items():
        if not (Path(folder) / "manifest.json").is_file():
            raise BadInputError(
                f"calibration set {folder} not found (no manifest.json): generate the curriculum "
                f"with `make data` (or `emts synth {name} --out {folder}`), or point "
                f"--{name} at it"
            )
        opened[name] = ClipSet(folder)
        if len(opened[name]) == 0:
            raise BadInputError(f"calibration set {folder} has no clips")
    rng = np.random.default_rng(seed)
    names = list(opened)
    weights = np.array([SET_WEIGHTS.get(n, 1) for n in names], float)
    picks = rng.choice(len(names), size=clips, p=weights / weights.sum())
    chosen = []
    for k, name in enumerate(names):
        wanted = int((picks == k).sum())
        pool = opened[name].indices
        for index in rng.permutation(pool)[: min(wanted, len(pool))]:
            chosen.append((name, opened[name], int(index)))
    return chosen


def detector_calibration(
    sets: dict[str, str | Path],
    clips: int = DEFAULT_CLIPS,
    frames: int = DEFAULT_FRAMES,
    seed: int = 0,
    network_size: tuple[int, int] = NETWORK_SIZE,
    residual_reference: float = RESIDUAL_REFERENCE,
    warp_at: str = "network",
    residual_baseline: int = 1,
) -> Calibration:
    """``clips`` x ``frames`` consecutive frames' ``[L, R, D]`` channels from ``sets``
    (name -> folder, e.g. ``{"tier1": "data/tier1", "negatives": "data/negatives"}``) at
    the detector's ``network_size`` with Stage B's ``warp_at`` and ``residual_baseline`` (the
    sets cache the paper's 256x192, warp and R; others run Stages A and B again), residual
    level normalized to
    ``residual_reference`` as the
    runtime detector feeds the model
    (:attr:`emts.stages.c_detect.detector.Detector.residual_reference`).
    Frame 0 of a clip has no motion channels and is never used."""
    from emts.front_end import cached_by_sets, channels_at

    _check_stream(clips, seed, frames)
    rng = np.random.default_rng([seed, 1])
    stream = []
    for _, clip_set, index in _choose_clips(sets, clips, seed):
        clip = clip_set.load(index)
        channels = clip.channels
        config = ChannelConfig(warp_at=warp_at, residual_baseline=residual_baseline)
        if not cached_by_sets(network_size, config):
            channels = channels_at(clip.frames, network_size, warp_at, residual_baseline)
        if len(channels) < frames + 1:
            raise BadInputError(
                f"{clip_set.folder}: clips have {len(channels)} frames (< {frames + 1})"
            )
        start = int(rng.integers(residual_baseline, len(channels) - frames + 1))
        stream.append(channels[start : start + frames])
    names = ", ".join(f"{k}={v}" for k, v in sets.items())
    source = f"{len(stream)} clips x {frames} consecutive frames of {names} (seed {seed})"
    if warp_at != "network":  # the paper's warp is what every earlier record meant
        source += f", Stage B at {network_size[0]}x{network_size[1]} warp {warp_at}"
    if residual_baseline != 1:
        source += f", R over {residual_baseline} frames"
    # what the runtime Detector feeds the network: residual level normalized
    samples = normalize_residual_level(
        np.concatenate(stream).astype(np.float32), residual_reference
    )
    level = "residual level normalized" + (
        "" if residual_reference == RESIDUAL_REFERENCE else f" to {residual_reference:g}"
    )
    return Calibration(samples, frames, f"{source}, {level}")


def verifier_calibration(
    sets: dict[str, str | Path],
    clips: int = DEFAULT_CLIPS,
    seed: int = 0,
    per_clip: int = 4,
    resolution: str = "network",
) -> Calibration:
    """Descriptor windows (N, 40, 16) of up to ``per_clip`` labelled tracks per clip (persons,
    animals, vehicles; a ground-fixed box on person-free clips), as the verifier trains, at
    the model's Stage E input ``resolution``."""
    from emts.config import VerifierConfig
    from emts.train.verifier import _ClipView, _ground_fixed, _gt_tracks

    _check_stream(clips, seed)
    config = VerifierConfig()
    rng = np.random.default_rng([seed, 2])
    windows = []
    for _, clip_set, index in _choose_clips(sets, clips, seed):
        clip = clip_set.load(index)
        tracks = list(_gt_tracks(clip.labels, "persons").values())
        tracks += list(_gt_tracks(clip.labels, "distractors").values())
        if clip.labels.get("kind") == "negative":
            tracks.append(_ground_fixed(clip.labels, rng))
        view = _ClipView(clip, resolution, config)
        for boxes in tracks[:per_clip]:
            windows.append(view.window(boxes))
    if not windows:
        raise BadInputError("no labelled tracks in the calibration clips")
    names = ", ".join(f"{k}={v}" for k, v in sets.items())
    source = f"{len(windows)} descriptor windows of {clips} clips of {names} (seed {seed})"
    return Calibration(np.stack(windows).astype(np.float32), 1, source)


CACHE_MODES = ("zero", "propagated")


def with_caches(model: str | Path, calibration: Calibration, caches: str) -> Calibration:
    """``calibration`` with the cache inputs of the streaming (TSM) graph ``model`` (`eq:statefn`).

    * ``zero``: every sample's caches are zeros, the state a stream has only at its start;
    * ``propagated``: each clip of the stream (``calibration.step`` consecutive frames) is
      streamed through the float ``model`` from zero caches and every step's incoming caches
      are snapshotted with its frame, so the cache ranges are those of steady-state streaming
      (`sec:stateful`, `tab:quantablation`).
    """
    from emts.stages.c_detect.streaming import StreamingDetector, zero_caches

    if caches not in CACHE_MODES:
        raise BadInputError(f"--tsm-caches {caches}: choose one of {', '.join(CACHE_MODES)}")
    detector = StreamingDetector(model, threads=2)
    shapes = zero_caches(detector.session)
    count = len(calibration.samples)
    extra = {name: np.zeros((count, *z.shape[1:]), np.float32) for name, z in shapes.items()}
    if caches == "propagated":
        for k, frame in enumerate(calibration.samples):
            if k % calibration.step == 0:
                detector.reset()  # each clip streams from the start
            for name, value in detector.caches.items():
                extra[name][k] = value[0]
            detector.raw(frame)
    source = f"{calibration.source}; caches {caches}"
    if caches == "propagated":
        source += f" (streamed through the float model, reset every {calibration.step} frames)"
    return Calibration(calibration.samples, calibration.step, source, extra)


def float_preprocessing_nodes(graph: onnx.ModelProto) -> list[str]:
    """The nodes before the first Conv of a graph that takes the log of its input (the
    verifier's ``log(x + eps)`` and standardization): they stay float, since one uint8 scale
    over the raw descriptors would round the small flow magnitudes the log spreads apart
    (held-out AUC 0.951 -> 0.819 quantized through them; 0.95 with them float)."""
    nodes = list(graph.graph.node)
    if not any(n.op_type == "Log" for n in nodes):
        return []
    first = next((i for i, n in enumerate(nodes) if n.op_type == "Conv"), 0)
    return [n.name for n in nodes[:first]]


def input_convolutions(graph: onnx.ModelProto, convs: int = 1) -> list[str]:
    """The input stage: every node up to the ``convs``-th Conv (in graph order), that Conv
    included -- with 1 the detector's stem, the verifier's in-graph standardization and first
    convolution."""
    nodes = list(graph.graph.node)
    at = [i for i, n in enumerate(nodes) if n.op_type == "Conv"][:convs]
    return [n.name for n in nodes[: at[-1] + 1]] if at else []


def quantize(
    model: str | Path,
    out: str | Path,
    calibration: Calibration,
    method: str = "minmax",
    op_types: list[str] | None = None,
    float_input_conv: bool = False,
    float_convs: int = 1,
) -> Path:
    """Write the int8 QDQ model of ``model`` calibrated on ``calibration`` to ``out``
    (``op_types``: quantize only nodes of these types; None: every type).

    ``float_input_conv`` keeps the input stage (:func:`input_convolutions`) float, so the
    input is never quantized: the detector's L, R and D would share one uint8 scale over
    [-1, 1] (step 0.008), which leaves a residual of a few gray levels one to four steps
    (measured: the int8 detector's AP@0.25 gap to float shrinks from 0.009 to 0.006 on the
    bench and from 0.008 to 0.004 on HIT-UAV); the verifier's 40 raw descriptors one scale
    whose step swallows the small ones (held-out accept/reject flips 584 -> 59 of 4,729).
    ``float_convs`` is how many leading convolutions that float stage holds: the thermal
    model's int8 lost 0.018 / 0.022 AP@0.25 on HIT-UAV with its stem float, 0.005 / 0.003
    with the stem and the next convolution (the stem's output quantized is what costs)."""
    if method not in CALIBRATIONS:
        raise BadInputError(f"--calibration {method}: choose one of {', '.join(CALIBRATIONS)}")
    model, out = Path(model), Path(out)
    if not model.is_file():
        raise BadInputError(f"{model}: no such model")
    graph = load_graph(model, "fp32")
    if hits := l2_normalization_nodes(graph):
        raise BadInputError(
            f"{model} normalizes inside the graph ({', '.join(hits)}): an all-zero input "
            "quantizes its norm to zero; normalize in the decoder and export again"
        )
    extra = {"WeightSymmetric": True, "ActivationSymmetric": False}
    float_nodes = float_preprocessing_nodes(graph)
    if float_input_conv:
        stage = input_convolutions(graph, float_convs)
        float_nodes += [n for n in stage if n not in float_nodes]
    if method == "moving-average":
        step = calibration.step if len(calibration.samples) % calibration.step == 0 else 1
        extra |= {
            "CalibMovingAverage": True,
            "CalibMovingAverageConstant": MOVING_AVERAGE_CONSTANT,
            "CalibStridedMinMax": step,
        }
    out.parent.mkdir(parents=True, exist_ok=True)
    reader = _Reader(graph.graph.input[0].name, calibration.samples, calibration.extra)
    fed = {graph.graph.input[0].name, *(calibration.extra or {})}
    if unfed := [i.name for i in graph.graph.input if i.name not in fed]:
        raise BadInputError(
            f"{model} has inputs the calibration stream does not feed ({', '.join(unfed)}): "
            "a streaming (TSM) graph is calibrated with --tsm-caches zero|propagated"
        )
    with tempfile.TemporaryDirectory() as scratch:
        # Shape inference keeps the quantizer's view of every tensor exact (also for
        # intermediate tensors the exporter left unannotated).
        inferred = Path(scratch) / "inferred.onnx"
        onnx.save(onnx.shape_inference.infer_shapes(graph), str(inferred))
        root = logging.getLogger()
        level, root.level = root.level, logging.ERROR  # its "consider pre-processing" advice
        try:
            quantize_static(
                str(inferred),
                str(out),
                reader,
                quant_format=QuantFormat.QDQ,
                per_channel=True,
                weight_type=QuantType.QInt8,
                activation_type=QuantType.QUInt8,
                calibrate_method=CalibrationMethod.MinMax,
                op_types_to_quantize=op_types,
                extra_options=extra,
                nodes_to_exclude=float_nodes,
            )
        finally:
            root.setLevel(level)
    return out


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write_provenance(path: str | Path, entries: dict) -> Path:
    """The provenance JSON of the shipped int8 models (command, calibration, metrics)."""
    path = Path(path)
    path.write_text(json.dumps(entries, indent=1) + "\n")
    return path
