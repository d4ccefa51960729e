"""Per-stage latency of the runtime at 640x512 input (``emts bench``).

Frames come from a gusty clip over the packaged real still, so Stage A sees realistic
texture and motion. Every stage's time is recorded per frame; the total is measured around
the whole per-frame call (not summed), after a warm-up.
"""

from __future__ import annotations

import time

import cv2
import numpy as np
from tqdm import tqdm

from emts.front_end import MotionFrontEnd
from emts.stages.c_detect.detector import Detector, default_model_path
from emts.synth.still_clip import gusty_clip


def set_threads(threads: int) -> None:
    """Limit OpenCV's worker threads (onnxruntime sessions take theirs at creation)."""
    cv2.setNumThreads(threads)


def _summary(values_ms: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(float(np.median(values_ms)), 4),
        "p90_ms": round(float(np.percentile(values_ms, 90)), 4),
    }


def build_runner(
    model: str | None,
    precision: str | None,
    threads: int,
    detector_mode: str = "temporal",
    backend: str | None = None,
    network_size: tuple[int, int] | None = None,
    warp_at: str | None = None,
    coarse_pass: bool = True,
    auto_lock: bool = True,
):
    """(the pipeline :func:`run_bench` times, the model files it runs): Stages A-E with the detector
    ``model`` or the shipped one of ``precision`` and ``backend``; Stages A and B without one.
    ``warp_at``: Stage B's warp for the detector (:class:`emts.config.ChannelConfig`; None: the
    model's own); ``coarse_pass``: as :func:`emts.stages.c_detect.stage.detector_stage`;
    ``auto_lock``: the pipeline locks on its own (False: only on :meth:`Pipeline.lock`)."""
    from emts.apps.detect import check_run_size
    from emts.config import ChannelConfig
    from emts.stages.b_channels import default_reference_for

    channel_config = None if warp_at is None else ChannelConfig(warp_at=warp_at)
    if model is None and not default_model_path().is_file():
        return MotionFrontEnd(channel_config=channel_config), {}
    from emts.litert import backend_of
    from emts.pipeline import Pipeline
    from emts.precision import model_for
    from emts.stages.c_detect.stage import detector_stage
    from emts.stages.e_verify import Verifier
    from emts.stages.e_verify import default_model_path as verifier_path

    verifier, models = None, {}
    if verifier_path().is_file():
        verifier_file = model_for("verifier", None, precision, 1, backend)
        verifier, models["verifier"] = Verifier(verifier_file, threads=1), verifier_file.name
    detector_file = model_for("detector", model, precision, threads, backend)
    detector = Detector(
        detector_file,
        threads=threads,
        network_size=network_size,
        residual_reference=None if warp_at is None else default_reference_for(warp_at),
    )
    check_run_size(detector)
    models["detector"] = detector.path.name
    models["backend"] = backend_of(detector.path)
    models["detector mode"] = detector_mode
    models["network size"] = "x".join(map(str, detector.network_size))
    models["stage B warp"] = warp_at or detector.stage_b_warp
    if detector.residual_baseline > 1:
        models["R over frames"] = str(detector.residual_baseline)
    stage = detector_stage(detector, detector_mode, coarse_pass)
    coarse = getattr(stage, "coarse", None)
    models["coarse pass"] = "x".join(map(str, coarse.network_size)) if coarse else "none"
    pipeline = Pipeline(
        stage, verifier, auto_lock=auto_lock, threads=threads, channel_config=channel_config
    )
    return pipeline, models


def run_bench(
    frames: int = 300,
    warmup: int = 30,
    threads: int = 2,
    seed: int = 0,
    model: str | None = None,
    precision: str | None = None,
    detector_mode: str = "temporal",
    backend: str | None = None,
    network_size: tuple[int, int] | None = None,
    warp_at: str | None = None,
    pace: float | None = None,
    coarse_pass: bool = True,
) -> dict:
    """Time the runtime stages over ``frames`` frames after ``warmup`` frames.

    With a detector (``model`` or the shipped one) the whole pipeline runs -- Stages A-E, the
    tracker auto-locking on the clip's walker and the verifier classifying every 8th frame
    (Stage E is timed only if a verifier model is shipped); without one, Stages A and B.
    Decoding and drawing are not timed. ``precision`` (fp32 | int8 | auto) picks the shipped
    detector and verifier files (:mod:`emts.precision`) of ``backend`` (onnxruntime |
    litert); None: the shipped fp32 ONNX models. ``network_size``: Stages B and C at that
    size (None: the detector's own); ``warp_at``: Stage B's warp (``network``, the paper's, or
    ``working``; :class:`emts.config.ChannelConfig`; None: the detector's own). ``pace``:
    feed the frames at this rate (frames/s) as a live camera does, the pipeline idle between
    them; None: back to back. An idle CPU is slower to start a frame (caches, clocks,
    sleeping threads): on the 2-core x86 build VM a frame took ~1.5x as long at 30 fps as
    back to back (2026-11-29, two alternating runs each: 4.03 / 4.32 against 2.59 / 2.88 ms,
    Stage A ~2x), so budget a live stream by the paced figure. ``coarse_pass``: as
    :func:`emts.stages.c_detect.stage.detector_stage`.
    """
    if pace is not None and not pace > 0:
        raise ValueError(f"pace must be a positive frame rate, got {pace}")
    set_threads(threads)
    clip = gusty_clip(frames + warmup, seed=seed)
    runner, models = build_runner(
        model, precision, threads, detector_mode, backend, network_size, warp_at, coarse_pass
    )
    per_stage: dict[str, list[float]] = {}
    totals: list[float] = []
    first = time.perf_counter()
    for index, frame in enumerate(tqdm(clip.frames, desc="bench", unit="frame", disable=None)):
        if pace is not None:  # the camera delivers frame ``index`` at first + index / pace
            time.sleep(max(0.0, first + index / pace - time.perf_counter()))
        start = time.perf_counter()
        result = runner.step(frame)
        elapsed = (time.perf_counter() - start) * 1e3
        if index < warmup:
            continue
        totals.append(elapsed)
        for stage, ms in result.ms.items():
            if stage != "total":
                per_stage.setdefault(stage, []).append(ms)
    report = {
        "threads": threads,
        "precision": precision or "fp32",
        "models": models,
        "frames": len(totals),
        "stages": {stage: _summary(values) for stage, values in per_stage.items()},
        "total": _summary(totals),
        "pace_fps": pace,
    }
    if pace is not None:  # frames that overran the camera's frame interval
        report["over_interval"] = int(sum(ms > 1e3 / pace for ms in totals))
    return report


def format_table(report: dict) -> str:
    """Plain-text table of a :func:`run_bench` report."""
    pace = report.get("pace_fps")
    fed = "back to back" if pace is None else f"fed at {pace:g} fps, idle between frames"
    lines = [
        f"threads {report['threads']}, {report['frames']} frames at 640x512, {fed}",
        f"{'stage':<8}{'median ms':>12}{'p90 ms':>10}",
    ]
    for stage, figures in report["stages"].items():
        lines.append(f"{stage:<8}{figures['median_ms']:>12.3f}{figures['p90_ms']:>10.3f}")
    total = report["total"]
    lines.append(f"{'total':<8}{total['median_ms']:>12.3f}{total['p90_ms']:>10.3f}")
    if pace is not None:
        lines.append(
            f"frames over the {1e3 / pace:.3g} ms frame interval: "
            f"{report['over_interval']} of {report['frames']}"
        )
    return "\n".join(lines)
