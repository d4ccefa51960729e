"""How much of a frame is compiled work (OpenCV, onnxruntime, LiteRT) and how much is the
Python around it: the floor a compiled rewrite of the glue alone could reach.

Issue 11 asks for YOLOv8n / EMTS >= 30x (`emts bench --peer-yolo`). This runs `emts bench`'s
clip and pipeline (Stages A-E, the shipped fp32 models, auto-lock on the clip's walker) with a
timer around every OpenCV function and every model run that `Pipeline.step` calls, and splits
each stage's time into those calls ("native") and the rest ("glue": the Python and the small
numpy operations between them). A call is charged to the stage of the module that makes it
(emts.stages.a_ego_motion, the front end and its preprocessing: A; b_channels: B; c_detect: C;
d_track, appearance, own_target, acquisition and the pipeline: D; e_verify: E). numpy's own
compiled work counts as glue (one line of Python each); the area resize's matrix products, the
bulk of it, are reported on their own line.

The timers add ~1 us a call (~40 calls a frame). Figures are means over the frames (stage
times as `Pipeline.step` records them; `emts bench` prints medians). With ``--peer-yolo
MODEL.onnx`` the frames run as `emts bench --peer-yolo` runs them (one round: each step
followed by one run of the peer model, not timed here) and it prints the ratio now and the
ratio the pipeline would reach with no glue at all (the peer's median over the mean of our
native calls).

    python benchmarks/native_share.py --frames 600 --out DIR [--peer-yolo /tmp/yolov8n.onnx]
        [--model thermal]

With ``--clip VIDEO --lock X,Y,W,H[@F]`` it runs a user's clip instead (as `emts bench --peers`
does: the frames decoded first, untimed; the pipeline locked on the box, no auto-lock), e.g. the
1280x720 real drone clip of issue 55 (``benchmarks/resize_clip.py`` makes one from an image
folder):

    python benchmarks/native_share.py --clip /tmp/p12_720.mp4 --lock 490,235,34,85 --fps 10 \
        --frames 240 --out reports/speed/native_720p
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import sys
import time
from pathlib import Path

import cv2

from emts.precision import named_model

# the stage a module's calls are charged to, by the longest matching name prefix
STAGE_OF_MODULE = {
    "emts.stages.a_ego_motion": "A",
    "emts.front_end": "A",
    "emts.preprocess": "A",  # the frame to gray and letterboxed: the front end's first step
    "emts.geometry": "A",  # (the letterbox's resize and border)
    "emts.stages.b_channels": "B",
    "emts.stages.c_detect": "C",
    "emts.stages.appearance": "D",
    "emts.stages.own_target": "D",  # (Stage C's colour evidence calls it too: charged to D)
    "emts.stages.d_track": "D",
    "emts.stages.acquisition": "D",
    "emts.pipeline": "D",
    "emts.stages.e_verify": "E",
}


def stage_of(module: str) -> str:
    """The stage of a calling module's ``__name__`` ("?" outside the stages)."""
    found = [prefix for prefix in STAGE_OF_MODULE if module.startswith(prefix)]
    return STAGE_OF_MODULE[max(found, key=len)] if found else "?"


CV2_CALLS = (
    "goodFeaturesToTrack",
    "calcOpticalFlowPyrLK",
    "estimateAffinePartial2D",
    "findHomography",
    "phaseCorrelate",
    "resize",
    "warpPerspective",
    "warpAffine",
    "GaussianBlur",
    "boxFilter",
    "calcOpticalFlowFarneback",
    "cartToPolar",
    "matchTemplate",
    "minMaxLoc",
    "dilate",
    "erode",
    "transform",
    "perspectiveTransform",
    "norm",
    "getAffineTransform",
    "cvtColor",
    "remap",
    "copyMakeBorder",
)

# bar labels (draw)
SHORT = {
    "calcOpticalFlowPyrLK": "LK",
    "goodFeaturesToTrack": "corners",
    "estimateAffinePartial2D": "similarity",
    "findHomography": "homography",
    "calcOpticalFlowFarneback": "Farneback",
    "matchTemplate": "NCC",
    "warpAffine": "warp",
    "warpPerspective": "warp",
    "GaussianBlur": "blur",
    "onnxruntime run": "network",
    "LiteRT run": "network",
}


class CallTimer:
    """Times wrapped calls made while :attr:`active`, charged to (stage, call name)."""

    def __init__(self) -> None:
        self.active = False
        self.seconds: collections.Counter = collections.Counter()
        self.calls: collections.Counter = collections.Counter()

    def wrap(self, function, name: str):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            if not self.active:
                return function(*args, **kwargs)
            key = (stage_of(sys._getframe(1).f_globals.get("__name__", "")), name)
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[key] += time.perf_counter() - start
                self.calls[key] += 1

        return timed


