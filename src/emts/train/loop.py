"""Detector training (§4.4): phase 1 on Tier-2 pseudo-video, phase 2 on the Tier-1 / hard
negative / Tier-2 mixture; AdamW with cosine decay; checkpoints, resume, curves, metrics."""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cv2
import numpy as np
import torch
from tqdm import tqdm

from emts.errors import BadInputError
from emts.train.data import MixtureStream, StoredClips, Tier2Stills
from emts.train.export import freeze_batch_norm, read_saved
from emts.train.losses import detector_loss
from emts.train.model import DetectorConfig, MicroDetector

CHECKPOINT = "checkpoint.pt"


@dataclass(frozen=True)
class TrainConfig:
    """Schedule of §4.4 (epoch = clips drawn; batch = clips x frames)."""

    phase1_epochs: int = (
        6  # §4.4 says 4; measured: longer schedules do better (see models/detector.json)
    )
    phase1_clips: int = 2000  # Tier-2 clips per phase-1 epoch
    phase2_epochs: int = 100  # §4.4 says 14; 31 min on 2 CPU cores, within the 60-min budget
    phase2_clips: int = 800  # clips per phase-2 epoch: 400 Tier-1 clips at a 0.5 share
    mixture: dict[str, float] = field(
        default_factory=lambda: {"tier1": 0.5, "negative": 0.3, "tier2": 0.2}
    )
    batch_clips: int = 8
    frames: int = 4
    lr: float = 1.5e-3
    weight_decay: float = 1e-4
    seed: int = 0
    threads: int = 2
    loader_workers: int = 1  # processes preparing batches (Tier 2 is made on the fly)
    # L appearance randomization (issue 8): polarity flip probability, contrast gain range.
    invert_l: float = 0.0
    l_gain: tuple[float, float] = (1.0, 1.0)
    # ... applied to these sources ("tier2" are real thermal stills, where warm = person holds)
    randomized_sources: tuple[str, ...] = ("tier1", "negative", "tier2")
    # Share of samples whose L is flattened to each frame's mean (motion channels only): the
    # network must find people from motion alone there, not lean on what they look like.
    l_dropout: float = 0.0
    # Share of samples mirrored left-right (emts.train.data.mirror); 0: none, as in every model
    # trained before 2026-12-01.
    mirror: float = 0.0
    # Standing people: below this ground speed (frame px/frame) a person is an ignore region.
    still_speed: float = 0.0
    # Residual-level normalization of every training frame as the runtime Detector does
    # (emts.stages.b_channels.normalize_residual_level; e.g. RESIDUAL_REFERENCE = 0.0095); 0: Stage
    # B's channels as they are -- the shipped recipe: measured, two models trained with it (the
    # shipped recipe; candidate C's) lost person12 AP@0.25 against the shipped model normalized at
    # run time only (0.535 -> 0.189 / 0.359), see docs/history.md "Real footage".
    residual_reference: float = 0.0
    # The NETWORK frame the detector is trained at and runs at (issue 8 part 3): the paper's
    # 256x192, or e.g. 384x288 (people 1.5x taller in network px); the exported model's fixed
    # input size tells the runtime. ``crop``: train on random windows of this size (whole
    # stride-8 cells) of the network-size channels -- the same per-step cost as 256x192;
    # None trains on whole frames.
    network_size: tuple[int, int] = (256, 192)
    crop: tuple[int, int] | None = None
    model: DetectorConfig = field(default_factory=DetectorConfig)
    # Weight of the log-size L1 in eq. 6. The paper's 0.1 is CenterNet's, whose size head
    # regresses pixels (errors of several px); on log-size (errors of ~0.3) it leaves the size
    # term ~2 % of the total (runs/i_c26: 0.032 of 1.55); its boxes regress to the mean size.
    # 1.0 measured (reports/real/candidates/k_size_weight.md): better boxes, lower RGB recall.
    size_weight: float = 0.1
    # R over this many frames (emts.config.ChannelConfig.residual_baseline; D stays the previous
    # frame's): the sets' frames run through Stages A and B again on load. 1: eq. 2's R.
    residual_baseline: int = 1
    # The single-factor ablations of tab:archablation (``emts ablate``, emts.eval.ablation):
    # False -> Stage B without Stage A's warp in every sample (the sets' frames and Tier 2 run
    # through Stages A and B again on load), the "w/o ego compensation" row
    ego_compensation: bool = True
    # False -> R and D zeroed in every sample (the luminance-only / pure-appearance rows)
    motion_channels: bool = True
    # Phase 1's mixture: the Tier-2 pretraining stage of §4.4 (HIT-UAV pseudo-video only)
    phase1_mixture: dict[str, float] = field(default_factory=lambda: {"tier2": 1.0})

    def phases(self) -> list[tuple[str, int, dict[str, float]]]:
        """(name, steps, mixture) per phase."""
        return [
            (
                "phase1",
                self.phase1_epochs * self.phase1_clips // self.batch_clips,
                self.phase1_mixture,
            ),
            ("phase2", self.phase2_epochs * self.phase2_clips // self.batch_clips, self.mixture),
        ]

    def sources_used(self) -> set[str]:
        """The sources some phase with steps draws from (only those are loaded)."""
        return {
            name
            for _, steps, mixture in self.phases()
            if steps > 0
            for name, weight in mixture.items()
            if weight > 0
        }


def _cosine(step: int, total: int, lr: float) -> float:
    return 0.5 * lr * (1 + math.cos(math.pi * min(step, total) / max(total, 1)))


def train_detector(
    out: str | Path,
    tier1: str | Path,
    negatives: str | Path,
    hituav: str | Path,
    config: TrainConfig | None = None,
    device: str = "cpu",
    checkpoint_every: int = 100,
) -> dict:
    """Train, writing ``out/checkpoint.pt``, ``model.pt``, ``metrics.json``, ``curves.png``.

    Resumes from ``out/checkpoint.pt`` when it exists. Returns the metrics dictionary.
    """
    config = config or TrainConfig()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if device == "cuda" and not torch.cuda.is_available():
        raise BadInputError("--device cuda: no CUDA device is available")
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    # No OpenCV worker pool in this process: a clip set at another network size runs Stages
    # A and B here, and the batch-loader processes forked later would inherit the pool's
    # locks without its threads and hang in their first parallel OpenCV call.
    cv2.setNumThreads(1)
    model = MicroDetector(config.model).to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    size = tuple(config.network_size)
    stage_b = {
        "network_size": size,
        "residual_baseline": config.residual_baseline,
        "ego_compensation": config.ego_compensation,
    }
    makers = {
        "tier1": lambda: StoredClips(
            tier1, "tier1", progress=tqdm, still_speed=config.still_speed, **stage_b
        ),
        "negative": lambda: StoredClips(negatives, "negative", progress=tqdm, **stage_b),
        "tier2": lambda: Tier2Stills(hituav, **stage_b),
    }
    used = config.sources_used()
    sources = {name: make() for name, make in makers.items() if name in used}
    state = run_phases(
        model, optimizer, sources, config.phases(), config, out, device, checkpoint_every
    )
    torch.save(
        {"model": model.state_dict(), "config": asdict(config.model), "network_size": size},
        out / "model.pt",
    )
    metrics = {
        "config": asdict(config),
        "device": device,
        "train_seconds": round(state["seconds"], 1),
        "final": state["history"][-1] if state["history"] else None,
        "history": state["history"],
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    plot_curves(state["history"], out / "curves.png")
    return metrics


def run_phases(
    model: MicroDetector,
    optimizer: torch.optim.Optimizer,
    sources: dict[str, object],
    phases: list[tuple[str, int, dict[str, float]]],
    config: TrainConfig,
    out: Path,
    device: str = "cpu",
    checkpoint_every: int = 100,
    freeze_bn: bool = False,
    tag: dict | None = None,
) -> dict:
    """Run ``phases`` ((name, steps, mixture) each) on batches drawn from ``sources``, with
    cosine learning-rate decay per phase, checkpointing to ``out/checkpoint.pt`` and resuming
    from it. ``freeze_bn`` keeps BatchNorm statistics fixed (fine-tuning a folded model).
    ``tag``: what the run is (stored in the checkpoint; a checkpoint of another tag is refused).
    Returns the training state (``history``, ``seconds``).

    A signal (SIGINT, SIGTERM, SIGHUP) lands between steps: the checkpoint of the steps done so
    far is written (model, optimizer, step, torch's RNG) before the interrupt goes on up.
    Batches are drawn from a stream seeded by the step, so a resumed run draws the same
    batches from there on whatever run it resumes."""
    from emts.io import signals_held

    state = {"phase": 0, "step": 0, "history": [], "seconds": 0.0, "tag": tag}
    checkpoint = out / CHECKPOINT
    if checkpoint.exists():
        state = resume_state(checkpoint, model, optimizer, device, tag)
    for phase_index in range(state["phase"], len(phases)):
        name, steps, mixture = phases[phase_index]
        stream = MixtureStream(
            sources,
            mixture,
            config.batch_clips,
            config.frames,
            seed=config.seed * 100 + phase_index * 10 + state["step"],
            invert=config.invert_l,
            gain=tuple(config.l_gain),
            randomized=tuple(config.randomized_sources),
            residual_reference=config.residual_reference,
            crop=None if config.crop is None else tuple(config.crop),
            l_dropout=config.l_dropout,
            mirror=config.mirror,
            motion_channels=config.motion_channels,
        )
        loader = torch.utils.data.DataLoader(
            stream,
            batch_size=None,
            num_workers=config.loader_workers,
            persistent_workers=False,
            prefetch_factor=4 if config.loader_workers else None,
            worker_init_fn=_ignore_ctrl_c if config.loader_workers else None,
        )
        batches = iter(loader)
        bar = tqdm(  # a bar on a terminal; plain lines (below) in a log file
            range(state["step"], steps),
            desc=f"train {name}",
            unit="step",
            initial=state["step"],
            total=steps,
            disable=None,
        )
        lines = _ProgressLines(f"train {name}", state["step"], steps, enabled=bar.disable)
        window: list[dict[str, float]] = state.pop("window", [])
        started = time.perf_counter()
        model.train()
        if freeze_bn:
            freeze_batch_norm(model)
        try:
            for step in bar:
                with signals_held():  # a step is done whole or not at all
                    batch = {k: v.to(device) for k, v in next(batches).items()}
                    for group in optimizer.param_groups:
                        group["lr"] = _cosine(step, steps, config.lr)
                    x = batch["x"].contiguous(memory_format=torch.channels_last)
                    if model.config.tsm != "none":  # TSM: shift along each sample's frames
                        x = x.unflatten(0, (-1, config.frames))
                    outputs = model(x)
                    loss, parts = detector_loss(outputs, batch, {"size": config.size_weight})
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
                    optimizer.step()
                    window.append({"loss": float(loss.detach()), **parts})
                    if (step + 1) % 20 == 0 or step + 1 == steps:
                        mean = {k: float(np.mean([w[k] for w in window])) for k in window[0]}
                        state["history"].append(
                            {
                                "phase": name,
                                "step": step + 1,
                                "lr": optimizer.param_groups[0]["lr"],
                                **mean,
                            }
                        )
                        bar.set_postfix(loss=f"{mean['loss']:.3f}")
                        window = []
                    state["step"] = step + 1
                    if (step + 1) % checkpoint_every == 0 or step + 1 == steps:
                        state["seconds"] += time.perf_counter() - started
                        started = time.perf_counter()
                        _save_checkpoint(model, optimizer, {**state, "window": window}, checkpoint)
                lines.update(step + 1, state["history"])
        except KeyboardInterrupt:
            with signals_held():  # a second signal must not cut the checkpoint short
                bar.close()
                state["seconds"] += time.perf_counter() - started
                _save_checkpoint(model, optimizer, {**state, "window": window}, checkpoint)
            raise
        bar.close()
        state["phase"], state["step"] = phase_index + 1, 0
        _save_checkpoint(model, optimizer, state, checkpoint)
    state.pop("window", None)
    return state


def resume_state(
    checkpoint: Path, model, optimizer, device: str = "cpu", tag: dict | None = None
) -> dict:
    """Load ``checkpoint`` into ``model`` and ``optimizer`` (and torch's RNG); return its
    training state. One that does not fit (another architecture, another ``tag``) is bad
    input, and is kept for the user to look at: never deleted or overwritten here."""
    out = checkpoint.parent
    remedy = f"delete it to start this run over, or train into another --out than {out}"
    saved = read_saved(checkpoint, "training checkpoint", remedy, device)
    try:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        state = saved["state"]
        if missing := {"phase", "step", "history", "seconds"} - set(state):
            raise KeyError(", ".join(sorted(missing)))
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else "no details"
        raise BadInputError(
            f"{checkpoint} does not fit this run ({type(error).__name__}: {reason}); {remedy}"
        ) from None
    if state.get("tag") != tag:
        raise BadInputError(f"{checkpoint} is another run's checkpoint; {remedy}")
    if "rng" in saved:
        torch.set_rng_state(saved["rng"])
    return state


def _ignore_ctrl_c(_worker: int) -> None:
    """A batch-loader process leaves Ctrl-C to the main process, which ends the run between
    steps (the terminal sends SIGINT to the whole process group: a loader that died of it
    would fail the step instead)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _ProgressLines:
    """Progress where no bar is drawn (a log file): a line on stderr every 5 % of the steps,
    with the loss and an estimate of the time left. Quiet (``emts -q``) writes none."""

    def __init__(self, name: str, first: int, total: int, enabled: bool) -> None:
        import logging

        quiet = logging.getLogger("emts").getEffectiveLevel() > logging.WARNING
        self.name, self.first, self.total = name, first, total
        self.enabled = bool(enabled) and not quiet
        self.every = max(1, total // 20)
        self.started = time.perf_counter()

    def update(self, done: int, history: list[dict]) -> None:
        if not self.enabled or (done % self.every and done != self.total):
            return
        import sys

        per_step = (time.perf_counter() - self.started) / max(1, done - self.first)
        loss = f", loss {history[-1]['loss']:.3f}" if history else ""
        left = per_step * (self.total - done)
        print(
            f"{self.name}: step {done}/{self.total}{loss}, {per_step:.2f} s/step, "
            f"about {_duration(left)} left",
            file=sys.stderr,
            flush=True,
        )


def _duration(seconds: float) -> str:
    """``seconds`` for a person: 40 s, 3 min 20 s, 1 h 5 min."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _save_checkpoint(model, optimizer, state: dict, checkpoint: Path) -> None:
    """Write the checkpoint whole or not at all: to a side file, then renamed over the last
    one (a run killed mid-write leaves the previous checkpoint, not a truncated one)."""
    partial = checkpoint.with_name(checkpoint.name + ".partial")
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "state": state,
            "rng": torch.get_rng_state(),
        },
        partial,
    )
    os.replace(partial, checkpoint)


def plot_curves(history: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not history:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(history)) * 20
    for key in ("loss", "heatmap", "size", "offset", "embedding"):
        axes[0].plot(x, [h[key] for h in history], label=key)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("step (both phases)")
    axes[0].set_title("training losses (20-step means)")
    axes[0].legend()
    axes[1].plot(x, [h["lr"] for h in history])
    axes[1].set_title("learning rate")
    phase_change = next((i for i, h in enumerate(history) if h["phase"] == "phase2"), None)
    if phase_change:
        for ax in axes:
            ax.axvline(phase_change * 20, color="gray", ls="--")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
