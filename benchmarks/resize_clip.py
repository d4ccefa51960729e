"""Write an image folder (or video) resized to WxH as an mp4: e.g. uav123-person12's 640x360
frames back at the 1280x720 its camera recorded (UAV123 ships them at 1280x720; our copy was
halved), the input size the speed issue measures on.

    python benchmarks/resize_clip.py ../shared/data/uav123-person12/frames --size 1280x720 \\
        --fps 10 --out /tmp/p12_720.mp4

Boxes scale with the frames: person12's first label 245,117.5,17,42.5 is 490,235,34,85 there.
``--gray``: the frames in gray (OpenCV's weights), written as a one-channel video -- a monochrome
camera's clip, on which ``emts`` picks its thermal model.
"""

from __future__ import annotations

import argparse
import sys

import cv2
from tqdm import tqdm

from emts.cli.common import parse_size
from emts.io import open_source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="a video or image folder")
    parser.add_argument("--size", type=parse_size, required=True, metavar="WxH")
    parser.add_argument("--fps", type=float, default=10.0)
    parser.add_argument("--out", required=True, help="the .mp4 to write")
    parser.add_argument("--gray", action="store_true", help="in gray (a monochrome camera)")
    args = parser.parse_args()
    writer = None
    with open_source(args.source, fps=args.fps) as frames:
        for frame in tqdm(frames, desc="resize", unit="frame", disable=None):
            if writer is None:
                fourcc = cv2.VideoWriter_fourcc(*"mp4v")
                writer = cv2.VideoWriter(args.out, fourcc, args.fps, args.size, not args.gray)
                if not writer.isOpened():
                    print(f"resize_clip: cannot write {args.out}", file=sys.stderr)
                    return 2
            if args.gray and frame.ndim == 3:
                frame = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
            writer.write(cv2.resize(frame, args.size, interpolation=cv2.INTER_CUBIC))
    if writer is None:
        print(f"resize_clip: no frames in {args.source}", file=sys.stderr)
        return 2
    writer.release()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
