"""``emts eval`` of the tracking pipeline: track and verifier (a real clip with ground truth),
reacq, fp and autolock (synthetic benches); :mod:`.evaluate` mounts them. The protocols are in
:mod:`emts.eval` (imported when a command runs: it needs the train extra)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from emts.cli.common import (
    INDEX,
    MODEL_HELP,
    POSITIVE,
    POSITIVE_FLOAT,
    add_detector_mode,
    add_fps,
    add_input_model,
    channel_config,
    open_clip_set,
    require_train_extra,
    stage_c,
)
from emts.errors import BadInputError
from emts.io import check_writable
from emts.precision import named_model
from emts.synth.common import CONTRAST_SCALE


def _labelled_clip(args: argparse.Namespace):
    """(ground truth, first frame, last frame or None) of a clip command's --gt/--frames."""
    from emts.eval.track_eval import parse_span, read_ground_truth

    truth = read_ground_truth(args.gt, args.target_id)
    first, last = parse_span(args.frames) if args.frames else (0, None)
    if last is not None and last >= len(truth):
        raise BadInputError(f"--frames {args.frames}: the ground truth has {len(truth)} rows")
    return truth, first, last


def _clip_name(clip: str) -> str:
    """A clip's name for reports: its folder's name for an image folder called frames/img."""
    path = Path(clip).resolve()
    return path.parent.name if path.name in ("frames", "img", "images") else path.name


def _add_labelled_clip(p: argparse.ArgumentParser) -> None:
    p.add_argument("clip", metavar="CLIP", help="video file, image folder or quoted glob")
    p.add_argument(
        "--gt",
        required=True,
        help="ground truth: UAV123/OTB x,y,w,h lines (NaN = absent; line i+1 = frame i) or "
        "MOTChallenge gt.txt with --target-id",
    )
    p.add_argument("--target-id", type=int, help="MOTChallenge target id")


def _cmd_eval_track(args: argparse.Namespace) -> int:
    require_train_extra()
    from emts.apps.track import LockRequest
    from emts.eval.track_eval import TrackEvalConfig, evaluate_track, parse_span
    from emts.eval.track_report import write_report
    from emts.pipeline import Pipeline
    from emts.stages.e_verify import Verifier
    from emts.stages.e_verify import default_model_path as default_verifier

    truth, first, last = _labelled_clip(args)
    point = box = None
    lock_frame = first
    auto = False
    if args.lock is not None:
        request = LockRequest.parse(args.lock, "--lock")
        auto = request.auto
        if not auto:
            point, box, lock_frame = (request.x, request.y), request.box, request.frame
    elif args.lock_gt is not None:
        lock_frame = args.lock_gt
    if lock_frame >= len(truth):
        raise BadInputError(f"lock frame {lock_frame}: the ground truth has {len(truth)} rows")
    out = Path(args.out)
    check_writable("--out", out, folder=True)
    verifier = None
    if not args.no_verifier and (args.verifier or default_verifier().is_file()):
        verifier = Verifier(args.verifier)
    pipeline = Pipeline(
        stage_c(args), verifier, auto_lock=auto, channel_config=channel_config(args)
    )
    config = TrackEvalConfig(
        lock_frame=lock_frame,
        lock_point=point,
        lock_box=box,
        auto=auto,
        first=first,
        last=last,
        occlude=tuple(parse_span(t) for t in args.occlude or []),
        remove=tuple(parse_span(t) for t in args.remove or []),
        gust=args.gust,
        leave=args.leave,
        enter=args.enter,
        lookalike=tuple(parse_span(t) for t in args.lookalike or []),
        fps=args.fps,
    )
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    records = out / "frames.jsonl"
    try:
        report = evaluate_track(args.clip, truth, config, pipeline, records)
    except BadInputError:  # refused before a frame was scored: leave no empty files behind
        if records.is_file() and records.stat().st_size == 0:
            records.unlink()
        if created and not any(out.iterdir()):
            out.rmdir()
        raise
    write_report(report, out, " ".join(["emts", *sys.argv[1:]]), _clip_name(args.clip))
    print(
        f"lock recall {report['lock_recall']:.3f} over {report['visible_frames']} visible "
        f"frames, {report['false_lock_frames']} false-lock frames, centre error median "
        f"{report['centre_error_px']['median']} px, success AUC (box IoU) "
        f"{report['box_overlap']['success_auc']}, first lock at frame "
        f"{report['first_lock_frame']}"
    )
    if "leave" in report:
        leave = report["leave"]
        print(
            f"leave path {leave['path']}: pan from frame {leave['pan_from']}, out through the "
            f"{leave['exit']} on frames {leave['out_of_view'][0]}:{leave['out_of_view'][1]}, "
            f"back through the {leave['entry']}, framed again on frame {leave['framed_again']}"
        )
    if "enter" in report:
        enter = report["enter"]
        print(
            f"enter: {enter['visible_on_lock_frame']:.0%} of the person in view on the lock "
            f"frame, cut by the window's {enter['edge']}; framed on frame {enter['framed']}"
        )
    for span in report["hidden_spans"]:
        print(
            f"{span['kind']} {span['frames'][0]}:{span['frames'][1]}: locked "
            f"{span['locked_frames_after_vanishing']} frames after vanishing, "
            f"{span['relocks_while_hidden']} relocks while hidden, recovered after "
            f"{span['recovery_frames']} frames"
        )
    for span in report["lookalike_spans"]:
        print(
            f"lookalike {span['frames'][0]}:{span['frames'][1]}: target on the copy on "
            f"{span['frames_on_copy']} frames, locked on the person on "
            f"{span['locked_on_person_frames']}, ended on the person: {span['ended_on_person']}"
        )
    print(f"report: {out}/report.md")
    return 0


