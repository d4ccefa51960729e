"""EMTS beside the trackers a user would pick instead (OpenCV's VitTrack and NanoTrack v2), on
the real person12 clip, under `emts eval track`'s scorer and stress protocols, in one run.

Every run goes through :func:`emts.eval.track_eval.evaluate_track` (the scorer of `emts eval
track`: lock recall, false-lock frames, hidden spans and recovery) with the same
:class:`~emts.eval.track_eval.TrackEvalConfig` for the three trackers; only the ``pipeline``
differs: EMTS is ``Pipeline.default(auto_lock=False)`` (what `emts eval track` runs with the
shipped models), a peer is a :class:`~emts.apps.peer_trackers.PeerTracker` around its ``cv2``
tracker (the adapter, the weight layout and the factories are the package's, shared with
``emts bench --peers``). Each run gets a fresh tracker; on each protocol EMTS runs first, then
the peers.

Protocols (person12 frames 0-200, the labelled ones, at 10 fps; lock on frame 0):

* ``box``: the lock is the true box of frame 0 (the peers' best case);
* ``tap``: a tap at the true centre of frame 0. A peer needs a box: it gets the box EMTS's tap
  lock derived, i.e. EMTS's target box on frame 0 of the same protocol's EMTS run (EMTS locks
  at once on the person under the tap, :mod:`emts.stages.acquisition`);
* ``occludeA:B``: the person behind a scene-anchored inpainted patch on frames A..B (10, 20
  and 30 frames from frames 60, 110 and 150; nine runs), tap;
* ``removeA:B``: the person cut out of frames A..B, as if out of view (the same spans), tap;
* ``gustS``: the clip warped along the gusty camera path of seed S (1, 2, 3), tap;
* ``leaveP``: leave-and-return path P (1-5, one group each): a 2x zoomed-in camera window
  follows the person, pans until they leave the view (1: left edge, 2: right edge, 3: top
  edge, 4: top-left corner, 5: top-right corner), goes around out of view and brings them
  back elsewhere (1, 2: top edge; 3, 4: left edge; 5: right edge), tap;
* ``lookalikeA:B``: a copy of the person crosses them on frames A..B (40:70, 100:130 and
  160:190; three runs, group ``lookalike``), tap;
* ``shadeF``: a tap at frame F (200, 230, 260), scored to frame 299 on our labels of frames
  202-300 (``benchmarks/labels/``; ``--no-labels``: not run): the canopy's shade, sunlit
  stripes and the walker's long shadow, frames no part of EMTS was tuned on;
* ``follow``, ``follow-occludeA:B``, ``follow-removeA:B``: the tap at frame 0 held to frame 299
  (our labels of 202-300 as above), plain, hidden on frames 210-229 and cut out of frames
  250-269: a follow half as long again as the others. Stage D's stabilized frame is the
  lock frame's, and its scale drifts with the camera's zoom since (the ground looms as the
  drone follows: x3 by frame 200, x8 by frame 299), so the tracker's distances (gates, search
  radii, walking speeds) widen in the image the longer a follow lasts.

Per run: lock recall, false-lock frames, frames ``locked`` while the person is hidden,
recovery (frames from the reappearance to the next locked hit; None: never) and the mean ms
of the tracker's ``step`` calls (only those are timed; the stress tests and the scorer are
not); for a look-alike run the frames the target was on the copy and whether the crossing
ended locked on the person. NanoTrack v3 is not run: ``cv2.TrackerNano`` cannot run it (its
head gives a 15x15 score map, OpenCV expects 16x16).

The weights are read from ``--peers`` (``../shared/peers``), never copied. Writes
OUT/peers.json, OUT/README.md and OUT/peers.png. About 7 minutes on 2 cores.

    python benchmarks/peers_track.py [--clip ../shared/data/uav123-person12]
        [--peers ../shared/peers] [--out reports/peers] [--quick] [--no-labels]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from emts.apps.peer_trackers import (
    NOT_RUN,
    PEER_FILES,
    PeerSetupError,
    PeerTracker,
    peer_factories,
)

FPS = 10.0  # person12 is UAV123's 10-fps subsampling
LAST_FRAME = 200  # frames 0-200 are labelled
SPAN_STARTS = (60, 110, 150)
SPAN_LENGTHS = (10, 20, 30)
GUST_SEEDS = (1, 2, 3)
LEAVE_PATHS = (1, 2, 3, 4, 5)  # emts.eval.track_stress.LEAVE_PATHS 1-5 fit person12
LOOKALIKE_SPANS = ((40, 70), (100, 130), (160, 190))
# a tap on the walker cut by an edge of a 2x window (`--enter EDGE`) at these frames, scored
# ENTER_FRAMES on (the window cannot cut person12's walker, in the frame's upper half, by its
# bottom edge, nor by its right edge before frame ~145); the runs past frame 200 need our labels
ENTER_TAPS = {"left": (0, 60, 120), "top": (0, 60, 120), "right": (150, 175, 200)}
ENTER_FRAMES = 80
# frames 200-299 (our labels, benchmarks/labels/: never tuned on): the canopy's shade and the
# walker's long shadow; a tap at each of these frames, scored to frame 299
SHADE_TAPS = (200, 230, 260)
SHADE_LAST = 299
# the tap at frame 0 held to SHADE_LAST: plain, hidden and cut out on these frames
FOLLOW_OCCLUDE = (210, 229)
FOLLOW_REMOVE = (250, 269)
EMTS = "EMTS"
TRACKERS = (EMTS, *PEER_FILES)
GROUPS = (
    "box",
    "tap",
    "occlude",
    "remove",
    "gust",
    *(f"leave{p}" for p in LEAVE_PATHS),
    "enter",
    "lookalike",
    "shade",
    "follow",
)
COLOURS = {EMTS: "tab:green", "VitTrack": "tab:blue", "NanoTrack v2": "tab:orange"}


# ----------------------------------------------------------------------------- timing
class Timed:
    """A pipeline whose ``step`` calls are timed (``seconds``, one per frame)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.seconds: list[float] = []

    @property
    def fps(self):
        return self.inner.fps

    @fps.setter
    def fps(self, value) -> None:
        self.inner.fps = value

    def lock(self, x: float, y: float, box=None) -> None:
        self.inner.lock(x, y, box=box)

    def step(self, frame: np.ndarray):
        start = time.perf_counter()
        result = self.inner.step(frame)
        self.seconds.append(time.perf_counter() - start)
        return result


