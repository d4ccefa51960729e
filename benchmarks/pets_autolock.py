"""Auto-lock on a real colour clip none of this was designed on, along several camera paths.

PETS 2009 ``vtest.avi`` (OpenCV's sample video; how to get it: ``benchmarks/pets_movers.py``)
has no labels, but its camera stands still, so whatever moves is found by differencing each
frame with the clip's median (the *movers*, ``pets_movers.movers``). The shipped pipeline runs
under auto-lock (as ``emts track VIDEO --lock auto``) on the clip as filmed and warped along
the gusty hovering paths of ``emts eval track --gust`` (seeds 1..N), and counts the frames it
reports a lock (and a verified one) whose centre lies on a mover, and on none. One path's
auto-lock is a chain of chance events (who is locked first, when they walk out); the sum over
several paths says more than any one of them.

    python benchmarks/pets_autolock.py --video vtest.avi --gusts 5 --out DIR

Writes ``DIR/pets_autolock.json`` and ``DIR/pets_autolock.png``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from emts.eval.track_eval import _gust_path
from pets_movers import auto_lock, movers, read_video, warped

COUNTS = ("on_mover", "on_nothing", "verified_on_mover", "verified_on_nothing")


def shaken_clip(frames: list[np.ndarray], truth: list[np.ndarray], gust: int | None):
    """(frame, movers) as a camera along gust path ``gust`` delivers them (None: as filmed);
    movers whose centre is shaken out of view are gone."""
    if gust is None:
        return list(zip(frames, truth, strict=True))
    path = _gust_path(frames[0].shape, gust)
    out = []
    for index, (frame, boxes) in enumerate(zip(frames, truth, strict=True)):
        pose = path.pose() if index == 0 else path.step()
        size = (frame.shape[1], frame.shape[0])
        frame = cv2.warpAffine(frame, pose[:2], size, borderMode=cv2.BORDER_REFLECT_101)
        boxes = np.array([warped(b, pose) for b in boxes]).reshape(-1, 4)
        centres = boxes[:, :2] + boxes[:, 2:] / 2
        out.append((frame, boxes[np.all((centres >= 0) & (centres < size), axis=1)]))
    return out


def lock_bars(names: list[str], rows: list[dict], on: str, title: str, path: Path) -> None:
    """Frames locked per run (``rows``, one per name): verified on ``on`` (a mover, a person),
    on it, and on nothing, as grouped bars in a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(names)), 3.5))
    keys = (
        (f"verified_on_{on}", "tab:green"),
        (f"on_{on}", "tab:olive"),
        ("on_nothing", "tab:red"),
    )
    for k, (key, colour) in enumerate(keys):
        ax.bar(x + (k - 1) * 0.27, [r[key] for r in rows], 0.27, label=key, color=colour)
    ax.set_xticks(x, names)
    ax.set_ylabel(f"frames (of {rows[0]['frames']} a run)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--video", required=True, help="vtest.avi (PETS 2009, from opencv-doc)")
    parser.add_argument("--gusts", type=int, default=5, help="gust paths 1..N besides the still")
    parser.add_argument("--out", required=True, help="report folder")
    args = parser.parse_args()
    frames = read_video(args.video)
    truth = movers(frames)
    fps = cv2.VideoCapture(args.video).get(cv2.CAP_PROP_FPS) or 30.0
    paths = {}
    for gust in tqdm([None, *range(1, args.gusts + 1)], desc="paths", unit="path"):
        name = "still" if gust is None else f"gust {gust}"
        paths[name] = auto_lock(shaken_clip(frames, truth, gust), fps)
    report = {
        "command": f"python benchmarks/pets_autolock.py --video vtest.avi --gusts {args.gusts} "
        f"--out {args.out}",
        "video": Path(args.video).name,
        "frames": len(frames),
        "paths": paths,
        "total": {k: sum(p[k] for p in paths.values()) for k in COUNTS},
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pets_autolock.json").write_text(json.dumps(report, indent=1) + "\n")
    total = report["total"]
    lock_bars(
        list(paths),
        list(paths.values()),
        "mover",
        f"PETS 2009 vtest.avi, auto-lock: on a mover {total['on_mover']}, "
        f"on nothing {total['on_nothing']} frames over {len(paths)} paths",
        out / "pets_autolock.png",
    )
    for name, row in paths.items():
        print(f"{name:8s} {row}")
    print(f"total    {report['total']}")
    print(f"wrote {out / 'pets_autolock.json'}, pets_autolock.png")


if __name__ == "__main__":
    main()
