"""A 300-line ground truth for uav123-person12: the clip's own labels (frames 1-201) followed by
ours (frames 202-300, hand-checked, ``person12_202-300.txt`` beside this file; see README.md).

    python benchmarks/labels/person12_gt.py --clip ../shared/data/uav123-person12 --out gt300.txt

writes line i = frame i (UAV123/OTB ``x,y,w,h``, pixels at 640x360, 0-based, ``NaN`` where
the person is not visible), the clip's 201 lines and ours copied as they are. ``--contact
PNG`` also draws a contact sheet of our frames with their boxes (crops of the clip's frames:
development only, never commit it). The clip itself is never read into the repository.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

LABELS = Path(__file__).resolve().with_name("person12_202-300.txt")
CLIP_FRAMES = 201  # lines in the clip's groundtruth_rect.txt
FIRST, LAST = 202, 300  # the frames of LABELS


def _lines(path: Path, count: int) -> list[str]:
    """The first ``count`` non-empty lines of ``path``, each checked to be ``x,y,w,h``."""
    lines = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    if len(lines) < count:
        raise ValueError(f"{path}: {len(lines)} lines, expected {count}")
    for number, line in enumerate(lines[:count], 1):
        values = line.replace(",", " ").split()
        try:
            if len(values) != 4:
                raise ValueError
            [float(v) for v in values]
        except ValueError:
            raise ValueError(f"{path}:{number}: not x,y,w,h: {line!r}") from None
    return lines[:count]


def _boxes(lines: list[str]) -> np.ndarray:
    return np.array([[float(v) for v in line.replace(",", " ").split()] for line in lines])


def our_labels() -> np.ndarray:
    """Frames 202-300: ``(99, 4)`` ``[x, y, w, h]``, NaN rows where the person is hidden."""
    return _boxes(_lines(LABELS, LAST - FIRST + 1))


def full_ground_truth(clip_dir: str | Path) -> np.ndarray:
    """Frames 1-300 of uav123-person12: ``(300, 4)`` ``[x, y, w, h]``, row i = frame i + 1
    (the clip's ``groundtruth_rect.txt`` for frames 1-201, ours for 202-300)."""
    theirs = _boxes(_lines(Path(clip_dir) / "groundtruth_rect.txt", CLIP_FRAMES))
    return np.concatenate([theirs, our_labels()])


def write_ground_truth(clip_dir: str | Path, out: str | Path) -> None:
    """The 300 lines of :func:`full_ground_truth`, each copied from its source file."""
    lines = _lines(Path(clip_dir) / "groundtruth_rect.txt", CLIP_FRAMES)
    lines += _lines(LABELS, LAST - FIRST + 1)
    Path(out).write_text("\n".join(lines) + "\n")


def contact_sheet(clip_dir: str | Path, out: str | Path, step: int = 3, cols: int = 7) -> None:
    """Every ``step``-th frame of 202-300 (and 300): an 80x120 px crop around our box, 2x,
    the box in red, the frame number above it."""
    import cv2  # only here: the labels themselves need numpy alone

    boxes = our_labels()
    frames = list(range(FIRST, LAST + 1, step))
    if frames[-1] != LAST:
        frames.append(LAST)
    half_w, half_h, scale = 40, 60, 2
    tiles = []
    for frame in frames:
        image = cv2.imread(str(Path(clip_dir) / "frames" / f"{frame:06d}.jpg"))
        if image is None:
            raise FileNotFoundError(f"{clip_dir}: frame {frame} missing")
        x, y, w, h = boxes[frame - FIRST]
        cx, cy = (x + w / 2, y + h / 2) if np.isfinite(x) else (320, 180)
        x0, y0 = int(round(cx)) - half_w, int(round(cy)) - half_h
        padded = cv2.copyMakeBorder(image, 200, 200, 200, 200, cv2.BORDER_CONSTANT)
        crop = padded[y0 + 200 : y0 + 200 + 2 * half_h, x0 + 200 : x0 + 200 + 2 * half_w]
        tile = cv2.resize(crop, None, fx=scale, fy=scale, interpolation=cv2.INTER_NEAREST)
        if np.isfinite(x):
            p1 = (round((x - x0) * scale), round((y - y0) * scale))
            p2 = (round((x + w - x0) * scale), round((y + h - y0) * scale))
            cv2.rectangle(tile, p1, p2, (0, 0, 255), 1)
        label = str(frame) if np.isfinite(x) else f"{frame} hidden"
        cv2.putText(tile, label, (4, 16), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 3)
        cv2.putText(tile, label, (4, 16), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1)
        tiles.append(tile)
    blank = np.zeros_like(tiles[0])
    tiles += [blank] * (-len(tiles) % cols)
    rows = [np.hstack(tiles[i : i + cols]) for i in range(0, len(tiles), cols)]
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(out), np.vstack(rows), [cv2.IMWRITE_PNG_COMPRESSION, 9])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clip", type=Path, default=Path("../shared/data/uav123-person12"))
    parser.add_argument("--out", type=Path, help="the 300-line ground truth to write")
    parser.add_argument("--contact", type=Path, help="also draw a contact sheet here (PNG)")
    parser.add_argument("--step", type=int, default=3, help="contact sheet: every N-th frame")
    args = parser.parse_args(argv)
    if args.out is None and args.contact is None:
        parser.error("nothing to do: give --out and/or --contact")
    if args.out is not None:
        write_ground_truth(args.clip, args.out)
        truth = full_ground_truth(args.clip)
        print(f"{args.out}: {len(truth)} lines, {int(np.isnan(truth[:, 0]).sum())} NaN")
    if args.contact is not None:
        contact_sheet(args.clip, args.contact, step=args.step)
        print(f"{args.contact}: {args.contact.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
