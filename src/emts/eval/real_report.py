"""The report of the real-footage suite (:mod:`emts.eval.real`): ``report.md``,
``metrics.json`` and the PR curves of every section."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from emts.eval.real_metrics import MATCH_IOU, TAU_S

# the rows of what the pipeline runs by default (emts.eval.real.auto_name)
AUTO_PREFIX = "--model auto"


def _best_classical(section: dict) -> str:
    names = [n for n in section if n.startswith("classical")]
    return max(names, key=lambda n: (section[n]["AP@0.25"], section[n]["AP@0.5"]))


def slugify(text: str) -> str:
    """``text`` as a file-name part: lower case, every other character than a letter or a
    digit an underscore."""
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")


def public_metrics(summary: dict) -> dict:
    """A section's metrics without the private ones (``_precision``: the PR curves)."""
    return {k: v for k, v in summary.items() if not k.startswith("_")}


def _plot_pr(section: dict, names: list[str], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recall = np.linspace(0, 1, 101)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, thr in zip(axes, (0.25, 0.5), strict=True):
        for name in names:
            s = section[name]
            ax.plot(recall, s["_precision"][thr], label=f"{name} ({s[f'AP@{thr:g}']:.3f})")
        ax.set_xlabel("recall")
        ax.set_title(f"IoU {thr}")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("precision")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _recalls(bins: dict) -> str:
    """``{label: {"recall": r}}`` as "r1 / r2 / ..." ("-" where a bin is empty)."""
    return " / ".join("-" if v["recall"] is None else f"{v['recall']:.2f}" for v in bins.values())


def write_real_report(
    out: Path, sections: dict, sheets: dict, models: list[str], command: str
) -> None:
    lines = [
        "# Real-footage suite",
        "",
        f"Command: `{command}`",
        "",
        f"Detections at tau_s = {TAU_S} unless AP; a match needs IoU >= {MATCH_IOU}. fp32 models. "
        "Ablations: `L only` = R and D zeroed, `motion only` = L flattened to its mean, "
        "`padding masked` (letterboxed input only) = R and D zeroed outside the letterbox "
        "content (the pipeline does this since), `residual level not normalized` = Stage B's "
        "channels fed as they are, without the detector's residual-level normalization "
        "(`emts.stages.b_channels.normalize_residual_level`, on in every other row). `temporal "
        "scores` = Stage C's temporal mode, the pipeline's default "
        "(`emts.stages.c_detect.temporal`: peaks "
        "scored by a heatmap memory carried by the camera motion; person12 as one stream, "
        "each HIT-UAV pseudo-clip's frames 2-3 fed before frame 4 is scored); every other "
        "row is the network frame by frame. `--model auto: V` = what the pipeline runs by "
        "default on the set's frames (`emts.modality`: the thermal model at its 512x384 for "
        "frames without colour, the default model for colour), in the temporal mode, with "
        "the colour evidence on colour frames (`emts.stages.c_detect.boxfit`: the best boxes "
        "from tau_s - "
        "0.1 fitted to the person's own pixels -- trimmed to the person where those merged "
        "with shade or a bed above or below -- and scored 0.1 higher where they fit and "
        "move, 0.1 lower where they do not move: Stage B's R in the box under 2x the "
        "frame's residual level); "
        "`boxes not fitted` = the same detections as the network boxes and scores them. "
        "`classical k=K` = compensated differencing at 640x512 with threshold K "
        "x the frame's median residual; the best K (by AP@0.25) is marked.",
        "",
    ]
    data = {}
    for title, section in sections.items():
        best = _best_classical(section)
        slug = slugify(title)[:40]
        curve_names = [*models, *(n for n in section if n.startswith(AUTO_PREFIX)), best]
        _plot_pr(section, curve_names, out / f"pr_{slug}.png", title)
        person12 = "fp_per_frame@0.3" in next(iter(section.values()))
        lines += [f"## {title}", ""]
        if person12:
            lines += [
                "| detector | recall@0.3 | FP/frame@0.3 | AP@0.25 | AP@0.5 |",
                "|---|---|---|---|---|",
            ]
        else:
            lines += [
                "| detector | AP@0.25 | AP@0.5 | recall@0.3 | FP/image@0.3 | recall <12 / 12-20 / "
                "20-32 / >=32 px | recall, nearest other person < 1.5 / 1.5-3 / >= 3 heights "
                "away or alone | width ratio p10/p50/p90 |",
                "|---|---|---|---|---|---|---|---|",
            ]
        for name, s in section.items():
            if name.startswith("classical") and name != best:
                continue
            label = f"{name} (best)" if name == best else name
            if person12:
                cells = [s["recall@0.3"], s["fp_per_frame@0.3"], s["AP@0.25"], s["AP@0.5"]]
            else:
                widths = s["width_ratio_p10_p50_p90"]
                cells = [
                    s["AP@0.25"],
                    s["AP@0.5"],
                    s["recall@0.3"],
                    s["fp_per_image@0.3"],
                    _recalls(s["recall_by_height"]),
                    _recalls(s["recall_by_spacing"]),
                    "-" if widths is None else "/".join(f"{w:g}" for w in widths),
                ]
            lines.append(f"| {label} | " + " | ".join(str(c) for c in cells) + " |")
        sweep = [n for n in section if n.startswith("classical")]
        lines += [
            "",
            "Classical threshold sweep (AP@0.25 / AP@0.5): "
            + ", ".join(
                f"k={n.split('=')[1]}: {section[n]['AP@0.25']:.3f} / {section[n]['AP@0.5']:.3f}"
                for n in sweep
            ),
            "",
            f"![PR curves](pr_{slug}.png)",
            "",
        ]
        data[title] = {name: public_metrics(s) for name, s in section.items()}
    lines += ["## Contact sheets", ""]
    lines += [
        "Left: the working frame; right: R (x6). Green: the label; red: a detection at "
        "tau_s; yellow: below tau_s. FP sheets: the highest-scoring false positives; miss "
        "sheets: unmatched persons (largest first; person12: spread over the clip), captioned "
        "with the best score of a detection that would have matched.",
        "",
    ]
    for label, files in sheets.items():
        links = ", ".join(f"[{f}]({f})" for f in files) or "none"
        lines.append(f"* {label}: {links}")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    (out / "metrics.json").write_text(json.dumps(data, indent=1) + "\n")