def add_track(eval_sub) -> None:
    p = eval_sub.add_parser(
        "track",
        help="lock recall, false locks and recovery on a real clip with ground truth",
        description="Tap the person (by default at the ground truth's centre on the first "
        "frame of --frames) and measure: lock recall (target centre within max(20 px, h/2) "
        "of the truth), false-lock frames, centre error, the box's fit (success AUC over IoU "
        "thresholds, a frame not locked counting 0; its width and height over the person's), "
        "first-lock frame, and for every "
        "--occlude/--remove/--leave span how long the lock stayed, whether anything else was "
        "locked and how many frames the recovery took; for every --lookalike span the frames "
        "the target was on the copy and whether it ended on the person. Writes report.md, "
        "report.json, frames.jsonl and timeline.png (and contact.png, delivered frames, with "
        "--leave or --lookalike).",
    )
    _add_labelled_clip(p)
    lock = p.add_mutually_exclusive_group()
    lock.add_argument(
        "--lock",
        help="X,Y[@F] or X,Y,W,H[@F] in input px (as emts track), or 'auto': no tap, the "
        "pipeline locks on its own (section 6.7) and is scored from the first frame",
    )
    lock.add_argument(
        "--lock-gt",
        type=INDEX,
        metavar="F",
        help="tap at the ground truth's centre on frame F (default: first frame of --frames)",
    )
    p.add_argument("--frames", metavar="A:B", help="evaluate frames A..B (default: all labelled)")
    p.add_argument(
        "--occlude",
        action="append",
        metavar="A:B",
        help="hide the person behind a scene-anchored inpainted patch on frames A..B (repeatable)",
    )
    p.add_argument(
        "--remove",
        action="append",
        metavar="A:B",
        help="cut the person out of frames A..B, as if out of view (repeatable)",
    )
    p.add_argument(
        "--gust", type=INDEX, metavar="SEED", help="warp the clip along a gusty camera path"
    )
    p.add_argument(
        "--leave",
        type=int,
        metavar="PATH",
        help="leave-and-return: a 2x zoomed-in camera window follows the person, pans until "
        "they leave the view, goes around and brings them back elsewhere. PATH 1: out left, "
        "back from the top; 2: out right, back from the top; 3: out the top, back from the "
        "left; 4: out the top-left corner, back from the left; 5: out the top-right corner, "
        "back from the right; 6: out the bottom, back from the left (planned from the ground "
        "truth; refused where the person is never in the part of the frame the path needs)",
    )
    p.add_argument(
        "--enter",
        metavar="EDGE",
        help="a person walking into the view: a 2x zoomed-in camera window starts with the "
        "person cut by its EDGE (left, right, top or bottom; 60%% of them in view, where the "
        "tap lands), then pans to frame them and follows them (refused where the person is "
        "not in the part of the frame that edge needs; not with --leave)",
    )
    p.add_argument(
        "--lookalike",
        action="append",
        metavar="A:B",
        help="on frames A..B a copy of the person walks across them (at right angles, at "
        "their speed, over their position on the middle frame) (repeatable)",
    )
    add_input_model(p)
    p.add_argument("--verifier", help="ONNX verifier (default: the shipped model)")
    p.add_argument("--no-verifier", action="store_true", help="run without Stage E")
    p.add_argument("--out", default="reports/track", help="report folder (default: %(default)s)")
    add_fps(p)
    add_detector_mode(p)
    p.set_defaults(run=_cmd_eval_track)


