"""``emts eval verifier``: how Stage E separates a labelled walker from the ground on real video.

The synthetic held-out protocol of ``emts train verifier`` scores windows from our own
curriculum; this check scores a real clip. For every ``stride``-th frame s with the person
labelled on frames s..s+15:

* the *person* window: descriptors of the labelled box on those 16 frames;
* two *ground* windows: a box of the same size placed ``offset`` box widths to the left and to
  the right of the person on frame s, then carried by Stage A's camera motion (a static patch
  of the scene, what a false track on clutter looks like), kept only while it stays inside the
  image content.

Every model sees the same descriptors (flow rescaled to px per 1/30 s, as the pipeline does).
Reported per model: median P(human) and share >= 0.5 of person and ground windows, and the
ROC AUC person vs ground. Development figures on a labelled clip: never a training signal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from emts.config import VerifierConfig
from emts.errors import BadInputError
from emts.front_end import MotionFrontEnd
from emts.geometry import Frame
from emts.io import open_source
from emts.stages.e_verify import FrameView, Verifier, describe

GROUND_OFFSET = 3.0  # ground boxes start this many box widths beside the person
STRIDE = 4  # a window starts on every 4th frame


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for ``labels == 1`` against the rest: the
    Mann-Whitney U over the ranks of the scores, tied scores sharing their mean rank (numpy
    only; the same figure as :func:`emts.train.verifier.roc_auc`, NaN scores included)."""
    scores = np.asarray(scores)
    order = np.argsort(scores, kind="mergesort")
    ordered = scores[order]
    starts = np.ones(len(ordered), bool)  # a new group of equal scores (NaN: a group each)
    starts[1:] = ordered[1:] != ordered[:-1]
    group = np.cumsum(starts) - 1
    counts = np.bincount(group)
    ends = np.cumsum(counts)  # 1-based rank of the last score of each group
    ranks = np.empty(len(scores))
    ranks[order] = (ends - (counts - 1) / 2)[group]  # the group's mean rank
    positives = np.asarray(labels) == 1
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / max(n_pos * n_neg, 1))


@dataclass
class VerifierRealConfig:
    fps: float | None = None
    first: int = 0
    last: int | None = None
    offset: float = GROUND_OFFSET
    stride: int = STRIDE


def _inside(box: np.ndarray, content: tuple[float, float, float, float]) -> bool:
    x0, y0, x1, y1 = content
    return box[0] >= x0 and box[1] >= y0 and box[0] + box[2] <= x1 and box[1] + box[3] <= y1


def _collect(
    source, truth: np.ndarray, c: VerifierRealConfig, vc: VerifierConfig, resolutions: list[str]
):
    """Descriptors (one per Stage E input resolution, stacked on the first axis) of the person
    box and of every live ground box, gathered frame by frame into finished windows."""
    last = c.last if c.last is not None else len(truth) - 1
    front = MotionFrontEnd()
    window = vc.window
    person: dict[int, list[np.ndarray]] = {}
    ground: dict[tuple[int, int], tuple[np.ndarray, list[np.ndarray]]] = {}
    finished: list[tuple[str, int, np.ndarray]] = []
    previous = None
    with open_source(source, fps=c.fps) as frames:
        fps = frames.fps
        scale = np.float32(fps / vc.reference_fps)
        for index, frame in enumerate(
            tqdm(frames, total=last + 1, desc="eval verifier", unit="frame", disable=None)
        ):
            if index > last:
                break
            result = front.step(frame)
            view = FrameView(
                result.channels, result.working, previous, result.motion.matrix, result.geometry
            )
            previous = result.working.copy()
            if index < c.first:
                continue
            # boxes in WORKING px: the ground carried by Stage A's motion, kept inside the image
            geometry = result.geometry
            bounds = tuple(v + 0.5 for v in geometry.content_box)  # pixel edges
            motion = result.motion.matrix
            labelled = index < len(truth) and np.all(np.isfinite(truth[index]))
            box = (
                geometry.boxes(truth[index : index + 1], Frame.INPUT, Frame.WORKING)[0]
                if labelled
                else None
            )

            def descriptor(b: np.ndarray, view=view, geometry=geometry) -> np.ndarray:
                b = geometry.boxes([b], Frame.WORKING, Frame.NETWORK)[0]
                return np.stack(
                    [describe(*view.roi_pair(b, r, vc), vc) * scale for r in resolutions]
                )

            # the ground boxes move with the scene
            for key, (gbox, items) in list(ground.items()):
                centre = gbox[:2] + gbox[2:] / 2
                centre = motion[:, :2] @ centre + motion[:, 2]
                gbox = np.array([*(centre - gbox[2:] / 2), *gbox[2:]])
                if not _inside(gbox, bounds):
                    del ground[key]
                    continue
                items.append(descriptor(gbox))
                ground[key] = (gbox, items)
            for start, items in list(person.items()):
                if box is None:
                    del person[start]
                else:
                    items.append(descriptor(box))
            if box is not None and (index - c.first) % c.stride == 0:
                person[index] = [descriptor(box)]
                for side in (-1, 1):
                    gbox = box + np.array([side * c.offset * box[2], 0, 0, 0])
                    if _inside(gbox, bounds):
                        ground[(index, side)] = (gbox, [descriptor(gbox)])
            for start in [s for s, items in person.items() if len(items) == window]:
                finished.append(("person", start, np.stack(person.pop(start), axis=-1)))
            for key in [k for k, (_, items) in ground.items() if len(items) == window]:
                finished.append(("ground", key[0], np.stack(ground.pop(key)[1], axis=-1)))
    return finished, fps


