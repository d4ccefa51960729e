"""``emts bench`` (per-stage latency; ``--peer-yolo``: against a peer detector; ``--peers``:
against the peer trackers) and ``emts demo``: the arguments; the jobs are
:mod:`emts.apps.bench`, :mod:`emts.apps.peer`, :mod:`emts.apps.peer_bench` and
:mod:`emts.apps.demo`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from emts.cli.common import (
    FPS,
    MODEL_HELP,
    SEED,
    add_detector_mode,
    add_fps,
    add_precision,
    add_threads,
    int_in,
    model_inputs,
    stage_b_warp,
)
from emts.errors import BadInputError
from emts.io import check_outputs, check_writable
from emts.precision import named_model

# Argument limits (docs/guides/cli.md lists them).
MAX_BENCH_FRAMES = 3000  # bench holds its whole clip in memory (640x512: 0.33 MB a frame)
MAX_BENCH_WARMUP = 1000
MAX_DEMO_FRAMES = 3000  # demo renders its whole clip in memory first (about 1 GB at 3,000)


def _cmd_bench(args: argparse.Namespace) -> int:
    from emts.apps.bench import format_table, run_bench

    _check_peer_flags(args)
    weights = None
    if args.peers:
        from emts.apps.peer_trackers import peer_weight_files

        weights = [str(p) for p in peer_weight_files(Path(args.peers))]
    inputs = model_inputs(model=args.model, peer_yolo=args.peer_yolo, peers=weights)
    check_outputs(args.clip, {"--json": args.json}, inputs)
    if args.peers:
        report, table = _bench_peer_trackers(args)
    elif args.peer_yolo:
        report, table = _bench_peer(args)
    else:
        report = run_bench(
            frames=args.frames,
            warmup=args.warmup,
            threads=args.threads,
            model=args.model,
            precision=args.precision,
            detector_mode=args.detector_mode,
            backend=args.backend,
            network_size=args.network_size,
            warp_at=stage_b_warp(args),  # None: the model's own
            pace=args.pace,
            coarse_pass=args.coarse_pass != "off",
        )
        table = format_table(report)
    print(table)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _check_peer_flags(args: argparse.Namespace) -> None:
    """Refuse the flags of ``--peers`` without it, and ``--pace`` with a peer."""
    if args.peers is None:
        for flag in ("clip", "lock", "fps"):
            if getattr(args, flag) is not None:
                raise BadInputError(f"--{flag} goes with --peers DIR (the peer trackers' bench)")
    peer = "--peers" if args.peers else "--peer-yolo" if args.peer_yolo else None
    if peer and args.pace is not None:
        raise BadInputError(f"--pace times the pipeline alone; {peer} runs frames back to back")
    if peer and not 1 <= args.rounds <= 20:
        raise BadInputError(f"--rounds {args.rounds}: must be between 1 and 20")


def _bench_peer_trackers(args: argparse.Namespace) -> tuple[dict, str]:
    """``emts bench --peers``: EMTS, VitTrack and NanoTrack v2 (and ``--peer-yolo``)
    interleaved per frame on ``--clip``; the report and its table."""
    from emts.apps.peer_bench import format_peer_trackers, run_peer_trackers
    from emts.apps.track import LockRequest

    lock = None
    if args.lock is not None:
        lock = LockRequest.parse(args.lock, "--lock")
        if lock.box is None:
            raise BadInputError(
                f"--lock {args.lock!r}: the peer trackers need a box: give X,Y,W,H[@FRAME]"
            )
    report = run_peer_trackers(
        args.peers,
        clip=args.clip,
        lock=lock,
        frames=args.frames,
        warmup=args.warmup,
        rounds=args.rounds,
        threads=args.threads,
        fps=args.fps,
        peer_yolo=args.peer_yolo,
        model=args.model,
        precision=args.precision,
        backend=args.backend,
        detector_mode=args.detector_mode,
        network_size=args.network_size,
        warp_at=stage_b_warp(args),
        coarse_pass=args.coarse_pass != "off",
    )
    return report, format_peer_trackers(report)


def _bench_peer(args: argparse.Namespace) -> tuple[dict, str]:
    """``emts bench --peer-yolo``: the interleaved YOLO/EMTS report and its table."""
    from emts.apps.peer import format_peer, run_peer

    report = run_peer(
        args.peer_yolo,
        frames=args.frames,
        warmup=args.warmup,
        threads=args.threads,
        rounds=args.rounds,
        precision=args.precision,
        model=args.model,
        backend=args.backend,
        warp_at=stage_b_warp(args),
    )
    return report, format_peer(report)


def _add_peer(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--peer-yolo",
        metavar="MODEL.onnx",
        help="also time this ONNX detector (e.g. YOLOv8n at 640) interleaved frame by frame "
        "with the whole pipeline and print the ratio peer / EMTS (median of --rounds)",
    )
    p.add_argument(
        "--rounds", type=int, default=3, help="--peer-yolo and --peers rounds, 1..20 (default: 3)"
    )
    p.add_argument(
        "--peers",
        metavar="DIR",
        help="time EMTS against the trackers a user would install instead, OpenCV's VitTrack "
        "and NanoTrack v2 (and --peer-yolo), interleaved frame by frame on --clip, and print "
        "each one's median and p90 ms/frame and ratio to EMTS (median of --rounds), then each "
        "tracker's ms/frame as a stream, alone over the same frames by the wall clock (EMTS as "
        "emts track runs a file, with its reading thread); DIR holds "
        "their weights, laid out as vittrack/object_tracking_vittrack_2023sep.onnx and "
        "nanotrackv2/nanotrack_{backbone,head}_sim.onnx (never shipped with emts)",
    )
    p.add_argument(
        "--clip",
        metavar="VIDEO_OR_FOLDER",
        help="--peers: the clip (a video, an image folder or a glob; needs --lock) (default: "
        "the synthetic 640x512 gusty clip, locked on its walker; the README's figure is about "
        "real 1280x720 video)",
    )
    p.add_argument(
        "--lock",
        metavar="X,Y,W,H[@F]",
        help="--peers: the box (input px) every tracker locks on at frame F (default 0), where "
        "the timing starts (earlier frames are read and dropped)",
    )
    add_fps(p)


def add_bench(sub) -> None:
    p = sub.add_parser(
        "bench",
        help="per-stage latency at 640x512 input",
        description="Time each runtime stage (median and p90 ms/frame) on a gusty clip over "
        "a real aerial still at 640x512. The total is timed end to end per frame. With "
        "--peer-yolo: against a YOLO detector; with --peers DIR: against OpenCV's VitTrack and "
        "NanoTrack v2, interleaved frame by frame on --clip, locked on --lock.",
    )
    p.add_argument("--json", metavar="OUT", help="also write the report as JSON")
    add_threads(p)
    p.add_argument(
        "--frames",
        type=int_in(1, MAX_BENCH_FRAMES),
        default=300,
        help=f"timed frames, 1..{MAX_BENCH_FRAMES} (default: %(default)s)",
    )
    p.add_argument(
        "--warmup",
        type=int_in(0, MAX_BENCH_WARMUP),
        default=30,
        help=f"untimed frames first, 0..{MAX_BENCH_WARMUP} (default: %(default)s)",
    )
    p.add_argument(
        "--pace",
        type=FPS,
        metavar="FPS",
        help="feed the frames at FPS as a live camera does, the pipeline idle in between "
        "(an idle CPU is slower to start a frame); default: back to back",
    )
    p.add_argument("--model", type=named_model, help=f"{MODEL_HELP}; timed as stage C")
    add_precision(p)
    add_detector_mode(p)
    _add_peer(p)
    p.set_defaults(run=_cmd_bench)


def _cmd_demo(args: argparse.Namespace) -> int:
    from emts.apps.demo import TAP_FRAME, run_demo

    if args.frames < TAP_FRAME + 1:
        raise BadInputError(
            f"--frames {args.frames}: the operator taps at frame {TAP_FRAME}; "
            f"give at least {TAP_FRAME + 1} frames"
        )
    check_writable("--out-dir", Path(args.out_dir), folder=True)
    run_demo(Path(args.out_dir), frames=args.frames, seed=args.seed)
    return 0


def add_demo(sub) -> None:
    p = sub.add_parser(
        "demo",
        help="end-to-end tracking demo on a generated clip (the README's main job)",
        description="Render a person-following drone over a real HIT-UAV still from a held-out "
        "plate block (a person walking behind a tree, a dog, a wind gust), tap the person at "
        "frame 5, track with the shipped models, and write the input and annotated videos, the "
        "JSON lines, the mode timeline, the channels figure and a summary against the truth.",
    )
    p.add_argument("--out-dir", default="emts-demo", help="output folder (default: %(default)s)")
    p.add_argument(
        "--frames",
        type=int_in(1, MAX_DEMO_FRAMES),
        default=150,
        help=f"clip length, tap frame + 1 (6) to {MAX_DEMO_FRAMES} (default: %(default)s)",
    )
    p.add_argument("--seed", type=SEED, default=0, help="random seed (default: %(default)s)")
    p.set_defaults(run=_cmd_demo)