def _cmd_eval_verifier(args: argparse.Namespace) -> int:
    require_train_extra()
    from emts.eval.real import parse_models
    from emts.eval.verifier_real import (
        VerifierRealConfig,
        evaluate_verifier_real,
        write_report,
    )

    truth, first, last = _labelled_clip(args)
    models = parse_models(args.model, "--model")
    for name, path in models.items():
        if isinstance(path, tuple):
            raise BadInputError(f"--model {name}: a verifier takes no @WxH")
    out = Path(args.out)
    check_writable("--out", out, folder=True)
    config = VerifierRealConfig(fps=args.fps, first=first, last=last, offset=args.offset)
    report = evaluate_verifier_real(args.clip, truth, models, config)
    write_report(report, out, " ".join(["emts", *sys.argv[1:]]), _clip_name(args.clip))
    windows = report["windows"]
    print(f"{windows['person']} person and {windows['ground']} ground windows")
    for model, m in report["models"].items():
        print(
            f"{model}: AUC {m['roc_auc_person_vs_ground']:.3f}, person median P "
            f"{m['person_median_p']:.2f} ({m['person_share_verified']:.0%} >= 0.5), ground "
            f"median {m['ground_median_p']:.2f} ({m['ground_share_verified']:.0%} >= 0.5)"
        )
    print(f"report: {out}/report.md")
    return 0


def add_verifier(eval_sub) -> None:
    p = eval_sub.add_parser(
        "verifier",
        help="Stage E on a real clip: the labelled walker against static ground beside them",
        description="16-frame descriptor windows of the labelled person's box and of same-size "
        "boxes beside them carried by the camera (static ground); P(human) of every --model "
        "on each, the ROC AUC person vs ground, and a PNG. A real-footage check beside the "
        "synthetic held-out AUC of `emts train verifier`.",
    )
    _add_labelled_clip(p)
    p.add_argument("--frames", metavar="A:B", help="frames A..B (default: all labelled)")
    p.add_argument(
        "--model",
        action="append",
        metavar="[NAME=]PATH",
        help="a verifier ONNX to compare with the shipped one (repeatable)",
    )
    p.add_argument(
        "--offset",
        type=float,
        default=3.0,
        help="ground boxes start this many box widths beside the person (default: 3)",
    )
    p.add_argument("--out", default="reports/verifier", help="report folder")
    add_fps(p)
    p.set_defaults(run=_cmd_eval_verifier)