def evaluate_verifier_real(
    source,
    truth: np.ndarray,
    models: dict[str, str | Path | None],
    config: VerifierRealConfig | None = None,
) -> dict:
    """Score every model on the clip's person and ground windows; the report dict."""
    c = config or VerifierRealConfig()
    vc = VerifierConfig()
    verifiers = {name: Verifier(path) for name, path in models.items()}
    resolutions = sorted({v.resolution for v in verifiers.values()})
    windows, fps = _collect(source, truth, c, vc, resolutions)
    kinds = np.array([k for k, _, _ in windows])
    if not (kinds == "person").any() or not (kinds == "ground").any():
        raise BadInputError(
            f"no complete {vc.window}-frame person and ground windows: the person must be "
            f"labelled on at least {vc.window} consecutive frames with room beside them"
        )
    x = np.stack([d for _, _, d in windows]).astype(np.float32)  # (n, resolutions, 40, 16)
    starts = np.array([s for _, s, _ in windows])
    labels = (kinds == "person").astype(float)
    report = {
        "windows": {"person": int(labels.sum()), "ground": int((1 - labels).sum())},
        "fps": fps,  # the stream's rate as Stage E saw it (--fps, or the video's own)
        "offset_box_widths": c.offset,
        "stride": c.stride,
        "models": {},
    }
    curves = {}
    for name, path in models.items():
        verifier = verifiers[name]
        p = verifier.classify(x[:, resolutions.index(verifier.resolution)])
        person, ground = p[labels == 1], p[labels == 0]
        report["models"][name] = {
            "path": None if path is None else str(path),
            "input": verifier.resolution,
            "person_median_p": round(float(np.median(person)), 3),
            "person_share_verified": round(float((person >= vc.threshold).mean()), 3),
            "ground_median_p": round(float(np.median(ground)), 3),
            "ground_share_verified": round(float((ground >= vc.threshold).mean()), 3),
            "roc_auc_person_vs_ground": round(roc_auc(labels, p), 4),
        }
        curves[name] = p
    report["_plot"] = (starts, labels, curves)
    return report


def write_report(report: dict, out: Path, command: str, clip: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    starts, labels, curves = report.pop("_plot")
    report = {"command": command, "clip": clip, **report}
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        f"# Stage E on {clip}",
        "",
        f"`{command}`",
        "",
        f"{report['windows']['person']} person windows (the labelled box), "
        f"{report['windows']['ground']} ground windows (same-size boxes "
        f"{report['offset_box_widths']} widths beside the person, carried by the camera).",
        "",
        "| model | person median P | person >= 0.5 | ground median P | ground >= 0.5 | AUC |",
        "|---|---|---|---|---|---|",
    ]
    for name, m in report["models"].items():
        lines.append(
            f"| {name} | {m['person_median_p']} | {m['person_share_verified']} | "
            f"{m['ground_median_p']} | {m['ground_share_verified']} | "
            f"{m['roc_auc_person_vs_ground']} |"
        )
    (out / "report.md").write_text("\n".join(lines) + "\n")
    _plot(starts, labels, curves, out / "p_human.png", clip)


def _plot(starts, labels, curves, path: Path, clip: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(curves), 1, figsize=(8, 2.2 * len(curves) + 0.6), sharex=True, squeeze=False
    )
    for ax, (name, p) in zip(axes[:, 0], curves.items(), strict=True):
        ax.scatter(starts[labels == 0], p[labels == 0], s=10, c="tab:gray", label="ground")
        ax.scatter(starts[labels == 1], p[labels == 1], s=14, c="tab:green", label="person")
        ax.axhline(0.5, color="tab:red", lw=0.8, ls="--")
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel("P(human)")
        ax.set_title(name, fontsize=9, loc="left")
    axes[0, 0].legend(loc="lower right", fontsize=8)
    axes[-1, 0].set_xlabel("window start frame")
    fig.suptitle(f"Stage E on {clip}: each dot a 16-frame window", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
