"""``emts eval PROTOCOL``: the group, and the detector's protocols (detect, hituav, real,
quant); the tracking pipeline's are in :mod:`.evaluate_tracking`. The protocols themselves are
in :mod:`emts.eval` (imported when a command runs: it needs the train extra)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from emts.cli import evaluate_tracking
from emts.cli.common import (
    MODEL_HELP,
    POSITIVE,
    calibration_sets,
    command_line,
    network_size,
    open_clip_set,
    require_train_extra,
)
from emts.errors import BadInputError
from emts.io import check_writable
from emts.modality import AUTO
from emts.precision import named_model


def _cmd_eval_detect(args: argparse.Namespace) -> int:
    require_train_extra()
    check_writable("--out", Path(args.out), folder=True)  # before any work
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
    check_writable("--out", Path(args.out), folder=True)  # before any work
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
    check_writable("--out", Path(args.out), folder=True)  # before any work
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
        type=network_size,
        metavar="WxH",
        help="run the shipped detector (and the fused mode with the blend fitted at that size) "
        "at this network size (default: its own, 256x192)",
    )
    p.set_defaults(run=_cmd_eval_real)


def _cmd_eval_quant(args: argparse.Namespace) -> int:
    require_train_extra()
    check_writable("--out", Path(args.out), folder=True)  # before any work
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


def add_eval(sub) -> None:
    """``emts eval`` and its protocols, in the order ``emts eval --help`` lists them."""
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
    evaluate_tracking.add_track(eval_sub)
    evaluate_tracking.add_verifier(eval_sub)
    _add_eval_quant(eval_sub)
    evaluate_tracking.add_bench_protocols(eval_sub)
