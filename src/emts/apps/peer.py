"""A peer detector timed beside our pipeline in one run (``emts bench --peer-yolo``, issue 11).

Machines differ 2-3x in speed, so only ratios measured in the same run count. Each round runs
the bench's gusty 640x512 clip frame by frame, interleaving for every frame one end-to-end
step of our pipeline (Stages A-E, everything in :meth:`Pipeline.step`) and one inference of
the peer ONNX model (e.g. YOLOv8n at 640x640: ``session.run`` only -- its resize,
normalization and NMS are *not* timed, which favours the peer). Per round the two medians
give a ratio peer / EMTS; the report is the median of ``rounds`` such ratios.
"""

from __future__ import annotations

import time
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.apps.bench import build_runner, set_threads
from emts.errors import BadInputError
from emts.synth.still_clip import gusty_clip

DEFAULT_ROUNDS = 3
DEFAULT_SIDE = 640  # a peer input with dynamic height/width is fed 640x640


def peer_input(frame: np.ndarray, shape: list) -> np.ndarray:
    """The frame letterboxed (grey border) into the peer's (1, 3, H, W) float [0, 1] input."""
    height = shape[2] if isinstance(shape[2], int) else DEFAULT_SIDE
    width = shape[3] if isinstance(shape[3], int) else DEFAULT_SIDE
    scale = min(width / frame.shape[1], height / frame.shape[0])
    w, h = round(frame.shape[1] * scale), round(frame.shape[0] * scale)
    canvas = np.full((height, width, 3), 114, np.uint8)
    top, left = (height - h) // 2, (width - w) // 2
    colour = frame if frame.ndim == 3 else cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
    canvas[top : top + h, left : left + w] = cv2.resize(colour, (w, h))
    return np.ascontiguousarray(canvas.transpose(2, 0, 1)[None], np.float32) / 255.0


def _peer_session(path: Path, threads: int):
    """The peer's onnxruntime session, its intra-op threads told not to spin-wait after a run
    (spinning threads would steal our pipeline's cores between the interleaved calls)."""
    import onnxruntime as ort

    if not path.is_file():
        raise BadInputError(f"peer model {path} not found")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime raises its own exception types
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else "unknown"
        raise BadInputError(f"peer model {path} cannot be loaded ({reason})") from None


def run_peer(
    peer_model: str | Path,
    frames: int = 300,
    warmup: int = 30,
    threads: int = 2,
    rounds: int = DEFAULT_ROUNDS,
    precision: str | None = None,
    model: str | None = None,
    seed: int = 0,
    backend: str | None = None,
    warp_at: str | None = None,
    block: int = 1,
) -> dict:
    """Interleaved timing of our pipeline (Stage B's warp ``warp_at``; None: the model's own)
    and ``peer_model``; returns medians and ratios. ``block``: frames of each in turn (1, the
    reported protocol: one step, one peer run; more: the pipeline on ``block`` frames, then
    the peer on the same frames, so neither evicts the other's caches between frames)."""
    if block < 1:
        raise BadInputError(f"block must be >= 1, got {block}")
    path = Path(peer_model)
    set_threads(threads)
    peer = _peer_session(path, threads)
    inputs = peer.get_inputs()
    if len(inputs) != 1 or len(inputs[0].shape) != 4:
        raise BadInputError(f"{path}: expected one (1, 3, H, W) image input, got {inputs}")
    runner, models = build_runner(model, precision, threads, backend=backend, warp_at=warp_at)
    if not models:
        raise BadInputError("--peer-yolo compares with the whole pipeline: no detector shipped")
    clip = gusty_clip(frames + warmup, seed=seed)
    feeds = [{inputs[0].name: peer_input(f, inputs[0].shape)} for f in clip.frames]
    per_round = []
    for round_ in range(rounds):
        runner.reset()
        ours, theirs = [], []
        desc = f"peer round {round_ + 1}/{rounds}"
        count = len(clip.frames)
        for first in tqdm(
            range(0, count, block), desc=desc, unit="frame" if block == 1 else "block", disable=None
        ):
            indices = range(first, min(count, first + block))
            for index in indices:
                start = time.perf_counter()
                runner.step(clip.frames[index])
                if index >= warmup:
                    ours.append((time.perf_counter() - start) * 1e3)
            for index in indices:
                start = time.perf_counter()
                peer.run(None, feeds[index])
                if index >= warmup:
                    theirs.append((time.perf_counter() - start) * 1e3)
        emts_ms, peer_ms = float(np.median(ours)), float(np.median(theirs))
        per_round.append(
            {"emts_ms": round(emts_ms, 4), "peer_ms": round(peer_ms, 4), "ratio": peer_ms / emts_ms}
        )
    ratios = [r["ratio"] for r in per_round]
    return {
        "peer": path.name,
        "peer_input": [int(v) for v in feeds[0][inputs[0].name].shape],
        "threads": threads,
        "precision": precision or "fp32",
        "models": models,
        "frames_per_round": frames,
        "block": block,
        "rounds": per_round,
        "ratio_median": float(np.median(ratios)),
    }


def format_peer(report: dict) -> str:
    lines = [
        f"peer {report['peer']} {report['peer_input']} vs EMTS A-E ({report['precision']}), "
        f"threads {report['threads']}, {report['frames_per_round']} frames x "
        f"{len(report['rounds'])} rounds, interleaved "
        + ("per frame" if report.get("block", 1) == 1 else f"in blocks of {report['block']}"),
        f"{'round':<7}{'EMTS ms':>10}{'peer ms':>10}{'peer/EMTS':>11}",
    ]
    for k, r in enumerate(report["rounds"], 1):
        lines.append(f"{k:<7}{r['emts_ms']:>10.3f}{r['peer_ms']:>10.3f}{r['ratio']:>11.1f}")
    lines.append(f"ratio peer / EMTS end-to-end, median of rounds: {report['ratio_median']:.1f}x")
    return "\n".join(lines)
