"""``emts track`` and ``emts serve``: the arguments; the jobs are :mod:`emts.apps.track`,
:mod:`emts.apps.serve` and :mod:`emts.apps.mavlink`."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from emts.cli.common import (
    add_detector_mode,
    add_network_options,
    add_precision,
    channel_config,
    finished,
    float_in,
    int_in,
    model_inputs,
    open_stream,
    stage_c,
)
from emts.errors import BadInputError
from emts.io import check_outputs, check_png, check_video_suffix
from emts.live import DEFAULT_RECONNECT_TIMEOUT_S


def _gimbal_follow(args: argparse.Namespace):
    """Check --mavlink/--follow/--gimbal together; the gimbal follow config or None."""
    if (args.follow or args.gimbal) and not args.mavlink:
        raise BadInputError("--follow and --gimbal steer a gimbal over MAVLink: add --mavlink")
    if not args.mavlink:
        return None
    from emts.apps.mavlink import check_connection, follow_config

    check_connection(args.mavlink, "--mavlink")
    follow = follow_config(args.gimbal, "--gimbal") if args.follow == "gimbal" else None
    if args.gimbal and follow is None:
        raise BadInputError("--gimbal sets the follow controller: add --follow gimbal")
    return follow


def _add_stream_options(p: argparse.ArgumentParser) -> None:
    """The pipeline and drone options that ``emts track`` and ``emts serve`` share."""
    add_network_options(p)
    p.add_argument(
        "--reconnect-timeout",
        type=float_in(0, 86400),
        metavar="S",
        help="a live source (stream URL, camera) that drops is reconnected with backoff for "
        "this many seconds before the run ends (exit 3); 0 keeps trying for ever "
        f"(default: {DEFAULT_RECONNECT_TIMEOUT_S:g})",
    )
    p.add_argument("--verifier", help="ONNX verifier (default: the shipped model)")
    p.add_argument("--no-verifier", action="store_true", help="run without Stage E")
    p.add_argument(
        "--mavlink",
        metavar="CONNECTION",
        help="act as a MAVLink camera component on this pymavlink connection (e.g. "
        "udpout:127.0.0.1:14550, udpin:0.0.0.0:14550, /dev/ttyUSB0,57600): heartbeat, "
        "tracking status per frame, TRACK_POINT / TRACK_RECTANGLE / STOP_TRACKING commands "
        "(needs the [mavlink] extra)",
    )
    p.add_argument(
        "--follow",
        choices=["gimbal"],
        help="steer the gimbal toward the target (GIMBAL_MANAGER_SET_PITCHYAW rates; "
        "needs --mavlink)",
    )
    p.add_argument(
        "--gimbal",
        action="append",
        metavar="KEY=VALUE",
        help="override the gimbal follow controller (repeatable): kp, ki, kd, max_yaw_rate, "
        "max_pitch_rate (rad/s), dead_band, integral_limit, max_dt; see GimbalFollowConfig",
    )


DEFAULT_JSONL = "track.jsonl"


def _pipeline(args: argparse.Namespace, auto_lock: bool):
    """The pipeline a track or serve command runs: Stage C from the detector options, the
    verifier (``--verifier``, the shipped one, or none with ``--no-verifier``)."""
    from emts.pipeline import Pipeline
    from emts.precision import model_for
    from emts.stages.e_verify import Verifier
    from emts.stages.e_verify import default_model_path as default_verifier

    verifier = None
    if not args.no_verifier and (args.verifier or default_verifier().is_file()):
        verifier = Verifier(model_for("verifier", args.verifier, args.precision, 1, args.backend))
    return Pipeline(
        stage_c(args),
        verifier,
        auto_lock=auto_lock,
        threads=args.threads,
        channel_config=channel_config(args),
    )


def _cmd_track(args: argparse.Namespace) -> int:
    from emts.apps.track import BoxWriter, LockRequest, run_track

    lock = LockRequest.parse(args.lock, "--lock")  # one line for every malformed tap
    check_video_suffix("--out", args.out)
    check_png("--timeline", args.timeline)
    if args.format and not args.boxes:
        raise BadInputError("--format is the format of --boxes FILE; give --boxes too")
    jsonl = args.jsonl or DEFAULT_JSONL
    outputs = {"--out": args.out, "--jsonl": jsonl, "--timeline": args.timeline}
    outputs["--boxes"] = args.boxes
    check_outputs(args.source, outputs, model_inputs(model=args.model, verifier=args.verifier))
    if not args.force:  # an earlier run's results are not overwritten unasked
        for flag, path in outputs.items():
            if path and Path(path).is_file():  # (a device such as /dev/full is no run's)
                named = (
                    f"{flag} {path}" if flag != "--jsonl" or args.jsonl else f"JSON lines {path}"
                )
                raise BadInputError(
                    f"{named} exists (an earlier run's?); choose another file or pass --force"
                )
    follow = _gimbal_follow(args)
    pipeline = _pipeline(args, auto_lock=lock.auto)
    with contextlib.ExitStack() as stack:
        hook = None
        if args.mavlink:
            from emts.apps.mavlink import MavlinkCamera

            hook = stack.enter_context(MavlinkCamera(args.mavlink, pipeline, follow))
        frames = stack.enter_context(open_stream(args))
        boxes = BoxWriter(args.boxes, args.format or "otb") if args.boxes else None
        summary = run_track(
            frames,
            lock,
            args.out,
            jsonl,
            pipeline,
            args.timeline,
            fps=args.fps,
            hook=hook,
            boxes=boxes,
        )
    if not getattr(args, "quiet", False):
        written = ", ".join(
            p for p in (jsonl, args.out, args.timeline, args.boxes) if p and p != "-"
        )
        print(summary.text() + (f"\nwrote {written}" if written else ""), file=sys.stderr)
    return finished(frames)


def add_track(sub) -> None:
    p = sub.add_parser(
        "track",
        help="follow one person: Stages A-E, JSON lines, annotated video",
        description="Track one person through SOURCE (video file, image folder, quoted glob, "
        "camera:N, picamera[:N] (a Raspberry Pi camera, through picamera2), or a live stream: "
        "rtsp://, rtsps://, rtmp://, http(s):// MJPEG, udp://, "
        "tcp:// URL, rtsp://...?tcp for RTSP over TCP, or a quoted GStreamer pipeline ending in "
        "appsink where OpenCV has GStreamer; a live source -- stream or camera -- is read "
        "newest-frame-first, reconnects for --reconnect-timeout s when it drops, and its lines "
        "add dropped/stream). Writes one "
        "JSON object per frame: {frame, mode, target: {box, score, p_human, verified, "
        "measured_by} or null, ms: {A..E}} plus event/lock_source when a lock is made, lost "
        "or re-made (event no_target: a tap found nothing to lock on); boxes in the input's "
        "pixels.",
    )
    p.add_argument("source", metavar="SOURCE", help="video, folder, glob, camera:N or stream URL")
    p.add_argument(
        "--lock",
        default="auto",
        help="'auto' (lock on its own on someone walking, once the verifier accepts them, "
        "section 6.7; a person standing still is not auto-locked: tap them), X,Y[@FRAME]: "
        "operator tap at input pixel X,Y on frame FRAME (default 0), locking at once on the "
        "person under the point (where nothing is detected, not even faintly, and nothing "
        "stands out from the ground, it tries again on the next 5 frames; then no lock, a "
        "warning, event no_target), or "
        "X,Y,W,H[@FRAME]: lock on exactly "
        "that box",
    )
    p.add_argument("--out", help="annotated video (e.g. annotated.mp4)")
    p.add_argument(
        "--jsonl",
        help=f"JSON lines ('-' for stdout; default: {DEFAULT_JSONL}, never overwritten "
        "without --force)",
    )
    p.add_argument("--timeline", help="also write the mode timeline PNG here (.png)")
    p.add_argument(
        "--boxes",
        metavar="FILE",
        help="also write the target's box per frame as text in --format (for trackers' scorers)",
    )
    p.add_argument(
        "--format",
        choices=("otb", "mot"),
        help="of --boxes: otb = UAV123/OTB x,y,w,h a line per frame, NaN,NaN,NaN,NaN where the "
        "target is not locked; mot = MOT Challenge frame,id,x,y,w,h,conf,-1,-1,-1 for the "
        "locked frames (default: otb)",
    )
    p.add_argument("--force", action="store_true", help="overwrite output files that exist already")
    p.add_argument(  # also emts -q track: the top-level option (SUPPRESS keeps its value)
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="errors only: no progress bar, warnings or summary on stderr",
    )
    _add_stream_options(p)
    add_precision(p)
    add_detector_mode(p)
    p.set_defaults(run=_cmd_track)


def _cmd_serve(args: argparse.Namespace) -> int:
    from emts.apps.serve import serve

    follow = _gimbal_follow(args)
    pipeline = _pipeline(args, auto_lock=not args.no_auto_lock)
    return serve(
        args.source,
        pipeline,
        host=args.host,
        port=args.port,
        fps=args.fps,
        loop=args.loop,
        mavlink=args.mavlink,
        follow=follow,
        start=args.start,
        reconnect_timeout=args.reconnect_timeout,
    )


def add_serve(sub) -> None:
    p = sub.add_parser(
        "serve",
        help="ground-station web page: live annotated video, click to lock (needs [serve])",
        description="Track SOURCE as emts track does and serve a page on HOST:PORT: GET / the "
        "page (click the person to lock, drag a box, Unlock), GET /stream.mjpg the annotated "
        "video, GET /state the latest emts track JSON line, GET /status the run (and the last "
        'tap\'s outcome: lock or no_target), POST /lock {"x", "y"[, "w", "h"]} in input pixels, '
        "POST /unlock. Runs until Ctrl-C.",
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument(
        "--port",
        type=int_in(0, 65535, " (0: any free port)"),
        default=8080,
        help="TCP port, 0 for any free one (default: %(default)s)",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: %(default)s, this machine only; 0.0.0.0 opens "
        "the page to the network, with no authentication)",
    )
    p.add_argument("--loop", action="store_true", help="play a file source again and again")
    p.add_argument(
        "--start",
        choices=["auto", "viewer", "now"],
        default="auto",
        help="when the tracking starts: viewer (when the page or /stream.mjpg is first opened, "
        "so a recorded flight plays from its first frame for whoever watches), now, or auto: "
        "viewer for a file or folder, now for a camera or stream and with --mavlink "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--no-auto-lock", action="store_true", help="lock only on the operator's click or box"
    )
    _add_stream_options(p)
    add_precision(p)
    add_detector_mode(p)
    p.set_defaults(run=_cmd_serve)
