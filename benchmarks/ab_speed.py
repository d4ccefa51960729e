"""Time the pipeline of an earlier commit and of the working tree in one process, frame by
frame alternating: a speed change measured on a machine whose speed drifts.

On the 2-core build VM the same code took 4.4-7.3 ms a frame from one `emts bench` run to the
next (2026-12-02), which swamps a change of a few per cent; two runs alternating per round
help, one process alternating per frame helps most. This copies ``src/emts`` of ``--base``
(`git archive`) into a scratch folder as the package ``emts_base`` (its imports renamed), builds
the same runner `emts bench` builds from each (Stages A-E, the base's own shipped models), and
feeds both the bench's gusty clip, alternating which goes first on every frame.

    python benchmarks/ab_speed.py --base 5c3165f [--model thermal] [--frames 600] [--rounds 2]

With ``--clip VIDEO --lock X,Y,W,H[@F]`` both run a user's clip instead, locked on the box (no
auto-lock), as ``emts bench --peers`` runs EMTS (e.g. the 1280x720 clip of
``benchmarks/resize_clip.py``); ``--same`` also checks that both give the same modes and boxes.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

_IMPORTS = (
    (re.compile(r"\bfrom emts\b"), "from emts_base"),
    (re.compile(r"\bimport emts\b"), "import emts_base"),
    (re.compile(r"\bemts\.([a-z_]+)"), r"emts_base.\1"),
)


def base_package(revision: str, into: Path) -> Path:
    """``src/emts`` of ``revision`` as the package ``into/emts_base``."""
    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "archive", revision, "src/emts"], cwd=root, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    package = into / "emts_base"
    (into / "src" / "emts").rename(package)
    for path in package.rglob("*.py"):
        text = path.read_text()
        for pattern, replacement in _IMPORTS:
            text = pattern.sub(replacement, text)
        path.write_text(text)
    return package


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="git revision to compare with")
    parser.add_argument("--model", help="detector as on emts bench (e.g. thermal)")
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    parser.add_argument("--clip", help="a video or image folder instead of the gusty clip")
    parser.add_argument("--lock", help="--clip: the box X,Y,W,H[@FRAME] both lock on")
    parser.add_argument("--fps", type=float, help="--clip: its frame rate (default: its own)")
    args = parser.parse_args()
    if (args.clip is None) != (args.lock is None):
        parser.error("--clip and --lock go together")

    with tempfile.TemporaryDirectory() as scratch:
        try:
            base_package(args.base, Path(scratch))
        except subprocess.CalledProcessError as error:
            print(f"ab_speed: cannot read {args.base}: {error.stderr.decode().strip()}")
            return 2
        sys.path.insert(0, scratch)
        try:  # (made just above) the layout since issue 52, then the one before it
            import emts_base.apps.bench as base_bench
        except ModuleNotFoundError:
            import emts_base.bench as base_bench

        import emts.apps.bench as new_bench
        from emts.precision import named_model
        from emts.synth.still_clip import gusty_clip

        model = None if args.model is None else named_model(args.model)
        precision = "fp32" if model else None
        new_bench.set_threads(args.threads)
        locked = args.clip is not None
        options = {"auto_lock": False} if locked else {}
        runners = {
            "base": base_bench.build_runner(model, precision, args.threads, **options)[0],
            "new": new_bench.build_runner(model, precision, args.threads, **options)[0],
        }
        if locked:
            from emts.apps.peer_bench import user_clip
            from emts.apps.track import LockRequest

            lock = LockRequest.parse(args.lock, "--lock")
            clip = user_clip(args.clip, lock, args.frames + args.warmup, args.fps)
            frames = list(clip.frames())
        else:
            frames = list(gusty_clip(args.frames + args.warmup, seed=0).frames)
        times: dict[str, list[float]] = {"base": [], "new": []}
        outputs: dict[str, list] = {"base": [], "new": []}
        for round_ in range(args.rounds):
            for runner in runners.values():
                runner.reset()
                if locked:
                    runner.fps = clip.fps
                    runner.lock(lock.x, lock.y, box=lock.box)
            desc = f"round {round_ + 1}/{args.rounds}"
            for index, frame in enumerate(tqdm(frames, desc=desc, unit="frame", disable=None)):
                order = ("base", "new") if index % 2 else ("new", "base")
                for name in order:
                    start = time.perf_counter()
                    result = runners[name].step(frame)
                    elapsed = (time.perf_counter() - start) * 1e3
                    if round_ == 0:
                        box = None if result.target is None else result.target.box
                        outputs[name].append((result.mode, None if box is None else list(box)))
                    if index >= args.warmup:
                        times[name].append(elapsed)
    report = {
        "base": args.base,
        "model": args.model or "shipped (default)",
        "frames": len(times["new"]),
        "threads": args.threads,
        **{f"{k}_median_ms": round(float(np.median(v)), 4) for k, v in times.items()},
        **{f"{k}_mean_ms": round(float(np.mean(v)), 4) for k, v in times.items()},
        # the slow frames (a lock coasting, a wide search): what a live camera drops
        **{f"{k}_p90_ms": round(float(np.percentile(v, 90)), 4) for k, v in times.items()},
        **{f"{k}_max_ms": round(float(np.max(v)), 4) for k, v in times.items()},
    }
    report["new_over_base_median"] = round(report["new_median_ms"] / report["base_median_ms"], 4)
    report["new_over_base_p90"] = round(report["new_p90_ms"] / report["base_p90_ms"], 4)
    report["clip"] = args.clip or "the bench's gusty clip (auto-lock)"
    other = [
        i for i, (a, b) in enumerate(zip(outputs["base"], outputs["new"], strict=True)) if a != b
    ]
    report["frames_with_other_output"] = len(other)
    report["first_frame_with_other_output"] = other[0] if other else None
    print(
        f"base {args.base}: {report['base_median_ms']:.3f} ms, working tree: "
        f"{report['new_median_ms']:.3f} ms a frame (medians of {report['frames']} frames each, "
        f"alternating); new / base {report['new_over_base_median']:.3f}; p90 "
        f"{report['base_p90_ms']:.2f} -> {report['new_p90_ms']:.2f} ms, max "
        f"{report['base_max_ms']:.1f} -> {report['new_max_ms']:.1f} ms; frames whose mode or "
        f"box differ: {report['frames_with_other_output']} of {len(outputs['new'])}"
        + (f" (the first: frame {other[0]})" if other else "")
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
