"""``emts channels`` (Stages A+B) and ``emts detect`` (Stages A-C): the arguments; the jobs
are :mod:`emts.apps.channels` and :mod:`emts.apps.detect`."""

from __future__ import annotations

import argparse
import sys

from emts.cli.common import (
    PROBABILITY,
    add_detector_mode,
    add_fps,
    add_network_options,
    add_precision,
    channel_config,
    finished,
    input_model,
    model_inputs,
    open_stream,
    stage_c,
)
from emts.io import check_outputs, check_video_suffix


def _cmd_channels(args: argparse.Namespace) -> int:
    from emts.apps.channels import run_channels

    out = None if args.no_video else args.out
    check_video_suffix("--out", out)
    check_outputs(
        args.source, {"--out": out, "--jsonl": args.jsonl}, model_inputs(model=args.model)
    )
    source = open_stream(args)
    frames = run_channels(
        source,
        out,
        args.jsonl,
        ego_compensation=not args.no_ego,
        fps=args.fps,
        model=args.model,
        threshold=args.threshold,
    )
    written = [p for p in (out, args.jsonl) if p and p != "-"]
    ended = f"; incomplete input: {source.incomplete}" if source.incomplete else ""
    print(f"{frames} frames -> {', '.join(written) or 'nothing written'}{ended}", file=sys.stderr)
    return finished(source)


def add_channels(sub) -> None:
    p = sub.add_parser(
        "channels",
        help="Stages A+B: ego-motion JSONL and a video of the L, R, D channels",
        description="Estimate camera ego-motion (Stage A) and form the motion channels "
        "(Stage B) for every frame. SOURCE is a video file, a folder of images (sorted by "
        "name), a glob pattern in quotes, or a camera (camera:N, or N when no file or folder "
        "of that name exists).",
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("--out", default="channels.mp4", help="channel video (default: %(default)s)")
    p.add_argument("--no-video", action="store_true", help="do not write the channel video")
    p.add_argument(
        "--jsonl",
        default="ego.jsonl",
        help="one JSON object per frame: M (input px, frame i-1 -> i), method, tracks, "
        "inlier_ratio, H (the homography Stage B warped by, input px; null: it used M); "
        "'-' for stdout (default: %(default)s)",
    )
    p.add_argument(
        "--no-ego",
        action="store_true",
        help="skip ego-motion compensation in the channels (identity warp; ablation)",
    )
    p.add_argument(
        "--model",
        type=input_model,
        default=False,
        help="show the channels as this detector is fed them (its network size, Stage B warp "
        "and R span, after its residual-level normalization), the network's heatmap, and "
        "the detections emts detect reports at --threshold: auto (picked by the frames, as "
        "emts track does), default, thermal, or an ONNX file (default: no detector; eq. 2's "
        "channels at 256x192)",
    )
    p.add_argument(
        "--threshold",
        type=PROBABILITY,
        default=0.3,
        help="with --model: detection score tau_s in [0, 1] (default: %(default)s)",
    )
    add_fps(p)
    p.set_defaults(run=_cmd_channels)


def _cmd_detect(args: argparse.Namespace) -> int:
    from emts.apps.detect import run_detect
    from emts.stages.c_detect.boxfit import DEFAULT_BOX_FIT

    check_outputs(args.source, {"--jsonl": args.jsonl}, model_inputs(model=args.model))
    box_fit = None if args.network_boxes else DEFAULT_BOX_FIT
    stage = stage_c(args)
    source = open_stream(args)
    run_detect(
        source,
        args.jsonl,
        stage,
        args.threshold,
        box_fit,
        channel_config=channel_config(args),
        fps=args.fps,
    )
    return finished(source)


def add_detect(sub) -> None:
    p = sub.add_parser(
        "detect",
        help="run Stages A-C and write detections as JSON lines",
        description="One JSON object per frame: {frame, detections: [{box: [x, y, w, h], score}]} "
        "(plus detector: default|thermal on the frame where --model auto picked it) "
        "in the input's pixels. SOURCE as for emts channels. On colour frames each box is "
        "fitted to the person's own pixels (their shadow left out) and scores 0.1 more where "
        "it fits and moves, 0.1 less where it does not move, as in emts track.",
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("--jsonl", required=True, help="output JSON lines ('-' for stdout)")
    p.add_argument(
        "--network-boxes",
        action="store_true",
        help="the detector's boxes and scores as the network gives them (no fit to the "
        "person's own pixels on colour frames, no motion check)",
    )
    add_network_options(p)
    add_precision(p)
    add_detector_mode(p)
    p.set_defaults(run=_cmd_detect)
