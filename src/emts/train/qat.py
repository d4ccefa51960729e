"""Quantization-aware training of the detector (paper phase 3, issue 11 part 1).

``emts train detector --qat-from RUN`` fine-tunes a trained detector for a few epochs (paper:
4) on the phase-2 mixture while every convolution sees its weights fake-quantized per output
channel, symmetric int8 (scale = max |w| / 127, what onnxruntime's per-channel QDQ does), and
its input fake-quantized per tensor, asymmetric uint8, with moving-average min/max observers.
Gradients pass the rounding straight through. The detector starts from its exported ONNX (the
exporter folds BatchNorm into the convolutions, so the weights trained here are the weights
int8 will hold; the BatchNorms stay frozen identities).

Deployment is unchanged: the QAT model is exported as fp32 ONNX (its latent float weights) and
quantized by :func:`emts.train.quantize.quantize` with min-max calibration, like any model.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn
from torch.ao.quantization import FakeQuantize, MovingAverageMinMaxObserver
from torch.nn.utils import parametrize
from tqdm import tqdm

from emts.config import NETWORK_SIZE
from emts.errors import BadInputError
from emts.train.data import StoredClips, Tier2Stills
from emts.train.export import detector_from_onnx, export_onnx, load_trained
from emts.train.loop import TrainConfig, plot_curves, run_phases
from emts.train.model import MicroDetector

QAT_LR = 1e-4  # fine-tuning a converged model: a tenth of phase 2's peak rate
ACTIVATION_AVERAGING = 0.01  # moving-average observer constant


class PerChannelWeightQuant(nn.Module):
    """Parametrization: the weight as symmetric int8 per output channel would hold it."""

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        scale = weight.detach().abs().amax(dim=(1, 2, 3)).clamp_min(1e-8) / 127.0
        zero = torch.zeros(weight.shape[0], dtype=torch.int32, device=weight.device)
        return torch.fake_quantize_per_channel_affine(weight, scale, zero, 0, -127, 127)


def activation_quant() -> FakeQuantize:
    return FakeQuantize(
        observer=MovingAverageMinMaxObserver,
        quant_min=0,
        quant_max=255,
        dtype=torch.quint8,
        qscheme=torch.per_tensor_affine,
        averaging_constant=ACTIVATION_AVERAGING,
    )


class QuantAware:
    """Puts fake quantization on every convolution of ``model`` (weights and inputs) and takes
    it off again (:meth:`remove`), leaving the trained float weights in place."""

    def __init__(self, model: MicroDetector) -> None:
        self.model = model
        self.convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
        self.inputs = nn.ModuleList(activation_quant() for _ in self.convs)
        model.add_module("qat_inputs", self.inputs)  # trained/saved with the model
        self.hooks = []
        for conv, quant in zip(self.convs, self.inputs, strict=True):
            parametrize.register_parametrization(conv, "weight", PerChannelWeightQuant())
            self.hooks.append(conv.register_forward_pre_hook(lambda m, x, q=quant: (q(x[0]),)))

    def remove(self) -> MicroDetector:
        for hook in self.hooks:
            hook.remove()
        for conv in self.convs:
            parametrize.remove_parametrizations(conv, "weight", leave_parametrized=False)
        del self.model.qat_inputs
        return self.model


def starting_model(source: str | Path) -> MicroDetector:
    """The detector to fine-tune: a run folder (its model.pt), a model.pt, or an ONNX;
    always rebuilt from its exported ONNX, BatchNorm folded."""
    source = Path(source)
    if source.is_dir():
        source = source / "model.pt"
    if not source.is_file():
        raise BadInputError(f"--qat-from {source}: no such run or model")
    if source.suffix == ".onnx":
        model = detector_from_onnx(source)
    else:
        with tempfile.TemporaryDirectory() as scratch:
            onnx_path = export_onnx(load_trained(source), Path(scratch) / "model.onnx")
            model = detector_from_onnx(onnx_path)
    if tuple(getattr(model, "network_size", NETWORK_SIZE)) != NETWORK_SIZE:
        raise BadInputError(f"--qat-from {source}: QAT trains the paper's 256x192 detector only")
    return model


def qat_detector(
    source: str | Path,
    out: str | Path,
    tier1: str | Path,
    negatives: str | Path,
    hituav: str | Path,
    epochs: int = 4,
    config: TrainConfig | None = None,
    command: str = "",
) -> dict:
    """Fine-tune ``source`` with fake quantization for ``epochs`` phase-2 epochs; writes
    ``out/model.onnx`` (fp32, to be quantized), ``model.pt``, ``qat.json``, ``curves.png``."""
    config = config or TrainConfig()
    config = TrainConfig(**{**asdict(config), "lr": QAT_LR, "model": config.model})
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    started = time.perf_counter()
    model = starting_model(source)
    quant = QuantAware(model)
    sources = {
        "tier1": StoredClips(tier1, "tier1", progress=tqdm),
        "negative": StoredClips(negatives, "negative", progress=tqdm),
        "tier2": Tier2Stills(hituav),
    }
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    steps = epochs * config.phase2_clips // config.batch_clips
    state = run_phases(
        model, optimizer, sources, [("qat", steps, config.mixture)], config, out, freeze_bn=True
    )
    model = quant.remove().eval()
    torch.save({"model": model.state_dict(), "config": asdict(model.config)}, out / "model.pt")
    export_onnx(model, out / "model.onnx")
    plot_curves(state["history"], out / "curves.png")
    report = {
        "command": command,
        "qat_from": str(source),
        "epochs": epochs,
        "steps": steps,
        "lr": config.lr,
        "mixture": config.mixture,
        "weights": "per-channel symmetric int8 fake quantization (scale max|w|/127)",
        "activations": "per-tensor asymmetric uint8, moving-average min/max "
        f"(constant {ACTIVATION_AVERAGING}) on every convolution's input",
        "seconds": round(time.perf_counter() - started, 1),
        "final": state["history"][-1] if state["history"] else None,
    }
    (out / "qat.json").write_text(json.dumps(report, indent=1) + "\n")
    return report
