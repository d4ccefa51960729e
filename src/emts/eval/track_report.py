"""``emts eval track``'s report: ``report.json``, ``report.md``, ``timeline.png`` and, with
``--leave``, ``--enter`` or ``--lookalike``, ``contact.png`` (the protocol and the scorer:
:mod:`emts.eval.track_eval`)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from emts.eval.track_eval import THUMBNAIL_SCALE


def _centre(box) -> np.ndarray:
    return np.asarray(box[:2], float) + np.asarray(box[2:], float) / 2


# ----------------------------------------------------------------------------- report
def plot_timeline(report: dict, path: Path, title: str) -> None:
    """Centre error per frame over the success radius, with the mode as a coloured band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["per_frame"]
    frames = [r["frame"] for r in rows]
    errors = [np.nan if r["error"] is None else r["error"] for r in rows]
    radius = [np.nan if r["radius"] is None else r["radius"] for r in rows]
    colours = {"locked": "#2a9d2a", "reacquire": "#f0a020", "search": "#c0c0c0"}
    fig, (ax, band) = plt.subplots(
        2, 1, figsize=(10, 4), sharex=True, gridspec_kw={"height_ratios": [5, 1]}
    )
    for kind, a, b in [(s["kind"], *s["frames"]) for s in report["hidden_spans"]]:
        ax.axvspan(a - 0.5, b + 0.5, color="#8888ff", alpha=0.2, label=f"person hidden ({kind})")
    for a, b in [s["frames"] for s in report.get("lookalike_spans", [])]:
        ax.axvspan(a - 0.5, b + 0.5, color="#ff9933", alpha=0.2, label="look-alike crossing")
    if any(r.get("copy") for r in rows):
        to_copy = [
            np.nan
            if not (r.get("copy") and r["box"])
            else float(np.hypot(*(_centre(r["box"]) - _centre(r["copy"]))))
            for r in rows
        ]
        ax.plot(frames, to_copy, color="#d2691e", lw=1, ls=":", label="target to the copy")
    ax.plot(frames, errors, color="black", lw=1, label="centre error")
    ax.plot(frames, radius, color="red", lw=1, ls="--", label="success radius")
    ax.set_ylabel("px (input)")
    ax.set_yscale("symlog", linthresh=20)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), loc="upper right", fontsize=8)
    ax.set_title(title, fontsize=10)
    for r in rows:
        band.axvspan(r["frame"] - 0.5, r["frame"] + 0.5, color=colours.get(r["mode"], "white"))
    band.set_yticks([])
    band.set_xlabel("frame (green locked, orange reacquire, grey search)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def contact_sheet(report: dict, path: Path) -> bool:
    """The thumbnails ``evaluate_track`` kept (the leave or enter path's and look-alikes'
    moments) in one PNG: truth green, look-alike magenta, the reported target yellow (dashed
    when not ``locked``). False when there are none."""
    thumbnails = report.get("thumbnails") or {}
    if not thumbnails:
        return False
    by_frame = {r["frame"]: r for r in report["per_frame"]}
    tiles = []
    for index in sorted(thumbnails):
        tile = thumbnails[index].copy()
        row = by_frame.get(index, {})
        for key, colour in (("truth", (60, 220, 60)), ("copy", (220, 60, 220))):
            if row.get(key):
                _draw_box(tile, row[key], colour)
        if row.get("box"):
            _draw_box(tile, row["box"], (0, 215, 255), dashed=row.get("mode") != "locked")
        hidden = " hidden" if row.get("hidden") else ""
        label = f"{index} {row.get('mode', '')}{hidden}"
        (width, height), _ = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, 0.4, 1)
        cv2.rectangle(tile, (0, 0), (width + 6, height + 8), (0, 0, 0), -1)
        cv2.putText(tile, label, (3, height + 3), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (255, 255, 255), 1)
        tiles.append(cv2.copyMakeBorder(tile, 2, 2, 2, 2, cv2.BORDER_CONSTANT, value=(0, 0, 0)))
    height = max(t.shape[0] for t in tiles)
    width = max(t.shape[1] for t in tiles)
    tiles = [cv2.copyMakeBorder(t, 0, height - t.shape[0], 0, width - t.shape[1], 0) for t in tiles]
    columns = 3 if len(tiles) <= 6 else 4
    tiles += [np.zeros_like(tiles[0])] * (-len(tiles) % columns)
    rows = [np.hstack(tiles[i : i + columns]) for i in range(0, len(tiles), columns)]
    cv2.imwrite(str(path), np.vstack(rows))
    return True