@dataclass(frozen=True)
class Protocol:
    name: str
    group: str  # one of GROUPS
    options: dict  # TrackEvalConfig fields beyond the lock frame and the frames


def protocols(truth: np.ndarray, quick: bool = False) -> list[Protocol]:
    """The runs: plain with the true box and with a tap; then (unless ``quick``) the
    occlusions, the removals, the gusts, the leave-and-return paths, the taps on a walker
    cut by the view's edge and the look-alike crossings, each from the tap."""
    out = [
        Protocol("box", "box", {"lock_box": tuple(float(v) for v in truth[0])}),
        Protocol("tap", "tap", {}),
    ]
    if quick:
        return out
    spans = [(a, a + n - 1) for a in SPAN_STARTS for n in SPAN_LENGTHS]
    out += [Protocol(f"occlude{a}:{b}", "occlude", {"occlude": ((a, b),)}) for a, b in spans]
    out += [Protocol(f"remove{a}:{b}", "remove", {"remove": ((a, b),)}) for a, b in spans]
    out += [Protocol(f"gust{s}", "gust", {"gust": s}) for s in GUST_SEEDS]
    out += [Protocol(f"leave{p}", f"leave{p}", {"leave": p}) for p in LEAVE_PATHS]
    out += [
        Protocol(
            f"enter-{edge}{f}",
            "enter",
            {"enter": edge, "lock_frame": f, "first": f, "last": f + ENTER_FRAMES},
        )
        for edge, taps in ENTER_TAPS.items()
        for f in taps
        if f + ENTER_FRAMES < len(truth)
    ]
    out += [
        Protocol(f"lookalike{a}:{b}", "lookalike", {"lookalike": ((a, b),)})
        for a, b in LOOKALIKE_SPANS
    ]
    if len(truth) > SHADE_LAST:
        out += [
            Protocol(f"shade{f}", "shade", {"lock_frame": f, "first": f, "last": SHADE_LAST})
            for f in SHADE_TAPS
        ]
        a, b = FOLLOW_OCCLUDE
        c, d = FOLLOW_REMOVE
        out += [
            Protocol("follow", "follow", {"last": SHADE_LAST}),
            Protocol(
                f"follow-occlude{a}:{b}", "follow", {"last": SHADE_LAST, "occlude": ((a, b),)}
            ),
            Protocol(f"follow-remove{c}:{d}", "follow", {"last": SHADE_LAST, "remove": ((c, d),)}),
        ]
    return out