def instrument(timer: CallTimer) -> None:
    """Wrap OpenCV's calls, onnxruntime's and LiteRT's runs and the area resize."""
    import onnxruntime as ort

    from emts.stages import b_channels as channels

    for name in CV2_CALLS:
        if hasattr(cv2, name):
            setattr(cv2, name, timer.wrap(getattr(cv2, name), name))
    ort.InferenceSession.run = timer.wrap(ort.InferenceSession.run, "onnxruntime run")
    # the area resize's two matrix products (numpy, compiled): Stage B's largest piece
    channels._AreaShrink.__call__ = timer.wrap(channels._AreaShrink.__call__, "area resize")
    try:
        from emts import litert

        litert.LiteRTSession.run = timer.wrap(litert.LiteRTSession.run, "LiteRT run")
    except (ImportError, AttributeError):
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--model",
        type=named_model,
        help="detector as on emts bench (e.g. thermal; default: the shipped one)",
    )
    parser.add_argument("--peer-yolo", type=Path, help="a YOLO ONNX to interleave (one round)")
    parser.add_argument("--clip", help="a video or image folder instead of the bench's clip")
    parser.add_argument("--lock", help="--clip: the box X,Y,W,H[@FRAME] the pipeline locks on")
    parser.add_argument("--fps", type=float, help="--clip: its frame rate (default: its own)")
    parser.add_argument("--rounds", type=int, default=1, help="--clip: passes over the frames")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.clip is not None and (args.lock is None or args.peer_yolo is not None):
        parser.error("--clip needs --lock, and does not take --peer-yolo")

    timer = CallTimer()
    instrument(timer)
    from emts import pipeline
    from emts.apps.bench import run_bench

    step = pipeline.Pipeline.step
    counted = {"frames": 0}
    stage_ms: collections.Counter = collections.Counter()  # summed over the timed frames

    def timed_step(self, frame):
        timer.active = counted["frames"] >= args.warmup
        counted["frames"] += 1
        start = time.perf_counter()
        try:
            result = step(self, frame)
        finally:
            elapsed = time.perf_counter() - start
            if timer.active:
                stage_ms.update({**result.ms, "total": elapsed * 1e3})
            timer.active = False
        return result

    pipeline.Pipeline.step = timed_step
    if args.peer_yolo:
        from emts.apps.peer import run_peer

        peer = run_peer(
            args.peer_yolo,
            args.frames,
            args.warmup,
            args.threads,
            rounds=1,
            model=args.model,
        )
        frames = args.frames
    elif args.clip is not None:
        peer = None
        frames = run_clip(args, counted)
    else:
        peer = None
        report = run_bench(
            frames=args.frames,
            warmup=args.warmup,
            threads=args.threads,
            model=args.model,
        )
        frames = report["frames"]
    # means (the calls are summed): a stage's glue is its mean time less its calls' mean
    stages = {s: ms / frames for s, ms in stage_ms.items() if s != "total"}
    native = collections.defaultdict(float)
    calls = []
    for (stage, name), seconds in timer.seconds.most_common():
        ms = seconds / frames * 1e3
        native[stage] += ms
        calls.append(
            {
                "stage": stage,
                "call": name,
                "ms_per_frame": round(ms, 4),
                "calls_per_frame": round(timer.calls[stage, name] / frames, 2),
            }
        )
    total = stage_ms["total"] / frames
    native_total = sum(native.values())
    rows = {
        stage: {
            "stage_ms": None if stage not in stages else round(stages[stage], 4),
            "native_ms": round(native.get(stage, 0.0), 4),
            "glue_ms": round(stages[stage] - native.get(stage, 0.0), 4)
            if stage in stages
            else None,
        }
        for stage in sorted(set(stages) | set(native))
    }
    # Pipeline.step's own work between the stages' timers (glue)
    between = total - sum(stages.values())
    rows["between"] = {
        "stage_ms": round(between, 4),
        "native_ms": 0.0,
        "glue_ms": round(between, 4),
    }
    out = {
        "clip": args.clip or "emts bench's gusty clip",
        "lock": args.lock,
        "frames": frames,
        "threads": args.threads,
        "model": args.model or "shipped (default)",
        "total_mean_ms": round(total, 4),
        "native_ms_per_frame": round(native_total, 4),
        "native_share": round(native_total / total, 3),
        "stages": rows,
        "calls": calls,
    }
    print(f"{frames} frames, {args.threads} threads; mean frame {total:.3f} ms (means below)")
    print(f"{'stage':<6}{'ms':>11}{'native':>9}{'glue':>9}")
    for stage, row in rows.items():
        stage_ms = "-" if row["stage_ms"] is None else f"{row['stage_ms']:.3f}"
        glue = "-" if row["glue_ms"] is None else f"{row['glue_ms']:.3f}"
        print(f"{stage:<6}{stage_ms:>11}{row['native_ms']:>9.3f}{glue:>9}")
    print(f"native calls {native_total:.3f} ms a frame = {out['native_share']:.0%} of the frame")
    for call in calls[:16]:
        print(
            f"  {call['stage']} {call['call']:<26}{call['ms_per_frame']:>8.3f} ms"
            f"{call['calls_per_frame']:>7.2f} calls"
        )
    if peer is not None:
        round_ = peer["rounds"][0]
        out["peer"] = {"model": peer["peer"], **round_, "ratio": round(round_["ratio"], 2)}
        out["ratio_without_glue"] = round(round_["peer_ms"] / native_total, 1)
        print(
            f"peer {peer['peer']} {round_['peer_ms']:.1f} ms, ours {round_['emts_ms']:.3f} ms "
            f"(medians): ratio {round_['ratio']:.1f}x now, {out['ratio_without_glue']}x "
            "with no glue at all"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "native_share.json").write_text(json.dumps(out, indent=1) + "\n")
    draw(out, args.out / "native_share.png")
    print(f"wrote {args.out / 'native_share.json'} and native_share.png")
    return 0