def _draw_box(image: np.ndarray, box, colour, dashed: bool = False) -> None:
    x, y, w, h = (float(v) * THUMBNAIL_SCALE for v in box)
    corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
    for (x0, y0), (x1, y1) in zip(corners, corners[1:] + corners[:1], strict=True):
        pieces = 6 if dashed else 1
        for k in range(pieces):
            if dashed and k % 2:
                continue
            a, b = k / pieces, (k + 1) / pieces
            cv2.line(
                image,
                (round(x0 + (x1 - x0) * a), round(y0 + (y1 - y0) * a)),
                (round(x0 + (x1 - x0) * b), round(y0 + (y1 - y0) * b)),
                colour,
                1,
                cv2.LINE_AA,
            )


def _pair(values) -> str:
    return "-" if values is None else f"{values[0]:.2f}, {values[1]:.2f}"


def write_report(report: dict, out: Path, command: str, clip_name: str) -> None:
    """``report.json`` (per-frame rows without the ground truth), ``report.md``,
    ``timeline.png`` and, with a leave or enter path or look-alikes, ``contact.png`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    # The ground truth stays in frames.jsonl: a report may be shared, the clip's labels not.
    rows = [{k: v for k, v in r.items() if k != "truth"} for r in report["per_frame"]]
    shareable = {"command": command, **report, "per_frame": rows}
    shareable.pop("thumbnails", None)
    (out / "report.json").write_text(json.dumps(shareable, indent=1))
    s = report
    overlap = s["box_overlap"]
    title = (
        f"{clip_name}: lock recall {s['lock_recall']:.3f}, "
        f"{s['false_lock_frames']} false-lock frames"
    )
    plot_timeline(report, out / "timeline.png", title)
    lines = [
        f"# Lock evaluation: {clip_name}",
        "",
        f"`{command}`",
        "",
        "| lock recall | visible frames | false-lock frames | centre error median / p90 px "
        "| success AUC (IoU) | box w, h / the person's | first lock | lost / relock events "
        "| median P(human) |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {s['lock_recall']:.3f} | {s['visible_frames']} | {s['false_lock_frames']} | "
        f"{s['centre_error_px']['median']} / {s['centre_error_px']['p90']} | "
        f"{overlap['success_auc']} | {_pair(overlap['size_ratio_on_hits'])} | "
        f"{s['first_lock_frame']} | {s['lost_events']} / {s['relock_events']} | "
        f"{s['p_human']['median']} |",
        "",
        f"Lock: {s['lock']}. Frames {s['frames'][0]}-{s['frames'][1]}. Stress: {s['stress']}.",
        "",
    ]
    if s["hidden_spans"]:
        lines += [
            "| hidden | frames | locked after vanishing | locked after 8 | relocks while hidden "
            "| recovery frames | ok |",
            "|---|---|---|---|---|---|---|",
        ]
        for span in s["hidden_spans"]:
            lines.append(
                f"| {span['kind']} | {span['frames'][0]}-{span['frames'][1]} | "
                f"{span['locked_frames_after_vanishing']} | {span['locked_frames_after_grace']} | "
                f"{span['relocks_while_hidden']} | {span['recovery_frames']} | {span['ok']} |"
            )
        lines.append("")
    if s.get("leave"):
        leave = s["leave"]
        lines += [
            f"Leave path {leave['planned']}: the window (1/{leave['zoom']:g} of the frame) pans "
            f"from frame {leave['pan_from']}; the person leaves through the "
            f"{leave['exit']}, is out of view on frames {leave['out_of_view'][0]}-"
            f"{leave['out_of_view'][1]}, comes back through the {leave['entry']} and is framed "
            f"again on frame {leave['framed_again']} (pan at most {leave['max_pan_px']} px a "
            "frame).",
            "",
        ]
    if s.get("enter"):
        enter = s["enter"]
        lines += [
            f"Enter: on the lock frame the window (1/{enter['zoom']:g} of the frame) holds "
            f"{enter['visible_on_lock_frame']:.0%} of the person, cut by its {enter['edge']}; "
            f"it pans to frame them (framed on frame {enter['framed']}; pan at most "
            f"{enter['max_pan_px']} px a frame) and follows them.",
            "",
        ]
    if s.get("lookalike_spans"):
        lines += [
            "| look-alike | frames | copy's walk (deg, px/frame) | frames on the copy "
            "| first on the copy | locked on the person | ended on the person | ok |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for span in s["lookalike_spans"]:
            walk = span.get("copy", {})
            lines.append(
                f"| crossing | {span['frames'][0]}-{span['frames'][1]} | "
                f"{walk.get('direction_deg')}, {walk.get('speed_px_per_frame')} | "
                f"{span['frames_on_copy']} | {span['first_frame_on_copy']} | "
                f"{span['locked_on_person_frames']} | {span['ended_on_person']} | {span['ok']} |"
            )
        lines.append("")
    lines.append("![timeline](timeline.png)")
    if contact_sheet(report, out / "contact.png"):
        lines += ["", "![delivered frames](contact.png)"]
    (out / "report.md").write_text("\n".join(lines) + "\n")
