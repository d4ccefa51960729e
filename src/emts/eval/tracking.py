"""Tracking protocols (§6.7-6.9): forced-occlusion reacquisition, false positives per frame
with and without the verifier, and auto-lock false locks per hour on person-free footage."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.config import NETWORK_SIZE, AcquisitionConfig
from emts.front_end import MotionFrontEnd, cached_by_sets, network_size_of, stage_b_config
from emts.geometry import WORKING_GEOMETRY, Frame, FrameGeometry, working_geometry
from emts.pipeline import Pipeline, candidates_of
from emts.stages.appearance import AppearanceView
from emts.stages.c_detect.detector import Detection, Detector
from emts.stages.c_detect.stage import DEFAULT_DETECTOR_MODE, detector_stage
from emts.stages.c_detect.temporal import TemporalDetector
from emts.stages.d_track.tracker import TargetTracker
from emts.stages.e_verify import FrameView, Verifier
from emts.synth.clips import ClipSpec, render_clip
from emts.synth.common import CONTRAST_SCALE
from emts.synth.store import ClipSet

RED = (0, 0, 255)  # BGR: a contact sheet's target box

GEOMETRY = WORKING_GEOMETRY  # the paper's NETWORK frame: height bins and the link radius
LOCK_FRAME = 4  # "frame 5" (§6.9), 0-based
BLACKOUTS = ((5, 7), (8, 10), (11, 13))  # staggered forced occlusions (inclusive, 0-based)
CHECK_AFTER = 2  # success is judged two frames after the blackout ends
SUCCESS_RADIUS = 20.0  # px (640x512 frame)
FP_FRAMES = range(4, 18)  # frames 5-18, as the detection bench
THRESHOLDS = (0.3, 0.5, 0.7)
LINK_RADIUS = 16.0  # network px


def _centre(box) -> np.ndarray:
    box = np.asarray(box, float)
    return box[:2] + box[2:] / 2


def _stages_ab(clip, detector) -> tuple[np.ndarray, list[np.ndarray]]:
    """(channels for ``detector``, Stage A's motions) of a stored clip: its cached channels
    at the paper's size and warp, else Stage B run again at the detector's size and warp."""
    size, config = network_size_of(detector), stage_b_config(detector)
    front = MotionFrontEnd(channel_config=config, network_size=size)
    results = [front.step(frame) for frame in clip.frames]
    motions = [r.motion.matrix for r in results]
    if cached_by_sets(size, config):
        return clip.channels, motions
    return np.stack([r.channels for r in results]), motions


def clip_detections(
    detector: Detector, channels: np.ndarray, motions: list, mode: str = DEFAULT_DETECTOR_MODE
) -> list[list[Detection]]:
    """Stage C over one clip's frames in ``mode``: ``plain`` frame by frame, ``temporal`` as a
    stream (:class:`emts.stages.c_detect.temporal.TemporalDetector`; the first frame has no
    motion)."""
    if mode == "plain":
        return [detector(c) for c in channels]
    if mode != "temporal":
        raise ValueError(f"detector mode {mode!r}: the bench evaluations run temporal or plain")
    stage = TemporalDetector(detector)
    geometry = working_geometry(network_size_of(detector))
    return [
        stage.detect_working(c, matrix if index > 0 else None, geometry)
        for index, (c, matrix) in enumerate(zip(channels, motions, strict=True))
    ]


def starts_on_another_person(point: np.ndarray, target: dict, persons: list[dict]) -> bool:
    """Whether ``point`` (a lock's start, working px) lies nearer another labelled person's
    centre than the target's."""
    distance = {p["id"]: float(np.hypot(*(point - _centre(p["box"])))) for p in persons}
    return min(distance, key=distance.get) != target["id"]


def reacquisition(
    bench: str | Path,
    detector: Detector,
    clips: int | None = None,
    appearance: bool = True,
    detector_mode: str = DEFAULT_DETECTOR_MODE,
) -> dict:
    """§6.9: lock at frame 5, black out the target in one of three staggered windows, judge
    two frames later: re-locked (locked again on a measurement after the blackout) and
    within 20 px of the right person (success), re-locked onto another person (identity
    transfer), or neither (miss). ``strict_success_rate`` also demands a detection associated
    on the judged frame itself. A clip whose lock would start on a detection nearer another
    person than the target runs no trial (``locks_started_on_another_person`` counts them).

    ``appearance``: Stage D also gets the frames for its appearance measurement (SPEC §0);
    during the blackout it gets neither detections nor frames. False: detections only, the
    paper's tracker. ``detector_mode``: Stage C's ``temporal`` (default) or ``plain``.
    """
    clip_set = ClipSet(bench)
    geometry = working_geometry(network_size_of(detector))
    indices = clip_set.indices[:clips] if clips else clip_set.indices
    outcome = {
        "trials": 0,
        "success": 0,
        "success_with_detection_on_check_frame": 0,
        "identity_transfer": 0,
        "miss": 0,
        "locks_started_on_another_person": 0,  # clips (3 blackouts each) not run
    }
    by_height: dict[str, list[int]] = {}
    for index in tqdm(indices, desc="eval reacq", disable=None):
        clip = clip_set.load(index)
        labels = clip.labels["frames"]
        persons = [p for p in labels[LOCK_FRAME]["persons"] if p["visible"] >= 0.5]
        if not persons:
            continue
        target = max(persons, key=lambda p: p["box"][3])
        channels, motions = _stages_ab(clip, detector)
        detections = clip_detections(detector, channels, motions, detector_mode)
        # Stage D is fed the detections sighted on each frame, as in the pipeline
        lock_candidates = candidates_of(
            detections[LOCK_FRAME], geometry, detector.threshold, sightings=True
        )
        if not lock_candidates:
            continue
        tap = _centre(target["box"])
        start = min(lock_candidates, key=lambda k: np.hypot(*(k.centre - tap)))
        if np.hypot(*(start.centre - tap)) > SUCCESS_RADIUS:
            continue  # the detector never saw the target: no lock, no trial
        if starts_on_another_person(start.centre, target, persons):
            # The detection nearest the tap is nearer a neighbour overlapping the target: the
            # lock would follow that neighbour from its first frame, which no blackout causes.
            outcome["locks_started_on_another_person"] += 1
            continue
        for first, last in BLACKOUTS:
            check = last + CHECK_AFTER
            truth = {p["id"]: p for p in labels[check]["persons"]}
            if target["id"] not in truth or truth[target["id"]]["visible"] < 0.5:
                continue
            tracker = TargetTracker()
            tracker.lock(start, AppearanceView.of(clip.frames[LOCK_FRAME]) if appearance else None)
            state, reassociated = None, False
            for t in range(LOCK_FRAME + 1, check + 1):
                hidden = first <= t <= last
                seen = (
                    []
                    if hidden
                    else candidates_of(detections[t], geometry, detector.threshold, sightings=True)
                )
                view = None if hidden or not appearance else AppearanceView.of(clip.frames[t])
                state = tracker.update(motions[t], seen, view=view)
                reassociated |= t > last and state.measured_by is not None
            outcome["trials"] += 1
            height = GEOMETRY.boxes([target["box"]], Frame.WORKING, Frame.NETWORK)[0][3]
            height_bin = _height_bin(height)
            by_height.setdefault(height_bin, [0, 0])[0] += 1
            # Re-locked: locked again on a detection after the blackout (a coasting filter
            # that never re-associated does not count), judged where it is 2 frames later.
            if state.mode == "locked" and reassociated:
                distances = {
                    pid: np.hypot(*(state.centre - _centre(p["box"]))) for pid, p in truth.items()
                }
                if distances[target["id"]] <= SUCCESS_RADIUS:
                    outcome["success"] += 1
                    outcome["success_with_detection_on_check_frame"] += state.associated is not None
                    by_height[height_bin][1] += 1
                    continue
                if min(distances.values()) <= SUCCESS_RADIUS:
                    outcome["identity_transfer"] += 1
                    continue
            outcome["miss"] += 1
    outcome["success_rate"] = round(outcome["success"] / max(outcome["trials"], 1), 4)
    outcome["strict_success_rate"] = round(
        outcome["success_with_detection_on_check_frame"] / max(outcome["trials"], 1), 4
    )
    outcome["by_target_height_network_px"] = {
        k: {"trials": by_height[k][0], "success_rate": round(by_height[k][1] / by_height[k][0], 4)}
        for k in ("<14", "14-24", ">=24")
        if k in by_height
    }
    return outcome


def _height_bin(height: float) -> str:
    """Target height bins in NETWORK px: < 14, 14-24 and >= 24 (>= 64 px at 640x512, taller
    than the 10-60 px people EMTS is built for)."""
    return "<14" if height < 14 else "14-24" if height < 24 else ">=24"


def _link(
    detections: list[list[Detection]],
    motions: list[np.ndarray],
    start: int,
    seed: Detection,
    geometry: FrameGeometry = GEOMETRY,
) -> list[np.ndarray]:
    """Boxes (NETWORK px of ``geometry``) of the track through ``seed`` at frame ``start``,
    frames 2-17: nearest detection within the link radius (the paper's network px, scaled)
    in each direction, else the box carried by the camera motion."""
    n = len(detections)
    radius = LINK_RADIUS * geometry.network_size[1] / NETWORK_SIZE[1]
    boxes: dict[int, np.ndarray] = {start: seed.box}
    for direction in (1, -1):
        t, box = start, seed.box
        while 2 <= t + direction < n:
            t += direction
            m = (
                motions[t]
                if direction == 1
                else np.linalg.inv(np.vstack([motions[t + 1], [0, 0, 1]]))[:2]
            )
            m = geometry.motion(m, Frame.WORKING, Frame.NETWORK)
            centre = m[:, :2] @ _centre(box) + m[:, 2]
            near = [d for d in detections[t] if np.hypot(*(_centre(d.box) - centre)) < radius]
            if near:
                box = min(near, key=lambda d: np.hypot(*(_centre(d.box) - centre))).box
            else:
                box = np.array([*(centre - box[2:] / 2), *box[2:]])
            boxes[t] = box
    return [boxes[t] for t in range(2, n)]


def false_positives(
    fpbench: str | Path,
    detector: Detector,
    verifier: Verifier | None,
    clips: int | None = None,
    detector_mode: str = DEFAULT_DETECTOR_MODE,
) -> dict:
    """FP/frame on person-free clips (frames 5-18) at each tau_s, with and without Stage E.

    With the verifier, a detection counts only if its track (linked detections over frames
    2-17, carried by the camera motion where a detection is missing) is judged human.
    """
    clip_set = ClipSet(fpbench)
    geometry = working_geometry(network_size_of(detector))
    indices = clip_set.indices[:clips] if clips else clip_set.indices
    thresholds = np.round(np.arange(0.1, 0.95, 0.05), 2)
    raw = np.zeros(len(thresholds))
    verified = np.zeros(len(thresholds))
    frames = 0
    detector.threshold = float(thresholds.min())
    for index in tqdm(indices, desc="eval fp", disable=None):
        clip = clip_set.load(index)
        channels, motions = _stages_ab(clip, detector)
        detections = clip_detections(detector, channels, motions, detector_mode)
        for t in FP_FRAMES:
            frames += 1
            for d in detections[t]:
                counted = thresholds <= d.score
                raw += counted
                if verifier is not None and counted.any():
                    boxes = _link(detections, motions, t, d, geometry)
                    window = np.stack(
                        [
                            verifier.describe(
                                FrameView(
                                    channels[k],
                                    clip.frames[k],
                                    clip.frames[k - 1],
                                    motions[k],
                                    geometry,
                                ),
                                b,
                            )
                            for k, b in zip(range(2, 18), boxes, strict=True)
                        ],
                        axis=1,
                    )
                    human = verifier.classify(window[None])[0] >= verifier.config.threshold
                    verified += counted * human
    table = {}
    for tau in THRESHOLDS:
        k = int(np.argmin(np.abs(thresholds - tau)))
        table[f"{tau:g}"] = {
            "detector_only": round(raw[k] / frames, 4),
            "with_verifier": None if verifier is None else round(verified[k] / frames, 4),
        }
    return {
        "frames": frames,
        "fp_per_frame": table,
        "sweep": {
            "thresholds": thresholds.tolist(),
            "detector_only": (raw / frames).tolist(),
            "with_verifier": None if verifier is None else (verified / frames).tolist(),
        },
    }


def autolock_window(
    detector: Detector,
    verifier: Verifier,
    index: int,
    frames: int = 300,
    seed: int = 0,
    contrast_scale: float = CONTRAST_SCALE,
    detector_mode: str = DEFAULT_DETECTOR_MODE,
    acquisition_config: AcquisitionConfig | None = None,
):
    """Window ``index`` of :func:`autolock`'s person-free footage through a fresh pipeline
    under auto-lock (``acquisition_config``: its lock acquisition's, default the shipped):
    yields (frame, its labels, the pipeline's result, whether a lock started on it, the
    pipeline) per frame."""
    spec = ClipSpec(
        "negative", "heldout", 1000 + seed, index, frames=frames, contrast_scale=contrast_scale
    )
    clip = render_clip(spec)
    stage = detector_stage(detector, detector_mode)
    pipeline = Pipeline(stage, verifier, auto_lock=True, acquisition_config=acquisition_config)
    verifier.reset()
    for frame, labels in zip(clip.frames, clip.labels["frames"], strict=True):
        locked_before = pipeline.tracker.locked
        result = pipeline.step(frame)
        yield frame, labels, result, pipeline.tracker.locked and not locked_before, pipeline


def autolock(
    detector: Detector,
    verifier: Verifier,
    windows: int = 13,
    frames: int = 300,
    seed: int = 0,
    contrast_scale: float = CONTRAST_SCALE,
    detector_mode: str = DEFAULT_DETECTOR_MODE,
    sheet: Path | None = None,
) -> dict:
    """§6.8: the full pipeline under auto-lock on person-free held-out footage (10-s windows
    rendered on held-out plates, movers at the curriculum's ``contrast_scale``): candidate
    locks proposed, locks verified, per hour; per window, how long the verified locks lasted
    and what they sat on (``verified_on``: the kind of the rendered mover under the target's
    centre, or ``scene`` where none is -- static clutter, texture, shadows). ``sheet``: a PNG
    contact sheet of the longest verified lock of each window (longest first; the target's
    box on the frame where that lock was last verified)."""
    per_window, sat_on, tiles = [], {}, []
    for index in tqdm(range(windows), desc="eval autolock", disable=None):
        row = {
            "window": index,
            "candidate_locks": 0,
            "verified_locks": 0,
            "locked_frames": 0,
            "verified_frames": 0,
            "longest_verified": 0,  # frames, one verified lock
            "verified_on": {},
        }
        run, tile = 0, None  # run: frames of the verified lock going on
        steps = autolock_window(
            detector, verifier, index, frames, seed, contrast_scale, detector_mode
        )
        for frame, labels, result, started, pipeline in steps:
            row["candidate_locks"] += started
            row["verified_locks"] += result.verified and run == 0
            row["locked_frames"] += pipeline.tracker.locked
            run = run + 1 if result.verified else 0
            row["longest_verified"] = max(row["longest_verified"], run)
            if result.verified and result.target is not None:
                row["verified_frames"] += 1
                kind = _under(result.target.box, labels["distractors"])
                sat_on[kind] = sat_on.get(kind, 0) + 1
                row["verified_on"][kind] = row["verified_on"].get(kind, 0) + 1
                if sheet is not None and run == row["longest_verified"]:
                    caption = f"window {index}: {run} frames, {kind}"
                    tile = _lock_tile(frame, result.target.box, caption)
        per_window.append(row)
        if tile is not None:
            tiles.append((row["longest_verified"], tile))
    if sheet is not None and tiles:
        from emts.eval.real import save_sheet  # (matplotlib's PIL: imported only here)

        sheet.parent.mkdir(parents=True, exist_ok=True)
        save_sheet([t for _, t in sorted(tiles, key=lambda lt: -lt[0])], sheet)
    total = windows * frames
    verified = sum(w["verified_locks"] for w in per_window)
    hours = total / 30.0 / 3600.0
    return {
        "frames": total,
        "minutes": round(total / 30.0 / 60.0, 2),
        "contrast_scale": contrast_scale,
        "candidate_locks": sum(w["candidate_locks"] for w in per_window),
        "verified_false_locks": verified,
        "verified_false_locks_per_hour": round(verified / hours, 1),
        # the share of the footage the tracker held a lock (on nothing), and a verified one
        "locked_share": round(sum(w["locked_frames"] for w in per_window) / max(total, 1), 4),
        "verified_share": round(sum(w["verified_frames"] for w in per_window) / max(total, 1), 4),
        "verified_on": dict(sorted(sat_on.items(), key=lambda kv: -kv[1])),
        "windows": per_window,
    }


def _lock_tile(frame: np.ndarray, box, caption: str, side: int = 160) -> np.ndarray:
    """A ``side`` px square of ``frame`` around ``box`` (``[x, y, w, h]``, frame px: drawn in
    red), three times the box's larger side across (at least 48 px), with ``caption``."""
    x, y, w, h = (float(v) for v in box)
    span = max(48.0, 3.0 * max(w, h))
    zoom = side / span
    x0, y0 = x + w / 2 - span / 2, y + h / 2 - span / 2
    to_tile = np.array([[zoom, 0, -zoom * x0], [0, zoom, -zoom * y0]])
    colour = frame if frame.ndim == 3 else cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
    tile = cv2.warpAffine(colour, to_tile, (side, side), borderValue=0)
    corner = (int((x - x0) * zoom), int((y - y0) * zoom))
    cv2.rectangle(tile, corner, (int(corner[0] + w * zoom), int(corner[1] + h * zoom)), RED, 1)
    cv2.putText(tile, caption, (2, 11), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (255, 255, 255), 1)
    return tile


def _under(box, distractors: list[dict]) -> str:
    """The kind of the first rendered mover whose box holds the centre of ``box`` (frame px,
    ``[x, y, w, h]``), or ``scene``."""
    cx, cy = box[0] + box[2] / 2, box[1] + box[3] / 2
    for mover in distractors:
        x, y, w, h = mover["box"]
        if x <= cx <= x + w and y <= cy <= y + h:
            return mover["kind"]
    return "scene"


def plot_fp_sweep(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = report["sweep"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.semilogy(
        sweep["thresholds"], np.maximum(sweep["detector_only"], 1e-4), "o-", label="detector only"
    )
    if sweep["with_verifier"] is not None:
        ax.semilogy(
            sweep["thresholds"],
            np.maximum(sweep["with_verifier"], 1e-4),
            "s-",
            label="+ Stage E verifier",
        )
    ax.set_xlabel("detection score threshold tau_s")
    ax.set_ylabel("false positives per frame")
    ax.set_title(f"person-free held-out bench ({report['frames']} frames)")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(out: Path, name: str, report: dict, command: str) -> None:
    """``out/NAME.json`` and a short ``out/NAME.md`` for people."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps({"command": command, **report}, indent=1) + "\n")
    lines = [f"# {name}", "", f"Command: `{command}`", ""]
    if name == "reacq":
        lines += [
            "Forced-occlusion reacquisition (section 6.9): lock at frame 5, all detections blacked",
            "out for 3 frames in one of three staggered windows, judged 2 frames later.",
            "",
            "| trials | success | identity transfers | misses | success rate | strict |",
            "|---|---|---|---|---|---|",
            f"| {report['trials']} | {report['success']} | {report['identity_transfer']} "
            f"| {report['miss']} | {report['success_rate']:.1%} "
            f"| {report['strict_success_rate']:.1%} |",
            "",
            "Strict: a detection must also be associated on the judged frame itself.",
            "",
            "Clips not run because the detection nearest the tap lies nearer another person "
            "than the target (the lock would start on that neighbour): "
            f"{report['locks_started_on_another_person']}.",
            "",
            "| target height (network px) | trials | success rate |",
            "|---|---|---|",
            *[
                f"| {k} | {v['trials']} | {v['success_rate']:.1%} |"
                for k, v in report["by_target_height_network_px"].items()
            ],
        ]
    elif name == "fp":
        lines += [
            f"False positives per frame on {report['frames']} person-free held-out frames.",
            "",
            "| tau_s | detector only | with Stage E verifier |",
            "|---|---|---|",
            *[
                f"| {tau} | {row['detector_only']} | {row['with_verifier']} |"
                for tau, row in report["fp_per_frame"].items()
            ],
            "",
            "![FP sweep](fp_sweep.png)",
        ]
    else:
        footage = f"{report['minutes']} min ({report['frames']} frames)"
        verified = f"{report['verified_false_locks']} = {report['verified_false_locks_per_hour']}"
        lines += [
            f"Full pipeline under auto-lock on {footage} of person-free footage rendered on",
            "held-out plates.",
            "",
            f"Candidate locks: {report['candidate_locks']}; verified false locks: {verified}/h.",
            "",
            f"Share of the footage with a lock held (on nothing): {report['locked_share']:.1%};"
            f" with a verified lock: {report['verified_share']:.1%}.",
        ]
        if report.get("windows"):
            sat_on = ", ".join(f"{k} {v}" for k, v in report["verified_on"].items()) or "none"
            lines += [
                "",
                f"Verified frames by what the target sat on: {sat_on}.",
                "",
                "| window | candidate locks | verified locks | frames locked | frames verified "
                "| longest verified lock (frames) | verified frames on |",
                "|---|---|---|---|---|---|---|",
                *[
                    f"| {w['window']} | {w['candidate_locks']} | {w['verified_locks']} "
                    f"| {w['locked_frames']} | {w['verified_frames']} | {w['longest_verified']} "
                    f"| {', '.join(f'{k} {v}' for k, v in w['verified_on'].items())} |"
                    for w in report["windows"]
                ],
            ]
            if (out / "autolock_longest.png").is_file():
                lines += [
                    "",
                    "Each window's longest verified lock:",
                    "",
                    "![](autolock_longest.png)",
                ]
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
