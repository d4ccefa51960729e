"""``emts eval PROTOCOL``: the arguments of the evaluation protocols; the protocols are in
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
    calibration_sets,
    channel_config,
    command_line,
    open_clip_set,
    parse_size,
    require_train_extra,
    stage_c,
)
from emts.errors import BadInputError
from emts.io import check_writable
from emts.modality import AUTO
from emts.precision import named_model
from emts.synth.common import CONTRAST_SCALE


def _cmd_eval_detect(args: argparse.Namespace) -> int:
    require_train_extra()
    from emts.eval.detect import (
        ClassicalDetector,
        NetworkDetect,
        StreamDetect,
        evaluate_bench,
        summarize,
        write_report,
    )
    from emts.stages.c_detect.detector import Detector

    open_clip_set(args.bench)
    detector = Detector(args.model)
    if args.detector_mode == "temporal":
        coarse = args.coarse_pass != "off"
        network = {"EMTS-Det (temporal)": StreamDetect(detector, coarse_pass=coarse)}
    else:
        network = {"EMTS-Det": NetworkDetect(detector)}
    detects = {**network, "classical": ClassicalDetector()}
    curves = {
        name: summarize(evaluate_bench(fn, args.bench, args.clips)) for name, fn in detects.items()
    }
    command = " ".join(["emts", *sys.argv[1:]]) if sys.argv else "emts eval detect"
    write_report(
        Path(args.out),
        "Detector on the held-out synthetic bench",
        {"held-out bench": curves},
        command,
    )
    for name, summary in curves.items():
        print(f"{name}: AP@0.25 {summary['AP@0.25']:.3f}  AP@0.5 {summary['AP@0.5']:.3f}")
    print(f"report: {args.out}/report.md")
    return 0


def _cmd_eval_hituav(args: argparse.Namespace) -> int:
    require_train_extra()
    from emts.eval.detect import (
        ClassicalDetector,
        NetworkDetect,
        evaluate_hituav,
        summarize,
        write_report,
    )
    from emts.stages.c_detect.detector import Detector

    sections = {}
    for variant, title in (
        ("persons", "only persons move"),
        ("vehicles", "persons and vehicles move"),
    ):
        detects = {
            "EMTS-Det": NetworkDetect(Detector(args.model)),
            "classical": ClassicalDetector(),
        }
        results = evaluate_hituav(detects, args.hituav, args.split, variant)
        sections[f"HIT-UAV {args.split}, {title}"] = {k: summarize(v) for k, v in results.items()}
    command = " ".join(["emts", *sys.argv[1:]])
    write_report(
        Path(args.out), f"Detector on real HIT-UAV {args.split} pseudo-clips", sections, command
    )
    for section, curves in sections.items():
        for name, summary in curves.items():
            ap = f"AP@0.25 {summary['AP@0.25']:.3f}  AP@0.5 {summary['AP@0.5']:.3f}"
            print(f"{section}: {name}: {ap}")
    print(f"report: {args.out}/report.md")
    return 0


def _cmd_eval_real(args: argparse.Namespace) -> int:
    require_train_extra()
    from emts.eval.real import evaluate_real, parse_models

    if args.hituav_images is not None and args.hituav_images < 1:
        raise BadInputError("--hituav-images must be at least 1")
    models = parse_models(args.model, "--model")
    if args.network_size is not None:
        from emts.stages.c_detect.detector import default_model_path

        models["shipped"] = (str(default_model_path()), args.network_size)
    sections = evaluate_real(
        models,
        args.out,
        args.person12,
        args.hituav,
        seed=args.seed,
        hituav_images=args.hituav_images,
        command=" ".join(["emts", *sys.argv[1:]]),
        seeds=args.seeds,
    )
    for title, section in sections.items():
        for name, s in section.items():
            if "(" in name or name.startswith("classical"):
                continue
            cells = ", ".join(f"{k} {v}" for k, v in s.items() if "@" in k)
            print(f"{title}: {name}: {cells}")
    print(f"report: {args.out}/report.md")
    return 0


def _add_eval_real(eval_sub) -> None:
    p = eval_sub.add_parser(
        "real",
        help="real-footage suite: uav123-person12 and HIT-UAV val, models vs classical baseline",
        description="Recall/FP/AP on uav123-person12 frames 1-201 and AP on HIT-UAV val "
        "pseudo-clips (persons; persons + vehicles) for the shipped model and every --model, "
        "frame by frame and in Stage C's temporal mode, their channel ablations and the "
        "classical compensated-difference baseline (threshold swept). Writes report.md, "
        "metrics.json, PR curves and contact sheets.",
    )
    p.add_argument("--out", default="reports/real", help="report folder (default: %(default)s)")
    p.add_argument(
        "--model",
        action="append",
        metavar="[NAME=]PATH[@WxH]",
        help="a candidate ONNX detector beside the shipped one (repeatable); @WxH runs it at "
        "that network size (e.g. src/emts/models/detector.onnx@512x384)",
    )
    p.add_argument("--person12", default="../shared/data/uav123-person12", help="person12 folder")
    p.add_argument("--hituav", default="../shared/data/hit-uav", help="HIT-UAV folder")
    p.add_argument("--hituav-images", type=int, help="only the first N val stills (quick runs)")
    p.add_argument("--seed", type=int, default=0, help="pseudo-clip seed (default: %(default)s)")
    p.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="pool the HIT-UAV pseudo-clips of this many seeds from --seed (default: %(default)s)",
    )
    p.add_argument(
        "--network-size",
        type=parse_size,
        metavar="WxH",
        help="run the shipped detector (and the fused mode with the blend fitted at that size) "
        "at this network size (default: its own, 256x192)",
    )
    p.set_defaults(run=_cmd_eval_real)


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
    from emts.eval.track_eval import TrackEvalConfig, evaluate_track, parse_span, write_report
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
        fps=args.fps,
    )
    out.mkdir(parents=True, exist_ok=True)
    report = evaluate_track(args.clip, truth, config, pipeline, out / "frames.jsonl")
    write_report(report, out, " ".join(["emts", *sys.argv[1:]]), _clip_name(args.clip))
    print(
        f"lock recall {report['lock_recall']:.3f} over {report['visible_frames']} visible "
        f"frames, {report['false_lock_frames']} false-lock frames, centre error median "
        f"{report['centre_error_px']['median']} px, first lock at frame "
        f"{report['first_lock_frame']}"
    )
    for span in report["hidden_spans"]:
        print(
            f"{span['kind']} {span['frames'][0]}:{span['frames'][1]}: locked "
            f"{span['locked_frames_after_vanishing']} frames after vanishing, "
            f"{span['relocks_while_hidden']} relocks while hidden, recovered after "
            f"{span['recovery_frames']} frames"
        )
    print(f"report: {out}/report.md")
    return 0


def _add_eval_track(eval_sub) -> None:
    p = eval_sub.add_parser(
        "track",
        help="lock recall, false locks and recovery on a real clip with ground truth",
        description="Tap the person (by default at the ground truth's centre on the first "
        "frame of --frames) and measure: lock recall (target centre within max(20 px, h/2) "
        "of the truth), false-lock frames, centre error, first-lock frame, and for every "
        "--occlude/--remove span how long the lock stayed, whether anything else was locked "
        "and how many frames the recovery took. Writes report.md, report.json, frames.jsonl "
        "and timeline.png.",
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


def _add_eval_verifier(eval_sub) -> None:
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


def _cmd_eval_quant(args: argparse.Namespace) -> int:
    require_train_extra()
    if args.tsm:
        return _eval_quant_tsm(args)
    from emts.eval.quant import evaluate_quant

    report = evaluate_quant(
        Path(args.out),
        bench=args.bench,
        hituav=args.hituav,
        sets=calibration_sets(args),
        model=args.model,
        int8=args.int8,
        clips=args.clips,
        seeds=args.seeds,
        latency_runs=args.latency_runs,
        command=command_line(),
        hituav_images=args.hituav_images,
        reuse_accuracy=args.reuse_accuracy,
        wait_idle=args.wait_idle,
    )
    for name, row in report["accuracy"].items():
        cells = ", ".join(f"{k} {v:.3f}" for k, v in row.items())
        print(f"{name}: {cells}")
    print(f"report: {args.out}/report.md")
    return 0


def _eval_quant_tsm(args: argparse.Namespace) -> int:
    from emts.eval.tsm import evaluate_tsm

    report = evaluate_tsm(
        Path(args.out),
        args.tsm,
        args.bench,
        calibration_sets(args),
        clips=args.clips,
        large=tuple(args.tsm_large),
        small=tuple(args.tsm_small),
        command=command_line(),
        keep=args.tsm_keep,
        control=args.tsm_control,
    )
    for name, row in report["accuracy"].items():
        print(f"{name}: AP@0.25 {row['AP@0.25']:.3f}, AP@0.5 {row['AP@0.5']:.3f}")
    print(f"report: {args.out}/tsm.md")
    return 0


def _add_eval_quant(eval_sub) -> None:
    p = eval_sub.add_parser(
        "quant",
        help="quantization table: float / int8 min-max / int8 moving-average, sizes, latency",
    )
    p.add_argument("--out", default="reports/quant", help="report folder (default: %(default)s)")
    p.add_argument("--bench", default="data/bench", help="held-out bench (default: %(default)s)")
    p.add_argument("--hituav", default="../shared/data/hit-uav", help="HIT-UAV folder")
    p.add_argument("--tier1", default="data/tier1", help="calibration Tier-1 set")
    p.add_argument("--negatives", default="data/negatives", help="calibration negatives set")
    p.add_argument(
        "--model", type=named_model, help="fp32 detector, or thermal (default: the shipped one)"
    )
    p.add_argument("--int8", help="int8 min-max detector (default: the shipped one)")
    p.add_argument("--clips", type=int, help="only the first N bench clips (quick runs)")
    p.add_argument("--seeds", type=int, default=1, help="HIT-UAV pseudo-clip seeds pooled")
    p.add_argument("--hituav-images", type=int, help="only the first N HIT-UAV stills (quick)")
    p.add_argument(
        "--latency-runs", type=int, default=300, help="timed runs per model (default: 300)"
    )
    p.add_argument(
        "--reuse-accuracy",
        action="store_true",
        help="take the accuracy table from OUT/metrics.json and measure only latency",
    )
    p.add_argument(
        "--wait-idle",
        type=float,
        default=600.0,
        help="before timing, wait up to this many seconds for other training/benchmark "
        "processes to end (default: %(default)s)",
    )
    p.add_argument(
        "--tsm",
        metavar="MODEL.onnx",
        help="instead: the TSM calibration table (tab:quantablation) of this streaming TSM "
        "detector: moving-average (zero caches) at two calibration sizes, min-max with zero "
        "and with propagated caches, float; bench streamed clip by clip; writes OUT/tsm.md",
    )
    p.add_argument(
        "--tsm-large",
        type=int,
        nargs=2,
        default=[100, 10],
        metavar=("CLIPS", "FRAMES"),
        help="--tsm: the larger calibration stream (default: 100 10)",
    )
    p.add_argument(
        "--tsm-small",
        type=int,
        nargs=2,
        default=[40, 8],
        metavar=("CLIPS", "FRAMES"),
        help="--tsm: the smaller moving-average stream (default: 40 8)",
    )
    p.add_argument(
        "--tsm-keep", action="store_true", help="--tsm: keep the int8 models in OUT/tsm/"
    )
    p.add_argument(
        "--tsm-control",
        metavar="MODEL.onnx",
        action="append",
        help="--tsm: also score this stateless detector (e.g. the same fine-tuning without "
        "shift: emts train detector --tsm none, or its int8); repeatable",
    )
    p.set_defaults(run=_cmd_eval_quant)


def _cmd_eval_tracking(args: argparse.Namespace) -> int:
    require_train_extra()
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


def add_eval(sub) -> None:
    evaluate = sub.add_parser("eval", help="evaluation protocols (needs emts[train])")
    eval_sub = evaluate.add_subparsers(dest="eval_command", required=True, metavar="PROTOCOL")
    p = eval_sub.add_parser("detect", help="AP, PR curve, recall by height on the held-out bench")
    p.add_argument(
        "--bench", default="data/bench", help="held-out bench set (default: %(default)s)"
    )
    p.add_argument("--model", type=named_model, help=MODEL_HELP)
    p.add_argument("--clips", type=POSITIVE, help="evaluate only the first N clips")
    p.add_argument("--out", default="reports/detect", help="report folder (default: %(default)s)")
    p.add_argument(
        "--detector-mode",
        choices=["plain", "temporal"],
        default="plain",
        help="plain: the network frame by frame on the sets' channels (the paper's protocol); "
        "temporal: Stage C as the pipeline runs it, each clip streamed through Stages A-C "
        "(scores averaged over time; the coarse pass where the model has one) "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--coarse-pass",
        choices=[AUTO, "off"],
        default=AUTO,
        help="with --detector-mode temporal: Stage C's coarse pass, as on emts track "
        "(default: %(default)s)",
    )
    p.set_defaults(run=_cmd_eval_detect)
    p = eval_sub.add_parser(
        "hituav", help="real HIT-UAV stills as 4-frame pseudo-clips (section 6.5)"
    )
    p.add_argument("--hituav", default="../shared/data/hit-uav", help="HIT-UAV folder")
    p.add_argument("--split", default="val", choices=["val"], help="split (default: %(default)s)")
    p.add_argument("--model", type=named_model, help=MODEL_HELP)
    p.add_argument("--out", default="reports/hituav", help="report folder (default: %(default)s)")
    p.set_defaults(run=_cmd_eval_hituav)
    _add_eval_real(eval_sub)
    _add_eval_track(eval_sub)
    _add_eval_verifier(eval_sub)
    _add_eval_quant(eval_sub)
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
