"""CLI soak: `emts track` on a generated long video, watching the process's memory.

A gusty 300-frame clip over a real still is looped forwards and backwards into one long
640x512 video; `emts track` runs on it as a user would (annotated video, JSON lines,
timeline). The resident memory (VmRSS) of the `emts` process is sampled while it runs, and
the frame count is read from the JSON lines as they are flushed. Target (issue 10): every
line written, and RSS at the end within 10 MB of RSS after 1,000 frames.

Usage: python benchmarks/soak_cli.py [--frames 100000] [--json benchmarks/out/soak_cli.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
from tqdm import tqdm

from emts.synth.still_clip import gusty_clip

EARLY_FRAME = 1000
TARGET_GROWTH_MB = 10.0


def rss_mb(pid: int) -> float | None:
    """VmRSS of a process in MB, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        return None
    return None


def write_video(path: Path, frames: int) -> None:
    clip = gusty_clip(300, seed=5)
    loop = clip.frames + clip.frames[::-1]  # forwards and backwards: no jump at the seam
    height, width = loop[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 30, (width, height))
    for index in tqdm(range(frames), desc="video", unit="frame", mininterval=2):
        writer.write(cv2.cvtColor(loop[index % len(loop)], cv2.COLOR_GRAY2BGR))
    writer.release()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--json", default="benchmarks/out/soak_cli.json")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("--workdir", help="keep the video and outputs here (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.frames <= EARLY_FRAME:
        parser.error(f"--frames must exceed {EARLY_FRAME}")
    with tempfile.TemporaryDirectory(prefix="emts-soak-") as scratch:
        work = Path(args.workdir or scratch)
        work.mkdir(parents=True, exist_ok=True)
        video, jsonl = work / "long.mp4", work / "track.jsonl"
        write_video(video, args.frames)
        emts = Path(sys.executable).parent / "emts"
        command = [str(emts), "track", str(video), "--jsonl", str(jsonl)]
        command += ["--out", str(work / "annotated.mp4"), "--timeline", str(work / "t.png")]
        start = time.perf_counter()
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        samples: list[tuple[int, float]] = []  # (frames written, RSS MB)
        lines, offset = 0, 0
        while True:
            running = process.poll() is None
            memory = rss_mb(process.pid) if running else None
            if jsonl.is_file():
                with open(jsonl, "rb") as stream:
                    stream.seek(offset)
                    chunk = stream.read()
                complete = chunk.rfind(b"\n") + 1  # only whole lines
                lines += chunk[:complete].count(b"\n")
                offset += complete
            if memory is not None:
                samples.append((lines, round(memory, 2)))
            if not running:
                break
            time.sleep(args.interval)
        seconds = time.perf_counter() - start
        _, err = process.communicate()
        numbers = [json.loads(line)["frame"] for line in jsonl.read_text().splitlines()]
    every_line = numbers == list(range(args.frames))
    early = next((m for n, m in samples if n >= EARLY_FRAME), None)
    late = samples[-1][1] if samples else None
    growth = None if early is None or late is None else round(late - early, 2)
    report = {
        "frames": args.frames,
        "exit_code": process.returncode,
        "lines_written": len(numbers),
        "every_line_written": every_line,
        "seconds": round(seconds, 1),
        "frames_per_second": round(args.frames / seconds, 1),
        f"rss_mb_after_{EARLY_FRAME}_frames": early,
        "rss_mb_at_end": late,
        "rss_mb_peak": max((m for _, m in samples), default=None),
        "rss_growth_mb": growth,
        "target_met": bool(every_line and growth is not None and growth <= TARGET_GROWTH_MB),
        "summary": err.strip().splitlines()[-8:],
        "samples": samples[:: max(1, len(samples) // 400)],
    }
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=1))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0 if report["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