# ----------------------------------------------------------------------------- runs
def summarize_run(report: dict, seconds: list[float]) -> dict:
    """The figures of one run from the scorer's report and the step times."""
    rows = report["per_frame"]
    spans = report["hidden_spans"]
    return {
        "lock_recall": report["lock_recall"],
        "visible_frames": report["visible_frames"],
        "false_lock_frames": report["false_lock_frames"],
        "locked_while_hidden": sum(r["hidden"] and r["mode"] == "locked" for r in rows),
        "recovery_frames": [s["recovery_frames"] for s in spans],
        "locked_frames_after_vanishing": [s["locked_frames_after_vanishing"] for s in spans],
        "span_ok": [s["ok"] for s in spans],
        "frames_on_copy": [s["frames_on_copy"] for s in report["lookalike_spans"]],
        "ended_on_person": [s["ended_on_person"] for s in report["lookalike_spans"]],
        # the scorer counts a hit by the box whatever the mode: EMTS's coasting box in
        # "reacquire" can count, a peer that reports a loss has no box
        "hits_not_locked": sum(r["hit"] and r["mode"] != "locked" for r in rows),
        "centre_error_median_px": report["centre_error_px"]["median"],
        # the box's fit (emts.eval.track_eval.box_overlap): 0 where not locked
        "success_auc": report["box_overlap"]["success_auc"],
        "iou_median_on_hits": report["box_overlap"]["iou_median_on_hits"],
        "size_ratio_on_hits": report["box_overlap"]["size_ratio_on_hits"],
        "lost_events": report["lost_events"],
        "relock_events": report["relock_events"],
        "lock_box": rows[0]["box"] if rows else None,
        "ms_mean": round(1000 * float(np.mean(seconds)), 3),
        "ms_median": round(1000 * float(np.median(seconds)), 3),
        "frames_timed": len(seconds),
    }


def run_protocol(
    protocol: Protocol, frames: Path, truth: np.ndarray, factories, tracker=None
) -> dict:
    """EMTS, then each peer (a fresh tracker each) on one protocol: name -> figures
    (``tracker``: EMTS's Stage D parameters, None: the defaults)."""
    from emts.eval.track_eval import TrackEvalConfig, evaluate_track
    from emts.pipeline import Pipeline
    from emts.stages.d_track.tracker import TargetTracker

    frames_and_lock = {"lock_frame": 0, "first": 0, "last": LAST_FRAME, **protocol.options}
    config = TrackEvalConfig(fps=FPS, **frames_and_lock)
    pipeline = Pipeline.default(auto_lock=False)
    if tracker is not None:
        pipeline.tracker = TargetTracker(tracker)
    emts = Timed(pipeline)
    report = evaluate_track(frames, truth, config, emts)
    out = {EMTS: summarize_run(report, emts.seconds)}
    # EMTS's target on the lock frame; where its tap found nothing, the true box as delivered
    # (a peer needs a box to start from)
    first = report["per_frame"][0]
    tap_box = tuple(first["box"] if first["box"] is not None else first["truth"])
    for name, make in factories.items():
        peer = Timed(PeerTracker(make, name, tap_box=tap_box))
        out[name] = summarize_run(evaluate_track(frames, truth, config, peer), peer.seconds)
    if config.lock_box is not None:  # the clip's label: reports may be shared, labels not
        for figures in out.values():
            figures["lock_box"] = "the true box of frame 0"
    return out