def run_clip(args, counted: dict) -> int:
    """Step a fresh pipeline (no auto-lock, locked on ``--lock``) over ``--clip``'s frames,
    ``--rounds`` times, each round's first ``--warmup`` frames untimed (``counted["frames"]``:
    the step counter the timer reads); return the number of timed frames."""
    from emts.apps.bench import build_runner, set_threads
    from emts.apps.peer_bench import user_clip
    from emts.apps.track import LockRequest

    lock = LockRequest.parse(args.lock, "--lock")
    clip = user_clip(args.clip, lock, args.warmup + args.frames, args.fps)
    frames = list(clip.frames())
    set_threads(args.threads)
    runner, _ = build_runner(
        model=args.model, precision=None, threads=args.threads, auto_lock=False
    )
    timed = 0
    for _ in range(args.rounds):
        runner.reset()
        runner.fps = clip.fps
        runner.lock(lock.x, lock.y, box=lock.box)
        counted["frames"] = 0
        for frame in frames:
            runner.step(frame)
        timed += max(len(frames) - args.warmup, 0)
    return timed


def draw(out: dict, path: Path) -> None:
    """One bar per stage: its compiled calls (labelled where wide enough), then its glue
    (grey); the whole frame below, with the 30x budget where a peer was timed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [s for s in out["stages"] if s != "?"]
    labels = [*rows, "frame"]
    fig, ax = plt.subplots(figsize=(11, 0.7 * len(labels) + 1.6))
    colours = plt.get_cmap("tab20").colors
    for y, stage in enumerate(rows):
        left = 0.0
        calls = [c for c in out["calls"] if c["stage"] == stage]
        for i, call in enumerate(calls):
            width = call["ms_per_frame"]
            ax.barh(y, width, left=left, color=colours[i % len(colours)], edgecolor="white")
            if width >= 0.025 * out["total_mean_ms"]:  # narrow ones written upright
                upright = width < 0.09 * out["total_mean_ms"]
                name = SHORT.get(call["call"], call["call"])
                ax.text(
                    left + width / 2, y, name, ha="center", va="center",
                    fontsize=6 if upright else 7, rotation=90 if upright else 0,
                )  # fmt: skip
            left += width
        glue = out["stages"][stage]["glue_ms"] or 0.0
        ax.barh(y, max(glue, 0.0), left=left, color="0.85", hatch="//", edgecolor="0.6")
    y = len(rows)
    native = out["native_ms_per_frame"]
    ax.barh(y, native, color="tab:blue", label="compiled calls (OpenCV, onnxruntime, resize)")
    ax.barh(
        y, out["total_mean_ms"] - native, left=native, color="0.85", hatch="//", edgecolor="0.6",
        label="glue (Python, small numpy operations)",
    )  # fmt: skip
    if "peer" in out:
        budget = out["peer"]["peer_ms"] / 30.0
        ax.axvline(budget, color="tab:red", linestyle="--", label=f"30x budget ({budget:.2f} ms)")
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("ms per frame (mean)")
    title = f"Where a frame goes: {out['native_share']:.0%} compiled calls"
    if "peer" in out:
        title += (
            f"; YOLOv8n / EMTS {out['peer']['ratio']:.1f}x now, "
            f"{out['ratio_without_glue']}x with no glue at all"
        )
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
