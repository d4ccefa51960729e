"""Command-line pieces of issue 11 that :mod:`emts.cli` mounts: ``--precision`` on the runtime
commands, ``emts quantize``, ``emts eval quant`` and ``emts bench --peer-yolo``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from emts.errors import BadInputError
from emts.litert import BACKENDS, DEFAULT_BACKEND
from emts.precision import DEFAULT_PRECISION, PRECISIONS, named_model


def add_precision(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=None,
        help=f"shipped models to run: fp32, int8, or auto = whichever runs faster on this "
        f"machine, measured once at start-up (default: {DEFAULT_PRECISION}); for the shipped "
        "models (--model auto, default, thermal), not a --model FILE",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default=None,
        help=f"runtime of the shipped models: onnxruntime (.onnx) or litert (.tflite through "
        f"LiteRT/XNNPACK on --threads threads; needs emts[litert]) (default: {DEFAULT_BACKEND}; "
        "with --model the file's suffix picks it)",
    )


def add_train_tsm(p: argparse.ArgumentParser) -> None:
    """``emts train detector --tsm ...``: the temporal-shift ablation variant."""
    p.add_argument(
        "--tsm",
        choices=["causal", "bidirectional", "none"],
        help="fine-tune the temporal-shift ablation detector (eq:tsm / eq:causaltsm) from "
        "--tsm-from on --tsm-frames-frame windows; writes OUT/model.onnx, the causal streaming "
        "step with its 7 caches as graph inputs/outputs (eq:statefn); none: the same "
        "fine-tuning without shift (the stateless control), a stateless OUT/model.onnx",
    )
    p.add_argument(
        "--tsm-from",
        metavar="ONNX",
        help="stateless ONNX detector to start from (default: the shipped one)",
    )
    p.add_argument("--tsm-steps", type=int, default=3000, help="(default: %(default)s)")
    p.add_argument(
        "--tsm-frames", type=int, default=8, help="frames per window (default: %(default)s)"
    )
    p.add_argument(
        "--tsm-clips", type=int, default=4, help="windows per batch (default: %(default)s)"
    )
    p.add_argument("--tsm-lr", type=float, default=5e-4, help="peak rate (default: %(default)s)")


def cmd_train_tsm(args: argparse.Namespace) -> int:
    from emts.precision import shipped_model
    from emts.train.loop import TrainConfig
    from emts.train.tsm import finetune_tsm

    if args.tsm_steps < 1 or args.tsm_frames < 2 or args.tsm_clips < 1 or args.tsm_lr <= 0:
        raise BadInputError("--tsm-steps/--tsm-clips >= 1, --tsm-frames >= 2, --tsm-lr > 0")
    config = TrainConfig(
        seed=args.seed,
        threads=args.threads,
        batch_clips=args.tsm_clips,
        frames=args.tsm_frames,
        lr=args.tsm_lr,
        loader_workers=args.loader_workers if args.loader_workers is not None else 1,
    )
    source = args.tsm_from or shipped_model("detector", "fp32")
    report = finetune_tsm(
        source,
        args.out,
        args.tier1,
        args.negatives,
        args.tsm,
        args.tsm_steps,
        config,
        command=_command(),
    )
    if args.tsm == "none":
        print(f"stateless control fine-tuned in {report['seconds']} s -> {args.out}/model.onnx")
        return 0
    print(
        f"TSM ({args.tsm}) fine-tuned in {report['seconds']} s -> {args.out}/model.onnx "
        f"(streaming, {report['cache_values']} cache values); study its int8 calibration "
        f"with: emts eval quant --tsm {args.out}/model.onnx"
    )
    return 0


def add_peer(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--peer-yolo",
        metavar="MODEL.onnx",
        help="also time this ONNX detector (e.g. YOLOv8n at 640) interleaved frame by frame "
        "with the whole pipeline and print the ratio peer / EMTS (median of --rounds)",
    )
    p.add_argument("--rounds", type=int, default=3, help="--peer-yolo rounds (default: 3)")


def _command() -> str:
    return " ".join(["emts", *sys.argv[1:]])


def bench_peer(args: argparse.Namespace) -> tuple[dict, str]:
    """``emts bench --peer-yolo``: the interleaved YOLO/EMTS report and its table."""
    from emts.apps.peer import format_peer, run_peer

    if not 1 <= args.rounds <= 20:
        raise BadInputError(f"--rounds {args.rounds}: must be between 1 and 20")
    report = run_peer(
        args.peer_yolo,
        frames=args.frames,
        warmup=args.warmup,
        threads=args.threads,
        rounds=args.rounds,
        precision=args.precision,
        model=args.model,
        backend=args.backend,
        warp_at=_stage_b_warp(args),
    )
    return report, format_peer(report)


def _sets(args: argparse.Namespace) -> dict[str, str]:
    return {"tier1": args.tier1, "negatives": args.negatives}


def _detector_calibration(args: argparse.Namespace, source: Path):
    """The calibration stream of ``--tier1``/``--negatives``, ``--clips`` x ``--frames``,
    ``--seed``, as the detector ``source`` is fed: at its network size (``--network-size``
    where the command has one and it is given), residual level and Stage B warp."""
    from emts.stages.c_detect.detector import Detector
    from emts.train.quantize import detector_calibration

    detector = Detector(source, threads=1, network_size=getattr(args, "network_size", None))
    return detector_calibration(
        _sets(args),
        args.clips,
        args.frames,
        args.seed,
        detector.network_size,
        detector.residual_reference,
        detector.stage_b_warp,
        detector.residual_baseline,
    )


def _stage_b_warp(args: argparse.Namespace) -> str | None:
    from emts.cli import _stage_b_warp as stage_b_warp

    return stage_b_warp(args)


def _size(text: str) -> tuple[int, int]:
    from emts.cli import _size as size

    return size(text)


def _require_train_extra() -> None:
    from emts.cli import _require_train_extra as require

    require()


def cmd_quantize(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.precision import shipped_model
    from emts.stages.c_detect.streaming import is_streaming
    from emts.train.quantize import (
        quantize,
        sha256,
        verifier_calibration,
        with_caches,
        write_provenance,
    )

    if args.float_convs < 1:
        raise BadInputError(f"--float-convs {args.float_convs}: expected >= 1")
    source = Path(args.model) if args.model else shipped_model(args.kind, "fp32")
    if not source.is_file():
        raise BadInputError(f"{source}: no such model")
    streaming = args.kind == "detector" and is_streaming(source)
    if args.tsm_caches and not streaming:
        raise BadInputError(
            f"--tsm-caches: {source} has no cache inputs (only a streaming TSM detector has)"
        )
    if args.kind == "detector":
        calibration = _detector_calibration(args, source)
    else:
        from emts.stages.e_verify import Verifier

        calibration = verifier_calibration(
            _sets(args), args.clips, args.seed, resolution=Verifier(source, threads=1).resolution
        )
    if streaming:
        calibration = with_caches(source, calibration, args.tsm_caches or "propagated")
    float_input = args.input_conv == "float"
    out = quantize(
        source,
        args.out,
        calibration,
        args.calibration,
        float_input_conv=float_input,
        float_convs=args.float_convs,
    )
    provenance = {
        "model": out.name,
        "sha256": sha256(out),
        "bytes": out.stat().st_size,
        "format": "ONNX QDQ, weights int8 per-channel symmetric, activations uint8 per-tensor "
        "asymmetric (onnxruntime static quantization)"
        + (
            f"; the input stage (up to convolution {args.float_convs}, included) stays float"
            if float_input
            else ""
        ),
        "from": {"model": source.name, "sha256": sha256(source)},
        "calibration": {
            "method": args.calibration,
            "stream": calibration.source,
            "samples": len(calibration.samples),
        },
        "command": _command(),
    }
    path = write_provenance(out.with_suffix(".json"), provenance)
    print(f"{out} ({out.stat().st_size} bytes), provenance {path}")
    return 0


def add_quantize(sub) -> None:
    p = sub.add_parser(
        "quantize",
        help="static int8 quantization of the detector or verifier (needs emts[train])",
        description="onnxruntime static quantization (QDQ; int8 per-channel symmetric "
        "weights, uint8 per-tensor asymmetric activations) calibrated on CLIPS x FRAMES "
        "consecutive frames of the Tier-1 and hard-negative sets; writes OUT and OUT.json "
        "(provenance).",
    )
    p.add_argument("kind", choices=["detector", "verifier"])
    p.add_argument("--out", required=True, help="int8 ONNX to write")
    p.add_argument(
        "--model",
        type=named_model,
        help="fp32 ONNX to quantize, or thermal (default: the shipped one)",
    )
    p.add_argument(
        "--calibration",
        choices=["minmax", "moving-average"],
        default="minmax",
        help="activation range estimator (default: %(default)s; moving-average reproduces the "
        "paper's failure)",
    )
    p.add_argument("--tier1", default="data/tier1", help="Tier-1 set (default: %(default)s)")
    p.add_argument(
        "--negatives", default="data/negatives", help="hard negatives (default: %(default)s)"
    )
    p.add_argument("--clips", type=int, default=100, help="calibration clips (default: 100)")
    p.add_argument("--frames", type=int, default=10, help="frames per clip (default: 10)")
    p.add_argument("--seed", type=int, default=0, help="clip choice seed (default: 0)")
    p.add_argument(
        "--tsm-caches",
        choices=["zero", "propagated"],
        help="a streaming TSM detector's cache inputs during calibration: zero (the state at "
        "a stream's start only) or propagated (each clip streamed through the float model, "
        "every step's caches snapshotted; the default for such a model)",
    )
    p.add_argument(
        "--input-conv",
        choices=["float", "int8"],
        default="float",
        help="the input stage (every node up to the first convolution, included: the "
        "detector's stem, the verifier's standardization and first convolution): float "
        "keeps the input unquantized (one uint8 scale over [L, R, D] rounds small residuals "
        "away, over the verifier's 40 descriptors its small features); int8 quantizes it "
        "too (default: %(default)s)",
    )
    _add_float_convs(p)
    p.set_defaults(run=cmd_quantize)


def cmd_export_litert(args: argparse.Namespace) -> int:
    _require_train_extra()
    from emts.precision import shipped_model
    from emts.train.litert_export import (
        convert,
        converter_versions,
        fidelity,
        onnx_metadata,
        require_converter,
    )
    from emts.train.quantize import (
        sha256,
        verifier_calibration,
        write_provenance,
    )

    require_converter()
    if args.float_convs < 1:
        raise BadInputError(f"--float-convs {args.float_convs}: expected >= 1")
    out = Path(args.out)
    if out.suffix != ".tflite":
        raise BadInputError(f"--out {out}: must end in .tflite")
    source = Path(args.model) if args.model else shipped_model(args.kind, "fp32")
    if not source.is_file():
        raise BadInputError(f"{source}: no such model")
    size = None
    if args.network_size is not None and args.kind != "detector":
        raise BadInputError("--network-size: only the detector has one")
    if args.kind == "detector":
        calibration = _detector_calibration(args, source)  # the .tflite: at its size
        size = args.network_size
    else:
        from emts.stages.e_verify import Verifier

        calibration = verifier_calibration(
            _sets(args), args.clips, args.seed, resolution=Verifier(source, threads=1).resolution
        )
    int8 = args.precision == "int8"
    float_input = int8 and args.input_conv == "float"
    convert(
        args.kind,
        source,
        out,
        args.precision,
        calibration if int8 else None,
        float_input,
        size,
        args.float_convs,
    )
    # Fidelity against onnxruntime on the source, over a slice of the calibration stream
    # (every 25th sample: 40 detector frames by default).
    probe = calibration.samples[:: max(1, len(calibration.samples) // 40)]
    provenance = {
        "model": out.name,
        "sha256": sha256(out),
        "bytes": out.stat().st_size,
        "format": (
            f"LiteRT flatbuffer, int8 but the input stage: float32 input and first "
            f"{args.float_convs} convolution(s); then weights int8 per-channel symmetric, "
            "activations and outputs "
            "int8 per-tensor asymmetric (min-max ranges; PT2E through litert-torch)"
            if float_input
            else "LiteRT flatbuffer, full integer: weights int8 per-channel symmetric, "
            "activations and model input/output int8 per-tensor asymmetric (min-max ranges; "
            "PT2E through litert-torch)"
            if int8
            else "LiteRT flatbuffer, float32 (litert-torch)"
        ),
        "from": {"model": source.name, "sha256": sha256(source)},
        # the source's ONNX metadata, which a .tflite cannot hold (emts.litert reads it here)
        "metadata": onnx_metadata(source),
        "converter": converter_versions(),
        "max_abs_diff_vs_onnxruntime_fp32": {
            "outputs": fidelity(source, out, args.kind, probe),
            "inputs": f"{len(probe)} samples of the calibration stream",
        },
        "command": _command(),
    }
    if int8:
        provenance["calibration"] = {
            "method": "minmax",
            "stream": calibration.source,
            "samples": len(calibration.samples),
        }
    path = write_provenance(out.with_name(out.name + ".json"), provenance)
    print(f"{out} ({out.stat().st_size} bytes), provenance {path}")
    return 0


def add_export_litert(sub) -> None:
    p = sub.add_parser(
        "export-litert",
        help="convert the detector or verifier to LiteRT .tflite, fp32 or int8 (needs "
        "emts[train,litert-convert])",
        description="Rebuild the torch module from the ONNX model and convert it with "
        "litert-torch; int8 is post-training quantization (int8 per-channel symmetric "
        "weights, int8 per-tensor activations, min-max ranges; the input convolution "
        "float unless --input-conv int8) calibrated on the "
        "same stream as emts quantize. Writes OUT and OUT.json, e.g. detector.tflite.json "
        "(provenance: command, sha256, converter versions, largest difference to onnxruntime "
        "on the source).",
    )
    p.add_argument("kind", choices=["detector", "verifier"])
    p.add_argument("--out", required=True, help=".tflite to write")
    p.add_argument("--precision", choices=["fp32", "int8"], default="fp32")
    p.add_argument(
        "--model",
        type=named_model,
        help="fp32 ONNX to convert, or thermal (default: the shipped one)",
    )
    p.add_argument("--tier1", default="data/tier1", help="Tier-1 set (default: %(default)s)")
    p.add_argument(
        "--negatives", default="data/negatives", help="hard negatives (default: %(default)s)"
    )
    p.add_argument("--clips", type=int, default=100, help="calibration clips (default: 100)")
    p.add_argument("--frames", type=int, default=10, help="frames per clip (default: 10)")
    p.add_argument("--seed", type=int, default=0, help="clip choice seed (default: 0)")
    p.add_argument(
        "--input-conv",
        choices=["float", "int8"],
        default="float",
        help="int8: keep the convolution that reads the input float (as emts quantize "
        "does; the model takes a float32 input) or quantize it too, full integer "
        "(default: %(default)s)",
    )
    _add_float_convs(p)
    p.add_argument(
        "--network-size",
        type=_size,
        metavar="WxH",
        help="detector: convert (and calibrate) at this input size (default: the size the "
        "ONNX runs at). A model run at twice its training size wants a file at its training "
        "size too, for Stage C's coarse pass: name it NAME.WxH.tflite beside NAME.tflite "
        "(e.g. detector.thermal.int8.256x192.tflite) and Stage C finds it",
    )
    p.set_defaults(run=cmd_export_litert)


def _add_float_convs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--float-convs",
        type=int,
        default=1,
        metavar="N",
        help="with --input-conv float: the float input stage reaches the N-th convolution "
        "(default: %(default)s, the first; the thermal model ships with 3: quantizing its "
        "stem's output cost 0.018 AP@0.25 on HIT-UAV, stage 1's first block 0.003 on the bench)",
    )


def cmd_eval_quant(args: argparse.Namespace) -> int:
    _require_train_extra()
    if args.tsm:
        return _eval_quant_tsm(args)
    from emts.eval.quant import evaluate_quant

    report = evaluate_quant(
        Path(args.out),
        bench=args.bench,
        hituav=args.hituav,
        sets=_sets(args),
        model=args.model,
        int8=args.int8,
        clips=args.clips,
        seeds=args.seeds,
        latency_runs=args.latency_runs,
        command=_command(),
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
        _sets(args),
        clips=args.clips,
        large=tuple(args.tsm_large),
        small=tuple(args.tsm_small),
        command=_command(),
        keep=args.tsm_keep,
        control=args.tsm_control,
    )
    for name, row in report["accuracy"].items():
        print(f"{name}: AP@0.25 {row['AP@0.25']:.3f}, AP@0.5 {row['AP@0.5']:.3f}")
    print(f"report: {args.out}/tsm.md")
    return 0


def add_eval_quant(eval_sub) -> None:
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
    p.set_defaults(run=cmd_eval_quant)
