"""The ``emts`` command.

Every subcommand reports bad input as one line on stderr and exits with code 2; results are
streamed (JSON lines flushed per frame), so an interrupted run keeps what it computed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from emts import __version__
from emts.config import ChannelConfig
from emts.errors import BadInputError, EmtsError
from emts.io import JsonlWriter, VideoWriter, open_source

log = logging.getLogger("emts")


def _motion_record(index: int, result) -> dict:
    matrix = result.motion_in_input() if index > 0 else np.eye(2, 3)
    return {
        "frame": index,
        "M": [[round(float(v), 6) for v in row] for row in matrix],
        "method": result.motion.method,
        "tracks": int(result.motion.tracks),
        "inlier_ratio": round(float(result.motion.inlier_ratio), 4),
    }


def run_channels(
    source,
    out: str | None,
    jsonl: str | None,
    ego_compensation: bool = True,
    progress: bool = True,
) -> int:
    """Stages A and B over ``source``; write the channel video and the ego-motion JSONL.

    Returns:
        The number of frames processed.
    """
    from emts.draw import channel_panel
    from emts.pipeline import MotionFrontEnd

    front = MotionFrontEnd(channel_config=ChannelConfig(ego_compensation=ego_compensation))
    frames = 0
    with open_source(source) as frames_in:
        writer = VideoWriter(out, fps=frames_in.fps) if out else None
        records = JsonlWriter(jsonl) if jsonl else None
        try:
            bar = tqdm(
                frames_in,
                total=frames_in.length,
                desc="channels",
                unit="frame",
                disable=None if progress else True,
            )
            for index, frame in enumerate(bar):
                try:
                    result = front.step(frame)
                except BadInputError as error:
                    raise BadInputError(f"frame {index}: {error}") from None
                if records:
                    records.write(_motion_record(index, result))
                if writer:
                    caption = (
                        f"frame {index}  {result.motion.method}  tracks {result.motion.tracks}"
                    )
                    writer.write(channel_panel(result.channels, caption))
                frames += 1
        finally:
            if writer:
                writer.close()
            if records:
                records.close()
    return frames


def _cmd_channels(args: argparse.Namespace) -> int:
    out = None if args.no_video else args.out
    frames = run_channels(args.source, out, args.jsonl, ego_compensation=not args.no_ego)
    written = [p for p in (out, args.jsonl) if p and p != "-"]
    print(f"{frames} frames -> {', '.join(written) or 'nothing written'}", file=sys.stderr)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from emts.bench import format_table, run_bench

    if args.frames < 1 or args.threads < 1:
        raise BadInputError("--frames and --threads must be positive")
    report = run_bench(frames=args.frames, warmup=args.warmup, threads=args.threads)
    print(format_table(report))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from emts.demo import run_demo

    run_demo(Path(args.out_dir), frames=args.frames, seed=args.seed)
    return 0


def _cmd_synth_set(args: argparse.Namespace) -> int:
    from emts.synth.generate import generate_set

    if args.clips is not None and args.clips < 1:
        raise BadInputError("--clips must be positive")
    manifest = generate_set(
        args.set,
        args.out,
        clips=args.clips,
        seed=args.seed,
        workers=args.workers,
        hituav=args.hituav,
    )
    print(
        f"{manifest['clips']} clips, {manifest['frames']} frames in {manifest['seconds']} s "
        f"({manifest['frames_per_second']} frames/s), "
        f"{manifest['bytes'] / 1e6:.1f} MB -> {args.out}"
    )
    return 0


def _cmd_synth_preview(args: argparse.Namespace) -> int:
    from emts.synth.preview import contact_sheet

    print(contact_sheet(args.folder, args.out, clips=args.clips, frame=args.frame))
    return 0


def _cmd_synth_export(args: argparse.Namespace) -> int:
    from emts.synth.preview import export_clip
    from emts.synth.store import ClipSet

    clip_set = ClipSet(args.folder)
    if args.clip not in clip_set.indices:
        raise BadInputError(f"{args.folder}: no clip {args.clip}")
    print(export_clip(args.folder, args.out, args.clip))
    return 0


def _add_synth(sub) -> None:
    from emts.synth.common import SETS

    synth = sub.add_parser(
        "synth",
        help="generate and inspect the synthetic motion curriculum",
        description="Generate clip sets of the synthetic motion curriculum (paper section 4), "
        "look at them, and export clips as image folders. The on-disk format is described in "
        "the README.",
    )
    synth_sub = synth.add_subparsers(dest="synth_command", required=True, metavar="SET|ACTION")
    for name, kind in SETS.items():
        p = synth_sub.add_parser(name, help=f"{kind.description} (default {kind.default_clips})")
        p.add_argument("--out", required=True, help="output folder")
        p.add_argument("--clips", type=int, help=f"number of clips (default {kind.default_clips})")
        p.add_argument("--seed", type=int, default=0, help="base seed (default: %(default)s)")
        p.add_argument("--workers", type=int, default=2, help="processes (default: %(default)s)")
        p.add_argument(
            "--hituav",
            metavar="DIR",
            help="HIT-UAV folder (train.json + train/) for real plates; without it plates "
            "are procedural only",
        )
        p.set_defaults(run=_cmd_synth_set, set=name)
    p = synth_sub.add_parser("preview", help="contact sheet (L, R, D with boxes) of a set")
    p.add_argument("folder", metavar="DIR")
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument("--clips", type=int, default=8, help="rows (default: %(default)s)")
    p.add_argument("--frame", type=int, default=9, help="frame of each clip (default: %(default)s)")
    p.set_defaults(run=_cmd_synth_preview)
    p = synth_sub.add_parser("export", help="write one clip as PNG frames plus labels.json")
    p.add_argument("folder", metavar="DIR")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--clip", type=int, default=0, help="clip index (default: %(default)s)")
    p.set_defaults(run=_cmd_synth_export)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="emts",
        description="EMTS: follow-me aerial person tracking on small CPUs.",
    )
    parser.add_argument("--version", action="version", version=f"emts {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "channels",
        help="Stages A+B: ego-motion JSONL and a video of the L, R, D channels",
        description="Estimate camera ego-motion (Stage A) and form the motion channels "
        "(Stage B) for every frame. SOURCE is a video file, a folder of images (sorted by "
        "name), a glob pattern in quotes, or a camera index.",
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("--out", default="channels.mp4", help="channel video (default: %(default)s)")
    p.add_argument("--no-video", action="store_true", help="do not write the channel video")
    p.add_argument(
        "--jsonl",
        default="ego.jsonl",
        help="one JSON object per frame: M (input px, frame i-1 -> i), method, tracks, "
        "inlier_ratio; '-' for stdout (default: %(default)s)",
    )
    p.add_argument(
        "--no-ego",
        action="store_true",
        help="skip ego-motion compensation in the channels (identity warp; ablation)",
    )
    p.set_defaults(run=_cmd_channels)

    p = sub.add_parser(
        "bench",
        help="per-stage latency at 640x512 input",
        description="Time each runtime stage (median and p90 ms/frame) on a gusty clip over "
        "a real aerial still at 640x512. The total is timed end to end per frame.",
    )
    p.add_argument("--json", metavar="OUT", help="also write the report as JSON")
    p.add_argument("--threads", type=int, default=2, help="worker threads (default: %(default)s)")
    p.add_argument("--frames", type=int, default=300, help="timed frames (default: %(default)s)")
    p.add_argument(
        "--warmup", type=int, default=30, help="untimed frames first (default: %(default)s)"
    )
    p.set_defaults(run=_cmd_bench)

    p = sub.add_parser(
        "demo",
        help="make a gusty clip over a real aerial still and show its motion channels",
        description="Render a clip of a hovering, gust-shaken camera over a packaged real "
        "HIT-UAV still (its person cut out and walking), run Stages A+B on it, and write the "
        "input video, the channel video, the ego-motion JSONL, the true motion and a summary.",
    )
    p.add_argument("--out-dir", default="emts-demo", help="output folder (default: %(default)s)")
    p.add_argument("--frames", type=int, default=150, help="clip length (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    p.set_defaults(run=_cmd_demo)

    _add_synth(sub)
    return parser


def _quiet_opencv() -> None:
    """Keep OpenCV's and FFmpeg's own console chatter out of our one-line errors."""
    import cv2

    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # AV_LOG_QUIET
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        format="emts: %(levelname)s: %(message)s",
        level=logging.INFO if args.verbose else logging.WARNING,
    )
    if not args.verbose:
        _quiet_opencv()
    try:
        return args.run(args)
    except EmtsError as error:
        print(f"emts: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("emts: interrupted; results written so far are kept", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `emts channels clip.mp4 --jsonl - | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