def timing(runs: dict[str, dict]) -> dict[str, dict]:
    """Per tracker: mean ms a frame over every run (frame-weighted) and the ratio to EMTS."""
    out = {}
    for name in TRACKERS:
        rows = [r[name] for r in runs.values()]
        frames = sum(r["frames_timed"] for r in rows)
        ms = sum(r["ms_mean"] * r["frames_timed"] for r in rows) / max(frames, 1)
        out[name] = {"ms_mean": round(ms, 2), "frames": frames}
    for name in TRACKERS:
        out[name]["ratio_to_emts"] = round(out[name]["ms_mean"] / out[EMTS]["ms_mean"], 3)
    return out


def group_figures(runs: dict[str, dict], groups: dict[str, str]) -> dict[str, dict]:
    """Per protocol group and tracker: runs, mean lock recall, false-lock frames (sum and mean),
    locked-while-hidden frames (sum), spans recovered / spans; look-alike crossings: frames on
    the copy (sum), crossings that ended locked on the person / crossings."""
    out = {}
    for group in dict.fromkeys(groups.values()):
        names = [n for n, g in groups.items() if g == group]
        out[group] = {}
        for tracker in TRACKERS:
            rows = [runs[n][tracker] for n in names]
            recoveries = [v for r in rows for v in r["recovery_frames"]]
            ended = [v for r in rows for v in r.get("ended_on_person", [])]
            out[group][tracker] = {
                "runs": len(rows),
                "mean_lock_recall": round(float(np.mean([r["lock_recall"] for r in rows])), 4),
                "false_lock_frames": int(sum(r["false_lock_frames"] for r in rows)),
                "mean_false_lock_frames": round(
                    float(np.mean([r["false_lock_frames"] for r in rows])), 2
                ),
                "locked_while_hidden": int(sum(r["locked_while_hidden"] for r in rows)),
                "spans_recovered": sum(v is not None for v in recoveries),
                "spans": len(recoveries),
                "frames_on_copy": int(sum(sum(r.get("frames_on_copy", [])) for r in rows)),
                "crossings_ended_on_person": sum(v is True for v in ended),
                "crossings": len(ended),
                "mean_success_auc": _mean_of(rows, "success_auc"),
                "size_ratio_on_hits": _median_pair(rows),
            }
    return out


