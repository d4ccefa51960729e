"""Fine-tuning the temporal-shift ablation detector (`eq:tsm`, `eq:causaltsm`; issue 11 part 3).

The cheapest honest route on a CPU: start from the shipped stateless detector (rebuilt from its
ONNX, BatchNorm folded and frozen), switch the shift on before every DWS block's depthwise conv
(it displaces 2f = C/4 of each block's input channels, so the model must be fine-tuned), and
fine-tune on T-frame windows of the Tier-1 and hard-negative clips with the shift semantics of
``mode``: ``causal`` (what streams) or ``bidirectional`` (offline; streamed through the causal
cached form afterwards, the paper's "bidirectional-then-converted"). Writes the causal streaming
ONNX with its caches as graph inputs/outputs (`eq:statefn`). ``none`` runs the same
fine-tuning without shift (the control at identical budget) and writes a stateless ONNX.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch
from tqdm import tqdm

from emts.config import NETWORK_SIZE
from emts.errors import BadInputError
from emts.train.data import StoredClips
from emts.train.export import detector_from_onnx, export_onnx, export_streaming_onnx
from emts.train.loop import TrainConfig, plot_curves, run_phases
from emts.train.model import MicroDetector
from emts.train.quantize import sha256

TSM_LR = 5e-4  # a third of phase 2's peak: the shift perturbs a converged model
TSM_MIXTURE = {"tier1": 0.625, "negative": 0.375}  # phase 2's 0.5 : 0.3, without Tier 2


def tsm_model(source: str | Path, mode: str) -> MicroDetector:
    """The stateless detector ``source`` (an ONNX) with the shift of ``mode`` switched on."""
    if mode not in ("causal", "bidirectional", "none"):
        raise BadInputError(f"--tsm {mode}: choose causal, bidirectional or none")
    source = Path(source)
    if not source.is_file() or source.suffix != ".onnx":
        raise BadInputError(f"--tsm-from {source}: no such ONNX detector")
    from emts.train.model import DetectorConfig

    model = detector_from_onnx(source, DetectorConfig(tsm=mode))
    if model.network_size != NETWORK_SIZE:
        raise BadInputError(f"--tsm-from {source}: the TSM variant is the paper's 256x192 only")
    return model


def finetune_tsm(
    source: str | Path,
    out: str | Path,
    tier1: str | Path,
    negatives: str | Path,
    mode: str = "causal",
    steps: int = 3000,
    config: TrainConfig | None = None,
    command: str = "",
) -> dict:
    """Fine-tune ``source`` with the temporal shift for ``steps`` batches of
    ``config.batch_clips`` clips x ``config.frames`` frames; writes ``out/model.onnx`` (the
    causal streaming step, fp32), ``model.pt``, ``tsm.json`` and ``curves.png``."""
    config = config or TrainConfig()
    model = tsm_model(source, mode)
    config = replace(config, model=model.config)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    started = time.perf_counter()
    sources = {
        "tier1": StoredClips(tier1, "tier1", progress=tqdm),
        "negative": StoredClips(negatives, "negative", progress=tqdm),
    }
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    state = run_phases(
        model, optimizer, sources, [("tsm", steps, TSM_MIXTURE)], config, out, freeze_bn=True
    )
    model.eval()
    torch.save({"model": model.state_dict(), "config": asdict(model.config)}, out / "model.pt")
    if mode == "none":  # the control: same fine-tuning, no shift, a stateless graph
        export_onnx(model, out / "model.onnx")
    else:
        export_streaming_onnx(model, out / "model.onnx")
    plot_curves(state["history"], out / "curves.png")
    shapes = model.cache_shapes()
    report = {
        "command": command,
        "from": str(source),
        "from_sha256": sha256(source),
        "tsm": mode,
        "folds": [b.fold for b in model.blocks()],
        "cache_shapes": shapes,
        "cache_values": int(sum(a * b * c for a, b, c in shapes)),
        "steps": steps,
        "batch_clips": config.batch_clips,
        "frames": config.frames,
        "lr": config.lr,
        "mixture": TSM_MIXTURE,
        "batch_norm": "folded into the convolutions (from the ONNX) and frozen",
        "seconds": round(time.perf_counter() - started, 1),
        "final": state["history"][-1] if state["history"] else None,
    }
    (out / "tsm.json").write_text(json.dumps(report, indent=1) + "\n")
    return report
