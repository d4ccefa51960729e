"""The lock on uav123-person12, every run the README quotes: `emts eval track` per run, one summary.

Runs (person12 frames 0-200 at 10 fps, the shipped models unless --model / --verifier):

* ``tap``: the tap at frame 0; taps at 25 / 50 / 100 / 150; gust seeds 1-15 from the tap at
  frame 0; the person cut out at 150:165; occluded at 40:55, 100:125, 60:90 (24 runs);
* ``auto``: auto-lock from frame 0 (no tap), plain and gust seeds 1-15 (16 runs);
* ``heldout``: the tap at frame 0 under gust seeds 16-30 (15 runs), kept out of the tuning of
  Stage D since 2026-11-27 (night): check a change shaped on the ``tap`` runs here, once;
* ``offset``: an operator's imprecise finger: taps a quarter of the person's width and/or
  height off the label's centre, in 8 directions, at frames 0 / 50 / 100 / 150 (32 runs).

``all`` runs ``tap`` and ``auto``.

Each run is the CLI command (its report lands in OUT/<suite>/<run>/). Writes OUT/summary.json
(per run: lock recall, false-lock frames, centre error, first lock, recovery frames, the
verifier's share of verified classifications; per suite: the sums the README quotes) and
OUT/summary.png. About 3 minutes on 2 cores.

    python benchmarks/real_clip_locks.py --clip ../shared/data/uav123-person12 --out /tmp/locks
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

GUSTS = range(1, 16)
HELD_OUT_GUSTS = range(16, 31)
OFFSET_FRAMES = (0, 50, 100, 150)
OFFSET = 0.25  # of the person's width / height
DIRECTIONS = [(dx, dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dx or dy]


def runs(suite: str, truth: np.ndarray | None = None) -> dict[str, list[str]]:
    """Run name -> the `emts eval track` options of that run (``truth``: the label rows
    ``x, y, w, h``, for the ``offset`` suite)."""
    if suite == "heldout":
        return {f"gust{g}": ["--gust", str(g)] for g in HELD_OUT_GUSTS}
    if suite == "offset":
        out = {}
        for f in OFFSET_FRAMES:
            x, y, w, h = truth[f]
            for dx, dy in DIRECTIONS:
                tap = f"{x + w / 2 + OFFSET * w * dx:.1f},{y + h / 2 + OFFSET * h * dy:.1f}@{f}"
                out[f"f{f}{dx:+d}{dy:+d}"] = ["--lock", tap, "--frames", f"{f}:200"]
        return out
    if suite == "auto":
        out = {"plain": []}
        out.update({f"gust{g}": ["--gust", str(g)] for g in GUSTS})
        return {name: ["--frames", "0:200", "--lock", "auto", *args] for name, args in out.items()}
    out = {"tap0": []}
    out.update(
        {f"tap{f}": ["--lock-gt", str(f), "--frames", f"{f}:200"] for f in (25, 50, 100, 150)}
    )
    out.update({f"gust{g}": ["--gust", str(g)] for g in GUSTS})
    out["remove150"] = ["--remove", "150:165"]
    out.update(
        {f"occlude{a}": ["--occlude", f"{a}:{b}"] for a, b in ((40, 55), (100, 125), (60, 90))}
    )
    return out


def one(clip: Path, out: Path, options: list[str], extra: list[str]) -> dict:
    emts = Path(sys.executable).with_name("emts")  # this environment's command line
    command = [str(emts) if emts.is_file() else shutil.which("emts") or "emts"]
    command += ["eval", "track", str(clip / "frames")]
    command += ["--gt", str(clip / "groundtruth_rect.txt"), "--fps", "10", "--out", str(out)]
    done = subprocess.run([*command, *options, *extra], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command + options + extra)}: {done.stderr.strip()[-300:]}")
    report = json.loads((out / "report.json").read_text())
    spans = report.get("hidden_spans") or []
    return {
        "lock_recall": report["lock_recall"],
        "false_lock_frames": report["false_lock_frames"],
        "centre_error_median_px": report["centre_error_px"]["median"],
        "first_lock_frame": report["first_lock_frame"],
        "recovery_frames": [s.get("recovery_frames") for s in spans],
        "share_verified": (report.get("p_human") or {}).get("share_verified"),
    }


def summarize(rows: dict[str, dict]) -> dict:
    recall = [r["lock_recall"] for r in rows.values()]
    false = [r["false_lock_frames"] for r in rows.values()]
    verified = [r["share_verified"] for r in rows.values() if r["share_verified"] is not None]
    return {
        "runs": len(rows),
        "mean_lock_recall": round(float(np.mean(recall)), 3),
        "min_lock_recall": round(float(np.min(recall)), 3),
        "false_lock_frames": int(sum(false)),
        # the hidden-span runs count up to lost_grace (8) frames still locked after the person
        # vanished, which the issue allows; these are the others'
        "false_lock_frames_runs_without_hidden_span": int(
            sum(r["false_lock_frames"] for r in rows.values() if not r["recovery_frames"])
        ),
        "runs_with_false_lock_frames": int(sum(f > 0 for f in false)),
        "mean_share_verified": round(float(np.mean(verified)), 3) if verified else None,
    }


def plot(results: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(12, 3.2 * len(results)), squeeze=False)
    for ax, (suite, rows) in zip(axes[:, 0], results.items(), strict=True):
        names = list(rows)
        x = np.arange(len(names))
        ax.bar(x, [rows[n]["lock_recall"] for n in names], color="tab:green", label="lock recall")
        ax.set_ylim(0, 1.05)
        ax.set_xticks(x, names, rotation=60, fontsize=8)
        ax.set_ylabel("lock recall")
        twin = ax.twinx()
        twin.plot(x, [rows[n]["false_lock_frames"] for n in names], "o", color="tab:red")
        twin.set_ylabel("false-lock frames (red)")
        ax.set_title(f"person12, {suite}: " + json.dumps(summarize(rows)), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", default="../shared/data/uav123-person12", type=Path)
    parser.add_argument("--out", default="benchmarks/out/real_clip_locks", type=Path)
    parser.add_argument(
        "--suite", choices=["tap", "auto", "heldout", "offset", "all"], default="all"
    )
    parser.add_argument("--model", help="detector (default: the shipped one)")
    parser.add_argument("--verifier", help="verifier (default: the shipped one)")
    args = parser.parse_args(argv)
    if not (args.clip / "groundtruth_rect.txt").is_file():
        print(f"{args.clip}: not the uav123-person12 folder (no groundtruth_rect.txt)")
        return 2
    extra = (["--model", args.model] if args.model else []) + (
        ["--verifier", args.verifier] if args.verifier else []
    )
    suites = ["tap", "auto"] if args.suite == "all" else [args.suite]
    truth = np.loadtxt(args.clip / "groundtruth_rect.txt", delimiter=",", ndmin=2)
    results: dict[str, dict] = {}
    todo = [(s, n, o) for s in suites for n, o in runs(s, truth).items()]
    for suite, name, options in tqdm(todo, desc="person12 runs", unit="run"):
        results.setdefault(suite, {})[name] = one(
            args.clip, args.out / suite / name, options, extra
        )
    summary = {
        "clip": str(args.clip),
        "models": {"detector": args.model or "shipped", "verifier": args.verifier or "shipped"},
        "suites": {s: summarize(rows) for s, rows in results.items()},
        "runs": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    plot(results, args.out / "summary.png")
    for suite, figures in summary["suites"].items():
        print(f"{suite}: {figures}")
    print(f"wrote {args.out}/summary.json, summary.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
