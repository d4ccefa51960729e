"""Export the trained detector to ONNX for the runtime (§5): fp32 for now."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from emts.config import NETWORK_SIZE
from emts.errors import BadInputError
from emts.train.model import DetectorConfig, MicroDetector

OUTPUT_NAMES = ["heatmap", "log_size", "offset", "embedding"]


class _Deployable(nn.Module):
    """Applies the heatmap sigmoid in the graph; embeddings stay raw (normalized in decode)."""

    def __init__(self, model: MicroDetector) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor):
        heat, size, offset, embedding = self.model(x)
        return torch.sigmoid(heat), size, offset, embedding


class _Streaming(nn.Module):
    """The causal streaming step as a pure function (`eq:statefn`):
    ``(x_t, c_{t-1}^{(1..7)}) -> (heatmap, log_size, offset, embedding, c_t^{(1..7)})``."""

    def __init__(self, model: MicroDetector) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor, *caches: torch.Tensor):
        heat, size, offset, embedding, new = self.model.step(x, list(caches))
        return (torch.sigmoid(heat), size, offset, embedding, *new)


def cache_names(count: int) -> tuple[list[str], list[str]]:
    """Graph input / output names of the caches of a streaming TSM detector."""
    return [f"cache_in_{k}" for k in range(count)], [f"cache_out_{k}" for k in range(count)]


def export_streaming_onnx(model: MicroDetector, out: str | Path, opset: int = 17) -> Path:
    """Write the causal streaming step of a TSM ``model`` as ONNX with its caches as explicit
    graph inputs (``cache_in_k``) and outputs (``cache_out_k``), dynamic batch axis.
    Feed zeros as the first frame's caches and each step's ``cache_out_k`` to the next."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    model.eval()
    caches = model.initial_caches()
    inputs, outputs = cache_names(len(caches))
    dummy = torch.zeros(1, model.config.in_channels, 192, 256)
    names = ["channels", *inputs]
    torch.onnx.export(
        _Streaming(model).eval(),
        (dummy, *caches),
        str(out),
        input_names=names,
        output_names=[*OUTPUT_NAMES, *outputs],
        dynamic_axes={n: {0: "batch"} for n in [*names, *OUTPUT_NAMES, *outputs]},
        opset_version=opset,
        dynamo=False,
    )
    model.eval()
    return out


def read_saved(path: str | Path, what: str, remedy: str, map_location="cpu") -> dict:
    """The dict ``torch.save`` wrote to ``path`` (a ``model.pt``, a ``checkpoint.pt``); a
    missing, empty, truncated or foreign file is bad input, said in one line: which ``what``
    it should have been, why it cannot be read, and the ``remedy``."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"{what} {path} not found")
    try:
        saved = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as error:  # pickle, zip, EOF and torch's own errors for a bad file
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else "empty"
        raise BadInputError(
            f"{path} is not a readable {what} ({type(error).__name__}: {reason}); {remedy}"
        ) from None
    if not isinstance(saved, dict):
        raise BadInputError(f"{path} is not a {what} (it holds a {type(saved).__name__}); {remedy}")
    return saved


def load_trained(path: str | Path) -> MicroDetector:
    """The :class:`MicroDetector` of a ``model.pt`` written by ``emts train detector``."""
    remedy = "pass the model.pt of an `emts train detector` run"
    saved = read_saved(path, "trained detector", remedy)
    try:
        config = {k: tuple(v) if isinstance(v, list) else v for k, v in saved["config"].items()}
        model = MicroDetector(DetectorConfig(**config))
        model.load_state_dict(saved["model"])
    except (KeyError, TypeError, AttributeError, RuntimeError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else "no details"
        raise BadInputError(
            f"{path} does not hold a trained detector ({type(error).__name__}: {reason}); {remedy}"
        ) from None
    # the NETWORK frame it was trained at (models saved before that option: the paper's)
    model.network_size = tuple(saved.get("network_size", NETWORK_SIZE))
    return model.eval()


def trained_residual_baseline(model: Path) -> int | None:
    """The frames R spanned in training, from the run folder's metrics.json beside a
    model.pt (None when it says nothing)."""
    metrics = model.parent / "metrics.json"
    try:
        config = json.loads(metrics.read_text()).get("config") or {}
    except (OSError, ValueError):
        return None
    return config.get("residual_baseline")


def export_onnx(
    model: MicroDetector, out: str | Path, opset: int = 17, any_size: bool = False
) -> Path:
    """Write ``model`` as ONNX with a dynamic batch axis; returns the path.

    The input is fixed at ``model.network_size`` (set by :func:`load_trained`; the paper's
    256x192 by default), or with ``any_size`` its height and width are left open so that the
    runtime can run it at another size (``--network-size``). Either way the size it was
    trained at is recorded in the metadata (``emts_network_size``); the runtime runs a model
    at that size unless told otherwise.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    channels = model.config.in_channels
    width, height = getattr(model, "network_size", NETWORK_SIZE)
    dummy = torch.zeros(1, channels, height, width)
    wrapper = _Deployable(model).eval()
    axes = {0: "batch", 2: "height", 3: "width"} if any_size else {0: "batch"}
    out_axes = {0: "batch", 2: "rows", 3: "columns"} if any_size else {0: "batch"}
    torch.onnx.export(
        wrapper,
        dummy,
        str(out),
        input_names=["channels"],
        output_names=OUTPUT_NAMES,
        dynamic_axes={"channels": axes, **{n: out_axes for n in OUTPUT_NAMES}},
        opset_version=opset,
        dynamo=False,
    )
    model.eval()  # the exporter restores the wrapper's mode onto the model: keep it in eval
    return reshape_onnx(out, out, (width, height), any_size)