def _cmd_eval_tracking(args: argparse.Namespace) -> int:
    require_train_extra()
    check_writable("--out", Path(args.out), folder=True)  # before any work
    from emts.eval import tracking
    from emts.stages.c_detect.detector import Detector
    from emts.stages.e_verify import Verifier

    out = Path(args.out)
    command = " ".join(["emts", *sys.argv[1:]])
    if args.eval_command in ("reacq", "fp"):
        open_clip_set(args.bench if args.eval_command == "reacq" else args.fpbench)
    detector = Detector(args.model)
    if args.eval_command == "reacq":
        report = tracking.reacquisition(
            args.bench,
            detector,
            args.clips,
            appearance=not args.detections_only,
            detector_mode=args.detector_mode,
        )
        tracking.write(out, "reacq", report, command)
        rate = f"{report['success']}/{report['trials']} = {report['success_rate']:.1%}"
        errors = f"identity transfers {report['identity_transfer']}, misses {report['miss']}"
        print(f"reacquisition: {rate}; {errors}")
    elif args.eval_command == "fp":
        verifier = None if args.no_verifier else Verifier(args.verifier)
        report = tracking.false_positives(
            args.fpbench, detector, verifier, args.clips, detector_mode=args.detector_mode
        )
        tracking.write(out, "fp", report, command)
        tracking.plot_fp_sweep(report, out / "fp_sweep.png")
        for tau, row in report["fp_per_frame"].items():
            both = f"detector only {row['detector_only']}, with verifier {row['with_verifier']}"
            print(f"tau_s {tau}: FP/frame {both}")
    else:
        report = tracking.autolock(
            detector,
            Verifier(args.verifier),
            windows=args.windows,
            contrast_scale=args.contrast_scale,
            detector_mode=args.detector_mode,
            sheet=out / "autolock_longest.png",
        )
        tracking.write(out, "autolock", report, command)
        locks = f"{report['candidate_locks']} candidate locks, {report['verified_false_locks']}"
        per_hour = f"verified ({report['verified_false_locks_per_hour']}/hour)"
        print(f"auto-lock on {report['minutes']} min of person-free footage: {locks} {per_hour}")
        held, shown = report["locked_share"], report["verified_share"]
        print(f"a lock held on nothing: {held:.1%} of the frames, verified {shown:.1%}")
    print(f"report: {out}")
    return 0


def add_bench_protocols(eval_sub) -> None:
    """``emts eval reacq``, ``fp`` and ``autolock``: Stages C-E on the synthetic benches."""
    p = eval_sub.add_parser(
        "reacq", help="forced-occlusion reacquisition on the bench (section 6.9)"
    )
    p.add_argument("--bench", default="data/bench")
    p.add_argument("--clips", type=POSITIVE, help="only the first N clips")
    p.add_argument("--model", type=named_model, help=MODEL_HELP)
    p.add_argument(
        "--detections-only",
        action="store_true",
        help="Stage D without its appearance measurement (the paper's tracker)",
    )
    add_detector_mode(p, ("temporal", "plain"), network_size=False)
    p.add_argument("--out", default="reports/tracking")
    p.set_defaults(run=_cmd_eval_tracking)
    p = eval_sub.add_parser("fp", help="FP/frame on the person-free bench, with/without verifier")
    p.add_argument("--fpbench", default="data/fpbench")
    p.add_argument("--clips", type=POSITIVE, help="only the first N clips")
    p.add_argument("--model", type=named_model, help=MODEL_HELP)
    p.add_argument("--verifier", help="ONNX verifier (default: the shipped model)")
    p.add_argument("--no-verifier", action="store_true")
    add_detector_mode(p, ("temporal", "plain"), network_size=False)
    p.add_argument("--out", default="reports/tracking")
    p.set_defaults(run=_cmd_eval_tracking)
    p = eval_sub.add_parser("autolock", help="verified false locks per hour on person-free footage")
    p.add_argument(
        "--windows", type=POSITIVE, default=13, help="10-s windows (default: %(default)s)"
    )
    p.add_argument(
        "--contrast-scale",
        type=POSITIVE_FLOAT,
        default=CONTRAST_SCALE,
        metavar="S",
        help="the movers' contrast, as emts synth --contrast-scale (default: %(default)s)",
    )
    p.add_argument("--model", type=named_model, help=MODEL_HELP)
    p.add_argument("--verifier", help="ONNX verifier (default: the shipped model)")
    add_detector_mode(p, ("temporal", "plain"), network_size=False)
    p.add_argument("--out", default="reports/tracking")
    p.set_defaults(run=_cmd_eval_tracking)