def _mean_of(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(float(np.mean(values)), 4) if values else None


def _median_pair(rows: list[dict]) -> list[float] | None:
    """The median over ``rows`` of each run's median box width and height over the truth's."""
    pairs = [r["size_ratio_on_hits"] for r in rows if r.get("size_ratio_on_hits")]
    return [round(float(v), 3) for v in np.median(pairs, axis=0)] if pairs else None


# ----------------------------------------------------------------------------- report
def _recovery(values: list) -> str:
    if not values:
        return "-"
    return ", ".join("never" if v is None else str(v) for v in values)


def _tracker_table(first: str, rows: dict[str, dict], cell) -> list[str]:
    """A markdown table, a column per tracker: one row per ``rows`` item (label -> each
    tracker's figures), each cell ``cell(figures)``."""
    lines = [f"| {first} | " + " | ".join(TRACKERS) + " |", "|---|" + "---|" * len(TRACKERS)]
    for label, figures in rows.items():
        lines.append(f"| {label} | " + " | ".join(cell(figures[t]) for t in TRACKERS) + " |")
    return lines


def _run_cell(r: dict) -> str:
    if r.get("ended_on_person"):
        return (
            f"{r['lock_recall']:.3f} / {r['false_lock_frames']} / "
            f"copy {sum(r['frames_on_copy'])} / "
            + ", ".join("held" if v else "lost" for v in r["ended_on_person"])
        )
    return (
        f"{r['lock_recall']:.3f} / {r['false_lock_frames']} / "
        f"{r['locked_while_hidden'] if r['recovery_frames'] else '-'} / "
        f"{_recovery(r['recovery_frames'])}"
    )


def _group_cell(g: dict) -> str:
    if g.get("crossings"):
        return (
            f"{g['mean_lock_recall']:.3f} / {g['false_lock_frames']} / "
            f"copy {g['frames_on_copy']} / "
            f"{g['crossings_ended_on_person']} of {g['crossings']} held"
        )
    spans = f"{g['spans_recovered']} of {g['spans']}" if g["spans"] else "-"
    hidden = g["locked_while_hidden"] if g["spans"] else "-"
    return f"{g['mean_lock_recall']:.3f} / {g['false_lock_frames']} / {hidden} / {spans}"


def _fit_cell(g: dict) -> str:
    ratio = g.get("size_ratio_on_hits")
    shape = "-" if not ratio else f"{ratio[0]:.2f}, {ratio[1]:.2f}"
    return f"{g.get('mean_success_auc')} / {shape}"


def write_markdown(summary: dict, path: Path) -> None:
    runs, times, groups = summary["runs"], summary["timing"], summary["groups"]
    cell = "lock recall / false-lock frames / locked while hidden / recovery"
    lines = [
        "# EMTS beside the peer trackers on person12"
        + (" in gray (a monochrome camera)" if summary.get("clip", "").endswith("(gray)") else ""),
        "",
        "EMTS (`Pipeline.default(auto_lock=False)`, the shipped models), OpenCV's VitTrack and "
        "NanoTrack v2, scored by `emts eval track`'s scorer under its stress protocols, in one "
        "run, on uav123-person12 frames 0-200 at 10 fps, lock on frame 0. `box`: locked on the "
        "true box; all others: a tap at the true centre (the peers, which need a box, get the box "
        "EMTS derived from the tap). Occlusions are scene-anchored inpainted patches; removals cut "
        "the person out (out of view); gusts warp the clip along a gusty camera path; leave paths "
        "are a 2x zoomed-in window that pans the person out of view through one edge and back "
        "through another (`emts eval track --leave P`); enter runs tap the walker cut by the left, "
        "top or right edge of such a window, which then pans to frame them, scored over the "
        f"{ENTER_FRAMES} frames after (`--enter EDGE`); look-alikes paste a copy of the person "
        "walking across them (`--lookalike A:B`); shade runs tap at frame 200, 230 or 260 and "
        "are scored to frame 299 on our labels of frames 202-300 (`benchmarks/labels/`, frames "
        "nothing was tuned on: the canopy's shade, sunlit stripes, the walker's long shadow); "
        "follow runs hold the tap of frame 0 to frame 299 (plain, hidden on frames 210-229, cut "
        "out of frames 250-269): a follow half as long again as the others.",
        "",
        f"`{summary['command']}` at commit `{summary['commit'][:12]}` on "
        f"{summary['machine']['cpu']} ({summary['machine']['cores']} cores), OpenCV "
        f"{summary['opencv']}.",
        "",
        f"Each cell: {cell} (frames from the person's reappearance to the next locked hit; "
        "never: not within the run's last frame). A hit is a box centre within max(20 px, h/2) "
        "of the truth. "
        "Look-alike runs: lock recall / false-lock frames / frames on the copy (the target nearer "
        "the copy than the person, and not a hit) / whether the crossing's last frame was locked "
        "on the person (held) or not (lost).",
        "",
    ]
    lines += _tracker_table("protocol", runs, _run_cell)
    by_group = {f"{group} ({figures[EMTS]['runs']})": figures for group, figures in groups.items()}
    lines += [
        "",
        "By protocol group: mean lock recall / false-lock frames (sum) / locked while hidden "
        "(sum) / spans recovered; look-alikes: mean lock recall / false-lock frames (sum) / "
        "frames on the copy (sum) / crossings held.",
        "",
        *_tracker_table("group (runs)", by_group, _group_cell),
    ]
    fitted = any(g[t].get("mean_success_auc") is not None for g in groups.values() for t in g)
    if fitted:  # (not in a report from before the box's fit was measured)
        lines += [
            "",
            "The box's fit by group: mean success AUC (UAV123's success score: the share of "
            "visible frames whose box overlaps the truth by more than t, averaged over t = 0, "
            "0.05, ..., 1; a frame not `locked` counts 0) / median box width, height over the "
            "person's where locked on them (1.00, 1.00: their size).",
            "",
            *_tracker_table("group (runs)", by_group, _fit_cell),
        ]
    lines += [
        "",
        "Time per frame, measured in this run (mean of the `step` calls over every run, "
        "640x360 input, the same process and threads):",
        "",
        "| tracker | ms / frame | ratio to EMTS |",
        "|---|---|---|",
    ]
    for tracker in TRACKERS:
        t = times[tracker]
        lines.append(f"| {tracker} | {t['ms_mean']:.2f} | {t['ratio_to_emts']:.2f} |")
    lines += ["", "Not run:", ""]
    lines += [f"* {name}: {why}." for name, why in summary["not_run"].items()]
    lines += [
        "",
        "Notes:",
        "",
        "* VitTrack reports a loss when its score falls below 0.20: that frame is `reacquire` "
        "with no box (not a hit); it keeps searching and a confident frame is a relock. "
        "NanoTrack never reports a loss: it stays `locked` on whatever it holds.",
        "* The scorer counts a hit by the box whatever the mode; EMTS's coasting box in "
        "`reacquire` counted in "
        f"{sum(r[EMTS]['hits_not_locked'] for r in runs.values())} frames over all runs.",
        "",
        "![lock recall and false-lock frames per protocol group](peers.png)",
    ]
    path.write_text("\n".join(lines) + "\n")


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = summary["groups"]
    names = list(groups)
    x = np.arange(len(names))
    width = 0.8 / len(TRACKERS)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(9, 1.1 * len(names)), 6.5), sharex=True)
    for i, tracker in enumerate(TRACKERS):
        offset = (i - (len(TRACKERS) - 1) / 2) * width
        recall = [groups[g][tracker]["mean_lock_recall"] for g in names]
        false = [groups[g][tracker]["mean_false_lock_frames"] for g in names]
        label = f"{tracker} ({summary['timing'][tracker]['ms_mean']:.1f} ms/frame)"
        bars = top.bar(x + offset, recall, width, color=COLOURS[tracker], label=label)
        top.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
        bars = bottom.bar(x + offset, false, width, color=COLOURS[tracker], label=label)
        bottom.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
    top.set_ylim(0, 1.3)  # room for the legend above the bars
    top.set_yticks(np.linspace(0, 1, 6))
    top.set_ylabel("lock recall (mean over runs)")
    top.legend(loc="upper center", ncol=len(TRACKERS), fontsize=8)
    top.set_title(
        "person12 frames 0-200: EMTS beside the peer trackers, scored as emts eval track",
        fontsize=10,
    )
    bottom.set_ylabel("false-lock frames (mean a run)")
    bottom.set_ylim(0, max(1.0, bottom.get_ylim()[1] * 1.12))
    labels = [
        f"{g}\n({groups[g][EMTS]['runs']} run{'s' * (groups[g][EMTS]['runs'] > 1)})" for g in names
    ]
    bottom.set_xticks(x, labels)
    bottom.set_xlabel("protocol group (box: locked on the true box; the others: a tap)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "processor": platform.processor(), "cores": os.cpu_count()}


def commit() -> str:
    here = Path(__file__).resolve().parent
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", default="../shared/data/uav123-person12", type=Path)
    parser.add_argument("--peers", default="../shared/peers", type=Path)
    parser.add_argument("--out", default="reports/peers", type=Path)
    parser.add_argument("--quick", action="store_true", help="the plain protocols only")
    parser.add_argument(
        "--groups",
        type=lambda text: text.split(","),
        metavar="G[,G...]",
        help=f"only these protocol groups (of {', '.join(GROUPS)})",
    )
    parser.add_argument(
        "--no-labels",
        action="store_true",
        help="without our labels of frames 202-300 (benchmarks/labels/): no shade or follow runs",
    )
    parser.add_argument(
        "--gray",
        action="store_true",
        help="the clip in gray (a monochrome camera; EMTS picks its thermal model by itself)",
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="the clip's frames resized by this factor (bicubic) and its labels with them: "
        "the same scene at another resolution (2: person12 at its camera's 1280x720)",
    )
    parser.add_argument(
        "--jpeg",
        type=int,
        default=None,
        metavar="QUALITY",
        help="the frames re-encoded once at this JPEG quality and read back: a perturbed copy "
        "(person12's figures move with the input's exact values: reports/real/resolution)",
    )
    parser.add_argument(
        "--tracker",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a TrackerConfig field for EMTS (repeatable; e.g. refind_colour_relative=true): a "
        "candidate's figures beside the peers'",
    )
    parser.add_argument(
        "--mp4",
        action="store_true",
        help="the frames (after --scale, --jpeg) through an mp4 (mp4v) and decoded back: the "
        "copy benchmarks/resize_clip.py makes for emts track and the speed runs",
    )
    args = parser.parse_args(argv)
    if args.scale <= 0 or (args.jpeg is not None and not 1 <= args.jpeg <= 100):
        print("error: --scale must be > 0 and --jpeg 1-100", file=sys.stderr)
        return 2
    from demo_seeds import tracker_config

    tracker = tracker_config(args.tracker) if args.tracker else None
    try:
        factories = peer_factories(args.peers)
    except PeerSetupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    truth_path = args.clip / "groundtruth_rect.txt"
    if not truth_path.is_file() or not (args.clip / "frames").is_dir():
        print(f"error: {args.clip}: not the uav123-person12 folder", file=sys.stderr)
        return 2
    import cv2

    from emts.eval.track_eval import read_ground_truth

    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)
    truth = read_ground_truth(truth_path)
    if not args.no_labels:  # frames 202-300, labelled by us (benchmarks/labels/)
        sys.path.insert(0, str(Path(__file__).resolve().parent / "labels"))
        from person12_gt import full_ground_truth

        truth = full_ground_truth(args.clip)
    truth = truth * args.scale
    todo = protocols(truth, args.quick)
    if args.groups:
        unknown = sorted(set(args.groups) - set(GROUPS))
        if unknown:
            print(
                f"error: --groups {','.join(unknown)}: not one of {', '.join(GROUPS)}",
                file=sys.stderr,
            )
            return 2
        todo = [p for p in todo if p.group in args.groups]
    runs = {}
    with tempfile.TemporaryDirectory() as scratch:
        frames = args.clip / "frames"
        if args.gray or args.scale != 1.0 or args.jpeg is not None or args.mp4:
            frames = prepared_frames(
                frames, Path(scratch), args.gray, args.scale, args.jpeg, args.mp4
            )
        for protocol in tqdm(todo, desc="peers_track", unit="protocol"):
            runs[protocol.name] = run_protocol(protocol, frames, truth, factories, tracker)
    groups = {p.name: p.group for p in todo}
    summary = {
        "command": " ".join(["python", "benchmarks/peers_track.py", *argv]),
        "commit": commit(),
        "machine": machine(),
        "opencv": cv2.__version__,
        "clip": args.clip.name
        + (" (gray)" if args.gray else "")
        + (f" (x{args.scale:g})" if args.scale != 1.0 else "")
        + (f" (JPEG {args.jpeg})" if args.jpeg is not None else "")
        + (" (through mp4)" if args.mp4 else ""),
        "frames": [0, LAST_FRAME],
        "fps": FPS,
        "emts_tracker": args.tracker,
        "trackers": list(TRACKERS),
        "not_run": NOT_RUN,
        "protocols": {p.name: {"group": p.group, **_jsonable(p.options)} for p in todo},
        "timing": timing(runs),
        "groups": group_figures(runs, groups),
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peers.json").write_text(json.dumps(summary, indent=1))
    write_markdown(summary, args.out / "README.md")
    plot(summary, args.out / "peers.png")
    for group, figures in summary["groups"].items():
        print(
            f"{group}: "
            + "; ".join(
                f"{t} recall {f['mean_lock_recall']:.3f} false {f['false_lock_frames']}"
                for t, f in figures.items()
            )
        )
    print(
        "ms/frame: "
        + ", ".join(
            f"{t} {v['ms_mean']:.2f} (x{v['ratio_to_emts']:.2f})"
            for t, v in summary["timing"].items()
        )
    )
    print(f"wrote {args.out}/peers.json, README.md, peers.png")
    return 0


def prepared_frames(
    folder: Path,
    into: Path,
    gray: bool = False,
    scale: float = 1.0,
    jpeg: int | None = None,
    mp4: bool = False,
) -> Path:
    """The clip's frames in ``into``, lossless (PNG): in gray (OpenCV's weights) if ``gray``,
    resized by ``scale`` (bicubic), re-encoded once at JPEG quality ``jpeg`` and read back if
    given, and through an mp4 (OpenCV's mp4v at its default quality, as
    ``benchmarks/resize_clip.py`` writes one) and decoded back if ``mp4`` (into three channels,
    as a video file decodes: a gray clip's a few levels apart); every tracker reads them as
    they read the clip's own."""
    import cv2

    paths = sorted(folder.glob("*.jpg"))
    video = writer = None
    if mp4:
        video = into / "clip.mp4"
    for path in tqdm(paths, desc="frames", unit="frame"):
        image = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE if gray else cv2.IMREAD_COLOR)
        if image is None:
            raise SystemExit(f"error: {path}: unreadable")
        if scale != 1.0:
            size = (round(image.shape[1] * scale), round(image.shape[0] * scale))
            image = cv2.resize(image, size, interpolation=cv2.INTER_CUBIC)
        if jpeg is not None:
            encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, jpeg])[1]
            image = cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED)
        if video is None:
            cv2.imwrite(str(into / (path.stem + ".png")), image)
            continue
        if writer is None:
            fourcc = cv2.VideoWriter_fourcc(*"mp4v")
            size = (image.shape[1], image.shape[0])
            writer = cv2.VideoWriter(str(video), fourcc, FPS, size, image.ndim == 3)
        writer.write(image)
    if video is not None and writer is not None:
        writer.release()
        capture = cv2.VideoCapture(str(video))
        for path in paths:
            ok, image = capture.read()
            if not ok:
                raise SystemExit(f"error: {video}: ended before {path.name}")
            # (kept as decoded: three channels, a gray video's a few levels apart, as every
            # tracker reads a user's video file)
            cv2.imwrite(str(into / (path.stem + ".png")), image)
        capture.release()
        video.unlink()
    return into


def _jsonable(options: dict) -> dict:
    """A protocol's options for the JSON, without the clip's label (the true lock box)."""
    lock = "the true box" if "lock_box" in options else "a tap at the true centre"
    out = {"lock": f"{lock} of frame 0"}
    for key, value in options.items():
        if key in ("occlude", "remove", "lookalike"):
            out[key] = [list(v) for v in value]
        elif key != "lock_box":
            out[key] = value
    return out


if __name__ == "__main__":
    raise SystemExit(main())
