"""How far Stage D's stabilized frame drifts from the image's scale over one follow, and what
that does to the tracker's gates and searches in the image.

Stage D keeps the target in the lock frame's coordinates: ``G_t = H(M_t) G_{t-1}``, the product
of every frame's ego-motion since the lock. Its scale is the product of every frame's estimated
zoom. A drone following a walker sees the ground loom frame after frame while the walker keeps
their size; every distance the tracker is configured with in stabilized px (search radii, the
re-lock radius, walking speeds, the Kalman noises) then grows by that scale in the image.

Taps the clip's box and runs ``Pipeline.default(auto_lock=False)`` (single-threaded), and per
frame records the mode, G's scale, the widest appearance search window asked for (radius, image
working px), the re-lock radius in image px while reacquiring, and Stage D's milliseconds.
Writes OUT/stabilized_scale.json and OUT/stabilized_scale.png (scale, window, Stage D time
over the frames, the mode as a band).

    python benchmarks/stabilized_scale.py --clip /tmp/p12_720.mp4 --lock 490,235,34,85 \\
        --fps 10 --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

MODES = {"search": 0, "reacquire": 1, "locked": 2}


def run(clip: str, lock_text: str, fps: float | None, frames: int) -> dict:
    from emts.apps.peer_bench import user_clip
    from emts.apps.track import LockRequest
    from emts.pipeline import Pipeline

    lock = LockRequest.parse(lock_text, "--lock")
    source = user_clip(clip, lock, frames, fps)
    pipeline = Pipeline.default(auto_lock=False, threads=1)
    pipeline.fps = source.fps
    tracker = pipeline.tracker
    widest: list[float] = []
    kind = type(tracker.appearance)  # (the lock makes its own: spy on the class)
    for name in ("search", "peaks"):  # the appearance searches, by their image radius
        method = getattr(kind, name)

        def spy(self, image, g, centre, radius, *args, _method=method, **kwargs):
            widest.append(float(radius))
            return _method(self, image, g, centre, radius, *args, **kwargs)

        setattr(kind, name, spy)
    pipeline.lock(lock.x, lock.y, box=lock.box)
    rows = []
    total = source.length if source.length is not None else None
    for index, frame in enumerate(tqdm(source.frames(), total=total, unit="frame")):
        widest.clear()
        result = pipeline.step(frame)
        locked = tracker.mode != "search" and tracker.g is not None
        scale = tracker._scale() if locked else None
        relock = None
        if locked and tracker.mode == "reacquire":
            relock = tracker._relock_radius() * scale
        rows.append(
            {
                "frame": index + lock.frame,
                "mode": result.mode,
                "scale": None if scale is None else round(scale, 4),
                "window_radius": round(max(widest), 1) if widest else None,
                "relock_radius_image": None if relock is None else round(relock, 1),
                "ms_d": round(float(result.ms.get("D", 0.0)), 3),
            }
        )
    return {"clip": clip, "lock": lock_text, "fps": source.fps, "frames": rows}


def summarize(rows: list[dict]) -> dict:
    scales = [r["scale"] for r in rows if r["scale"] is not None]
    windows = [r["window_radius"] for r in rows if r["window_radius"] is not None]
    ms = np.array([r["ms_d"] for r in rows])
    reacquire = np.array([r["mode"] == "reacquire" for r in rows])
    out = {
        "frames": len(rows),
        "scale_last": scales[-1] if scales else None,
        "scale_max": max(scales) if scales else None,
        "scale_min": min(scales) if scales else None,
        "window_radius_max": max(windows) if windows else None,
        "ms_d_mean": round(float(ms.mean()), 3),
        "ms_d_median": round(float(np.median(ms)), 3),
        "reacquire_frames": int(reacquire.sum()),
    }
    if reacquire.any():
        out["ms_d_reacquire_median"] = round(float(np.median(ms[reacquire])), 3)
        out["ms_d_reacquire_p90"] = round(float(np.percentile(ms[reacquire], 90)), 3)
    for at in (100, 200, 300, 400, 500):
        if at < len(rows) and rows[at]["scale"] is not None:
            out[f"scale_at_{rows[at]['frame']}"] = rows[at]["scale"]
    return out


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["frames"]
    frame = np.array([r["frame"] for r in rows])

    def series(key):
        return np.array([np.nan if r[key] is None else r[key] for r in rows], float)

    fig, axes = plt.subplots(3, 1, figsize=(10, 7.5), sharex=True)
    colours = {"locked": "tab:green", "reacquire": "tab:orange", "search": "tab:gray"}
    for ax in axes:
        for mode, colour in colours.items():
            on = np.array([r["mode"] == mode for r in rows])
            ax.fill_between(
                frame,
                0,
                1,
                where=on,
                color=colour,
                alpha=0.12,
                lw=0,
                transform=ax.get_xaxis_transform(),
                label=mode,
            )
    axes[0].plot(frame, series("scale"), color="k")
    axes[0].axhline(1.0, color="k", lw=0.6, ls=":")
    axes[0].set_ylabel("G's scale\n(stabilized -> image)")
    axes[0].legend(loc="upper left", fontsize=8, ncol=3)
    axes[0].set_title(
        f"Stage D's stabilized frame over one follow: {Path(report['clip']).name}, "
        f"tap {report['lock']}",
        fontsize=10,
    )
    for key, colour, label in (
        ("window_radius", "tab:blue", "widest appearance search (radius)"),
        ("relock_radius_image", "tab:red", "re-lock radius (reacquire)"),
    ):
        axes[1].plot(frame, series(key), ".", ms=3, color=colour, label=label)
    axes[1].set_yscale("log")
    axes[1].set_ylabel("image px (working)")
    axes[1].legend(loc="upper left", fontsize=8)
    axes[2].plot(frame, series("ms_d"), lw=0.8, color="tab:purple")
    axes[2].set_ylabel("Stage D ms")
    axes[2].set_xlabel("frame")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", required=True, help="a video or image folder")
    parser.add_argument("--lock", required=True, help="the tapped box X,Y,W,H[@FRAME]")
    parser.add_argument("--fps", type=float, help="the clip's frame rate (default: its own)")
    parser.add_argument("--frames", type=int, default=100000, help="at most this many frames")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    from emts.errors import BadInputError

    try:
        report = run(args.clip, args.lock, args.fps, args.frames)
    except BadInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    report["command"] = " ".join(["python", "benchmarks/stabilized_scale.py", *argv])
    report["summary"] = summarize(report["frames"])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "stabilized_scale.json").write_text(json.dumps(report, indent=1))
    plot(report, args.out / "stabilized_scale.png")
    print(json.dumps(report["summary"]))
    print(f"wrote {args.out}/stabilized_scale.json, stabilized_scale.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
