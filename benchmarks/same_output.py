"""Record what the CLI's jobs output on fixed inputs, and compare two records: the check that a
refactor changed no behaviour ("identical JSON lines before and after").

    python benchmarks/same_output.py record --out /tmp/before     # at the old commit
    python benchmarks/same_output.py record --out /tmp/after      # at the new one
    python benchmarks/same_output.py compare /tmp/before /tmp/after

Each job's JSON lines are kept with their timing fields (``ms``, ``latency``, ...) removed;
every other value must match exactly. The jobs: ``emts track`` on uav123-person12 (a tap at
its first labelled box; auto-lock), ``emts detect`` and ``emts channels`` on it, ``emts
demo`` (a synthetic thermal clip with a gust and an occlusion) and ``emts detect`` /
``emts track`` on the demo's gray video (the thermal model), ``emts eval track`` on
person12 with a forced occlusion.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CLIP = SHARED / "data" / "uav123-person12"
TIMING_KEYS = {"ms", "latency", "latency_ms", "elapsed_s", "seconds", "fps_measured", "wall_s"}


def _emts() -> str:
    return str(Path(sys.executable).with_name("emts"))


def _first_box() -> str:
    line = (CLIP / "groundtruth_rect.txt").read_text().splitlines()[0]
    return ",".join(f"{float(v):g}" for v in line.split(","))


def jobs(out: Path) -> dict[str, list[str]]:
    """Job name -> command line (each writes ``out/NAME.jsonl`` or a folder)."""
    frames = str(CLIP / "frames" / "00000*.jpg")  # frames 1-9 of the clip, for cheap jobs
    clip = str(CLIP / "frames")
    demo = out / "demo"
    return {
        "demo": [_emts(), "demo", "--out-dir", str(demo)],
        "track_tap": [_emts(), "track", clip, "--fps", "10", "--lock", f"{_first_box()}@0"],
        "track_auto": [_emts(), "track", clip, "--fps", "10", "--lock", "auto"],
        "detect": [_emts(), "detect", clip, "--fps", "10"],
        "channels": [_emts(), "channels", frames, "--fps", "10", "--no-video"],
        "detect_thermal": [_emts(), "detect", str(demo / "input.mp4")],
        "track_thermal": [_emts(), "track", str(demo / "input.mp4"), "--lock", "auto"],
        "eval_track": [
            _emts(), "eval", "track", clip, "--fps", "10",
            "--gt", str(CLIP / "groundtruth_rect.txt"), "--occlude", "80:99", "--gust", "3",
        ],
    }  # fmt: skip


def strip_timing(value):
    if isinstance(value, dict):
        return {k: strip_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [strip_timing(v) for v in value]
    return value


def record(out: Path, only: list[str] | None) -> int:
    out.mkdir(parents=True, exist_ok=True)
    todo = {k: v for k, v in jobs(out).items() if not only or k in only}
    for name, command in tqdm(todo.items(), desc="jobs", unit="job"):
        jsonl = out / f"{name}.jsonl"
        if name == "demo":
            shutil.rmtree(out / "demo", ignore_errors=True)
            run = subprocess.run(command, capture_output=True, text=True)
            if (out / "demo" / "track.jsonl").is_file():
                shutil.copy(out / "demo" / "track.jsonl", jsonl)
        elif name == "eval_track":
            report = out / "eval_track"
            shutil.rmtree(report, ignore_errors=True)
            run = subprocess.run([*command, "--out", str(report)], capture_output=True, text=True)
            if (report / "frames.jsonl").is_file():
                shutil.copy(report / "frames.jsonl", jsonl)
        else:
            jsonl.unlink(missing_ok=True)  # emts track keeps an earlier run's file unless --force
            run = subprocess.run([*command, "--jsonl", str(jsonl)], capture_output=True, text=True)
        (out / f"{name}.rc").write_text(f"{run.returncode}\n{run.stderr[-2000:]}")
        print(f"{name}: rc {run.returncode}", flush=True)
    return 0


def _lines(path: Path) -> list:
    text = path.read_text() if path.is_file() else ""
    try:
        return [strip_timing(json.loads(line)) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError:
        return [strip_timing(json.loads(text))]


def compare(a: Path, b: Path) -> int:
    left_names, right_names = {p.stem for p in a.glob("*.rc")}, {p.stem for p in b.glob("*.rc")}
    for name in sorted(left_names ^ right_names):
        print(f"{name}: recorded in {a if name in left_names else b} only")
    differ = 0
    for name in sorted(left_names & right_names):
        left, right = _lines(a / f"{name}.jsonl"), _lines(b / f"{name}.jsonl")
        rc = [(d / f"{name}.rc").read_text().split("\n")[0] for d in (a, b)]
        if left == right and rc[0] == rc[1]:
            print(f"{name}: identical ({len(left)} lines, rc {rc[0]})")
            continue
        differ += 1
        first = next(
            (i for i, (x, y) in enumerate(zip(left, right, strict=False)) if x != y),
            min(len(left), len(right)),
        )
        print(f"{name}: DIFFERENT (lines {len(left)} / {len(right)}, rc {rc}; first at {first})")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run every job into --out")
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--only", nargs="*", help="job names (default: all)")
    cmp_ = sub.add_parser("compare", help="compare two recorded folders")
    cmp_.add_argument("a", type=Path)
    cmp_.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.out, args.only)
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
