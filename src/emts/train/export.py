"""Export the trained detector to ONNX for the runtime (§5): fp32 for now."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

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


def load_trained(path: str | Path) -> MicroDetector:
    saved = torch.load(path, map_location="cpu", weights_only=False)
    model = MicroDetector(
        DetectorConfig(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in saved["config"].items()}
        )
    )
    model.load_state_dict(saved["model"])
    return model.eval()


def export_onnx(model: MicroDetector, out: str | Path, opset: int = 17) -> Path:
    """Write ``model`` as ONNX with a dynamic batch axis; returns the path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    channels = model.config.in_channels
    dummy = torch.zeros(1, channels, 192, 256)
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
