"""Export the trained detector to ONNX for the runtime (§5): fp32 for now."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from emts.config import NETWORK_SIZE
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


def load_trained(path: str | Path) -> MicroDetector:
    saved = torch.load(path, map_location="cpu", weights_only=False)
    model = MicroDetector(
        DetectorConfig(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in saved["config"].items()}
        )
    )
    model.load_state_dict(saved["model"])
    # the NETWORK frame it was trained at (models saved before that option: the paper's)
    model.network_size = tuple(saved.get("network_size", NETWORK_SIZE))
    return model.eval()


def export_onnx(model: MicroDetector, out: str | Path, opset: int = 17) -> Path:
    """Write ``model`` as ONNX with a dynamic batch axis and its network size fixed
    (``model.network_size``, set by :func:`load_trained`; the paper's 256x192 by default: the
    runtime reads it back from the input shape); returns the path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    channels = model.config.in_channels
    width, height = getattr(model, "network_size", NETWORK_SIZE)
    dummy = torch.zeros(1, channels, height, width)
    wrapper = _Deployable(model).eval()
    torch.onnx.export(
        wrapper,
        dummy,
        str(out),
        input_names=["channels"],
        output_names=OUTPUT_NAMES,
        dynamic_axes={"channels": {0: "batch"}, **{n: {0: "batch"} for n in OUTPUT_NAMES}},
        opset_version=opset,
        dynamo=False,
    )
    model.eval()  # the exporter restores the wrapper's mode onto the model: keep it in eval
    return out


def detector_from_onnx(path: str | Path, config: DetectorConfig | None = None) -> MicroDetector:
    """Rebuild a trainable :class:`MicroDetector` from an exported detector ONNX.

    The exporter folds every BatchNorm into the convolution before it; here each folded
    convolution gets its weights back and its BatchNorm becomes the identity carrying the
    folded bias (weight 1, running mean 0, running variance 1 - eps). Fine-tune such a model
    with its BatchNorms in eval mode (see :func:`freeze_batch_norm`): the statistics are gone.
    Raises ``BadInputError`` when the graph does not fit the architecture. The model's
    ``network_size`` is the graph's input size.
    """
    import onnx
    from onnx import numpy_helper

    from emts.errors import BadInputError

    graph = onnx.load(str(path)).graph
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
    model.network_size = (width, height) if width and height else NETWORK_SIZE
    return model


def freeze_batch_norm(model: nn.Module) -> None:
    """Put every BatchNorm of ``model`` in eval mode (running statistics kept fixed)."""
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.eval()