def reshape_onnx(
    source: str | Path, out: str | Path, trained_size: tuple[int, int], any_size: bool = True
) -> Path:
    """Copy a detector ONNX with its input height and width left open (``any_size``) or
    fixed at ``trained_size``, recording ``trained_size`` in its metadata. Open, it keeps the
    run size it had, as it keeps every other entry (switching ``--mirror-average`` on the
    thermal model must leave it at 512x384); fixed, it has none (:func:`record_run_size`
    sets one). The weights and operators are untouched: at the trained size the outputs are
    the same bit for bit."""
    import onnx

    from emts.stages.c_detect.detector import RUN_SIZE_METADATA, SIZE_METADATA, load_graph

    graph_model = load_graph(Path(source), "detector")
    width, height = trained_size
    for values, open_names, stride in (
        (graph_model.graph.input, ("height", "width"), 1),
        (graph_model.graph.output, ("rows", "columns"), 8),  # the heads' stride-8 grid
    ):
        for value in values:
            dims = value.type.tensor_type.shape.dim
            if any_size:
                dims[2].dim_param, dims[3].dim_param = open_names
            else:
                dims[2].dim_value, dims[3].dim_value = height // stride, width // stride
    del graph_model.graph.value_info[:]  # shapes inferred at the fixed size would contradict
    _set_metadata(graph_model, SIZE_METADATA, f"{width}x{height}")
    if not any_size:  # a fixed-size model runs at that size only
        _set_metadata(graph_model, RUN_SIZE_METADATA, None)
    onnx.save(graph_model, str(out))
    return Path(out)


def _set_metadata(graph_model, key: str, value: str | None) -> None:
    """Replace (or, with None, remove) the ONNX metadata entry ``key``, keeping the others."""
    kept = [p for p in graph_model.metadata_props if p.key != key]
    del graph_model.metadata_props[:]
    graph_model.metadata_props.extend(kept)
    if value is not None:
        graph_model.metadata_props.add(key=key, value=value)


def _record(path: str | Path, key: str, value: str | None) -> Path:
    """Set (or, with None, remove) one metadata entry of an ONNX file in place; the weights
    are untouched."""
    import onnx

    graph_model = onnx.load(str(path))
    _set_metadata(graph_model, key, value)
    onnx.save(graph_model, str(path))
    return Path(path)


def record_box_scale(path: str | Path, scales: dict[str, float]) -> Path:
    """Record ``{"WxH": factor}`` in a detector ONNX's metadata (in place; the weights are
    untouched): :class:`emts.stages.c_detect.detector.Detector` scales its boxes by the factor of
    the size it runs at."""
    from emts.stages.c_detect.detector import BOX_SCALE_METADATA

    return _record(path, BOX_SCALE_METADATA, json.dumps(scales) if scales else None)


def record_residual_reference(path: str | Path, reference: float | None) -> Path:
    """Record (or, with None, remove) the residual level a detector ONNX is fed at most
    (:func:`emts.stages.b_channels.normalize_residual_level`; in place, the weights untouched)."""
    from emts.stages.c_detect.detector import RESIDUAL_REFERENCE_METADATA

    value = None if reference is None else f"{reference:g}"
    return _record(path, RESIDUAL_REFERENCE_METADATA, value)


def record_stage_b_warp(path: str | Path, warp_at: str | None) -> Path:
    """Record (or, with None or the paper's ``"network"``, remove) Stage B's warp a detector
    ONNX runs with (in place; the weights untouched)."""
    from emts.stages.c_detect.detector import STAGE_B_METADATA

    return _record(path, STAGE_B_METADATA, None if warp_at in (None, "network") else warp_at)


def record_residual_baseline(path: str | Path, frames: int | None) -> Path:
    """Record (or, with None or 1, remove) the frames R spans for a detector ONNX
    (:class:`emts.config.ChannelConfig` ``residual_baseline``; in place, the weights untouched)."""
    from emts.stages.c_detect.detector import RESIDUAL_BASELINE_METADATA

    return _record(path, RESIDUAL_BASELINE_METADATA, None if frames in (None, 1) else str(frames))


def record_mirror_average(path: str | Path, on: bool) -> Path:
    """Record (or, with False, remove) mirror averaging for a detector ONNX
    (:class:`emts.stages.c_detect.detector.Detector` ``mirror_average``; in place, the weights
    untouched)."""
    from emts.stages.c_detect.detector import MIRROR_AVERAGE_METADATA

    return _record(path, MIRROR_AVERAGE_METADATA, "1" if on else None)


def record_run_size(path: str | Path, size: tuple[int, int] | None) -> Path:
    """Record (or, with None, remove) the size an open-size detector ONNX runs at when no
    size is asked for (in place; the weights are untouched)."""
    from emts.stages.c_detect.detector import RUN_SIZE_METADATA

    return _record(path, RUN_SIZE_METADATA, "{}x{}".format(*size) if size else None)


def copy_runtime_metadata(source: str | Path, target: str | Path, any_size: bool) -> dict:
    """Copy the entries that say how to run a detector (run size, box scale, residual
    reference, Stage B warp, R's frames, mirror averaging) from ``source``'s ONNX metadata to
    ``target``'s (in place; the weights untouched; a fixed-size ``target`` gets no run size).
    Returns the entries copied. A fine-tuned model runs as its starting model did."""
    import onnx

    from emts.stages.c_detect.detector import (
        BOX_SCALE_METADATA,
        MIRROR_AVERAGE_METADATA,
        RESIDUAL_BASELINE_METADATA,
        RESIDUAL_REFERENCE_METADATA,
        RUN_SIZE_METADATA,
        STAGE_B_METADATA,
    )

    keys = [
        BOX_SCALE_METADATA,
        MIRROR_AVERAGE_METADATA,
        RESIDUAL_BASELINE_METADATA,
        RESIDUAL_REFERENCE_METADATA,
        STAGE_B_METADATA,
    ] + ([RUN_SIZE_METADATA] if any_size else [])
    entries = {p.key: p.value for p in onnx.load(str(source)).metadata_props}
    copied = {key: entries[key] for key in keys if key in entries}
    graph_model = onnx.load(str(target))
    for key, value in copied.items():
        _set_metadata(graph_model, key, value)
    onnx.save(graph_model, str(target))
    return copied


def detector_from_onnx(path: str | Path, config: DetectorConfig | None = None) -> MicroDetector:
    """Rebuild a trainable :class:`MicroDetector` from an exported detector ONNX.

    The exporter folds every BatchNorm into the convolution before it; here each folded
    convolution gets its weights back and its BatchNorm becomes the identity carrying the
    folded bias (weight 1, running mean 0, running variance 1 - eps). Fine-tune such a model
    with its BatchNorms in eval mode (see :func:`freeze_batch_norm`): the statistics are gone.
    Raises ``BadInputError`` when the graph does not fit the architecture. The model's
    ``network_size`` is the graph's input size.
    """
    from onnx import numpy_helper

    from emts.stages.c_detect.detector import load_graph

    loaded = load_graph(Path(path), "detector")
    graph = loaded.graph
    weights = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    convs = [n for n in graph.node if n.op_type == "Conv"]
    model = MicroDetector(config or DetectorConfig()).eval()
    modules = list(model.modules())
    layers = [
        (conv, after if isinstance(after, nn.BatchNorm2d) else None)
        for conv, after in (
            (m, modules[i + 1] if i + 1 < len(modules) else None)
            for i, m in enumerate(modules)
            if isinstance(m, nn.Conv2d)
        )
    ]
    if len(convs) != len(layers):
        raise BadInputError(
            f"{path}: {len(convs)} convolutions, the detector architecture has {len(layers)}"
        )
    with torch.no_grad():
        for node, (conv, bn) in zip(convs, layers, strict=True):
            w = torch.from_numpy(weights[node.input[1]].copy())
            b = (
                torch.from_numpy(weights[node.input[2]].copy())
                if len(node.input) > 2
                else torch.zeros(w.shape[0])
            )
            if tuple(w.shape) != tuple(conv.weight.shape):
                raise BadInputError(
                    f"{path}: convolution {node.name} is {tuple(w.shape)}, "
                    f"expected {tuple(conv.weight.shape)}"
                )
            conv.weight.copy_(w)
            if bn is None:
                conv.bias.copy_(b)
                continue
            if conv.bias is not None:
                conv.bias.zero_()
            bn.weight.fill_(1.0)
            bn.bias.copy_(b)
            bn.running_mean.zero_()
            bn.running_var.fill_(1.0 - bn.eps)
    dims = graph.input[0].type.tensor_type.shape.dim
    height, width = dims[2].dim_value, dims[3].dim_value  # 0 for an open axis
    if not (width and height):  # an open size: the one it was trained at, else the paper's
        from emts.stages.c_detect.detector import SIZE_METADATA

        recorded = {p.key: p.value for p in loaded.metadata_props}.get(SIZE_METADATA)
        width, height = (int(v) for v in recorded.split("x")) if recorded else NETWORK_SIZE
    model.network_size = (width, height)
    return model


def freeze_batch_norm(model: nn.Module) -> None:
    """Put every BatchNorm of ``model`` in eval mode (running statistics kept fixed)."""
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.eval()
