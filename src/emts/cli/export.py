"""The commands that make model files: ``emts export`` (a trained detector to ONNX),
``emts ensemble``, ``emts quantize`` (int8) and ``emts export-litert`` (.tflite). The jobs
are in :mod:`emts.train` (imported when a command runs: it needs the train extra)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from emts.cli.common import (
    STAGE_B_WARP,
    calibration_sets,
    command_line,
    model_inputs,
    network_size,
    require_train_extra,
)
from emts.errors import BadInputError
from emts.io import check_outputs
from emts.modality import AUTO
from emts.precision import named_model


def _cmd_ensemble(args: argparse.Namespace) -> int:
    require_train_extra()
    from emts.precision import named_model
    from emts.train.ensemble import merge_detectors

    members = [named_model(m) for m in args.models]
    check_outputs(None, {"--out": args.out}, {"a member of this ensemble": members})
    meta = merge_detectors(members, args.out)
    scales = meta.get("emts_box_scale", "none (not every member records one)")
    print(f"ensemble of {len(args.models)} detectors: {args.out} (box scales: {scales})")
    return 0


def add_ensemble(sub) -> None:
    p = sub.add_parser(
        "ensemble",
        help="average several trained detectors in one ONNX graph (needs emts[train])",
        description="Put detector ONNX files side by side behind one input: heatmap, log-size "
        "and offset averaged, the first member's embedding (emts.train.ensemble). The result runs "
        "wherever a detector does (--model). Measured in docs/history.md ('Ensembles', Detector): "
        "better detection AP on real footage, worse tracking with Stage D as tuned.",
    )
    p.add_argument("models", nargs="+", help="detector .onnx files (or 'thermal'), two or more")
    p.add_argument("--out", required=True, help="the ensemble's ONNX file")
    p.set_defaults(run=_cmd_ensemble)


def _cmd_export(args: argparse.Namespace) -> int:
    require_train_extra()
    from emts.train.export import (
        export_onnx,
        load_trained,
        reshape_onnx,
        trained_residual_baseline,
    )

    if not Path(args.model).is_file():
        raise BadInputError(f"{args.model}: no such model")
    check_outputs(None, {"--out": args.out}, {"the MODEL of this run": args.model})
    if args.fit_box_scale and not args.any_size:
        raise BadInputError("--fit-box-scale runs the model at other sizes: add --any-size")
    if args.run_size and not args.any_size:
        raise BadInputError("--run-size runs the model at another size: add --any-size")
    if args.residual_reference is not None and not 0 <= args.residual_reference < 1:
        raise BadInputError(
            f"--residual-reference must be in [0, 1) (0: remove it), got {args.residual_reference}"
        )
    if args.residual_baseline is not None and args.residual_baseline < 1:
        raise BadInputError("--residual-baseline must be at least 1")
    if args.residual_baseline is None and Path(args.model).suffix != ".onnx":
        args.residual_baseline = trained_residual_baseline(Path(args.model))
    if Path(args.model).suffix == ".onnx":  # reshape an exported detector, weights untouched
        from emts.stages.c_detect.detector import RUN_SIZE_METADATA, Detector, recorded_size

        detector = Detector(args.model, threads=1)
        size = recorded_size(detector.session) or detector.network_size  # the trained size
        run_size = recorded_size(detector.session, RUN_SIZE_METADATA)
        if run_size and not args.any_size:  # the thermal model would quietly become 256x192
            print(
                "{}: fixed at its trained {}x{}; its run size {}x{} is dropped (add --any-size "
                "to keep it)".format(args.model, *size, *run_size),
                file=sys.stderr,
            )
        out = reshape_onnx(args.model, args.out, size, args.any_size)
    else:
        out = export_onnx(load_trained(args.model), args.out, any_size=args.any_size)
    if args.residual_reference is not None:  # before the box scale: its fit runs the model
        from emts.train.export import record_residual_reference

        record_residual_reference(out, args.residual_reference or None)
    if args.stage_b is not None:
        from emts.train.export import record_stage_b_warp

        record_stage_b_warp(out, STAGE_B_WARP[args.stage_b])
    if args.residual_baseline is not None:
        from emts.train.export import record_residual_baseline

        record_residual_baseline(out, args.residual_baseline)
    if args.mirror_average is not None:
        from emts.train.export import record_mirror_average

        record_mirror_average(out, args.mirror_average == "on")
    if args.fit_box_scale:
        from emts.eval.real import fit_box_scale
        from emts.train.export import record_box_scale

        scales = fit_box_scale(out, args.hituav, args.fit_box_scale)
        record_box_scale(out, scales)
        print(f"box scale (HIT-UAV train): {scales}")
    if args.run_size:
        from emts.train.export import record_run_size

        record_run_size(out, args.run_size)
    print(out)
    return 0


def add_export(sub) -> None:
    p = sub.add_parser("export", help="export a trained detector to ONNX (needs emts[train])")
    p.add_argument("model", help="model.pt of a training run (or a detector .onnx to reshape)")
    p.add_argument("--out", default="detector.onnx", help="ONNX file (default: %(default)s)")
    p.add_argument(
        "--any-size",
        action="store_true",
        help="leave the input's height and width open, so that --network-size can run it at "
        "other sizes (default: fixed at the size it was trained at, which the runtime uses)",
    )
    p.add_argument(
        "--fit-box-scale",
        nargs="+",
        type=network_size,
        metavar="WxH",
        default=[],
        help="with --any-size: fit, per network size, the factor that brings the boxes to the "
        "persons' size on HIT-UAV train pseudo-clips and record it in the model (a network "
        "run larger than it was trained at draws its boxes too small)",
    )
    p.add_argument(
        "--hituav",
        default="../shared/data/hit-uav",
        help="HIT-UAV folder for --fit-box-scale (default: %(default)s)",
    )
    p.add_argument(
        "--run-size",
        type=network_size,
        metavar="WxH",
        help="with --any-size: the network size the runtime runs the model at when none is "
        "asked for (the thermal model: 512x384); left out, a reshaped .onnx keeps its own and "
        "a new export runs at the size it was trained at",
    )
    p.add_argument(
        "--residual-reference",
        type=float,
        metavar="LEVEL",
        help="record the residual level (R's 90th percentile) the runtime scales louder "
        "frames down to before this model (a reshaped .onnx keeps its own; 0 removes it; "
        "without one: the level of its Stage B warp, 0.0095 for the paper's -- the sets the "
        "shipped models were trained on -- and 0.0067 for working)",
    )
    p.add_argument(
        "--stage-b",
        choices=[w for w in STAGE_B_WARP if w != AUTO],
        help="record Stage B's warp the runtime runs this model with: paper (the paper's, "
        "also when none is recorded) or working (both 640x512 frames resampled alike; the "
        "thermal model's) (a reshaped .onnx keeps its own)",
    )
    p.add_argument(
        "--residual-baseline",
        type=int,
        metavar="N",
        help="record the frames R spans for this model, as it was trained (emts train "
        "detector --residual-baseline; default: what the run folder's metrics.json says for "
        "a model.pt, 1 -- eq. 2 -- when nothing says; a reshaped .onnx keeps its own)",
    )
    p.add_argument(
        "--mirror-average",
        choices=["on", "off"],
        help="record whether the runtime averages the model's heatmap with that of the "
        "mirrored frame (on: fewer false positives on real thermal stills, about twice the "
        "network's time; docs/history.md, Mirrored samples); left out, a reshaped .onnx keeps "
        "its own and a new export records none (off); ONNX only: LiteRT files carry no metadata",
    )
    p.set_defaults(run=_cmd_export)


def _detector_calibration(args: argparse.Namespace, source: Path):
    """The calibration stream of ``--tier1``/``--negatives``, ``--clips`` x ``--frames``,
    ``--seed``, as the detector ``source`` is fed: at its network size (``--network-size``
    where the command has one and it is given), residual level and Stage B warp."""
    from emts.apps.detect import check_run_size
    from emts.stages.c_detect.detector import Detector
    from emts.train.quantize import detector_calibration

    detector = Detector(source, threads=1, network_size=getattr(args, "network_size", None))
    check_run_size(detector)
    return detector_calibration(
        calibration_sets(args),
        args.clips,
        args.frames,
        args.seed,
        detector.network_size,
        detector.residual_reference,
        detector.stage_b_warp,
        detector.residual_baseline,
    )


def _cmd_quantize(args: argparse.Namespace) -> int:
    require_train_extra()
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
    check_outputs(
        None,
        {"--out": args.out, "the provenance of --out": str(Path(args.out).with_suffix(".json"))},
        model_inputs(shipped=False, model=str(source)),
    )
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
            calibration_sets(args),
            args.clips,
            args.seed,
            resolution=Verifier(source, threads=1).resolution,
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
        "command": command_line(),
    }
    path = write_provenance(out.with_suffix(".json"), provenance)
    print(f"{out} ({out.stat().st_size} bytes), provenance {path}")
    return 0


def _add_calibration_set(p) -> None:
    """The calibration clips of an int8 conversion (emts quantize, emts export-litert)."""
    p.add_argument("--tier1", default="data/tier1", help="Tier-1 set (default: %(default)s)")
    p.add_argument(
        "--negatives", default="data/negatives", help="hard negatives (default: %(default)s)"
    )
    p.add_argument("--clips", type=int, default=100, help="calibration clips (default: 100)")
    p.add_argument("--frames", type=int, default=10, help="frames per clip (default: 10)")
    p.add_argument("--seed", type=int, default=0, help="clip choice seed (default: 0)")


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
    _add_calibration_set(p)
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
    p.set_defaults(run=_cmd_quantize)


def _cmd_export_litert(args: argparse.Namespace) -> int:
    require_train_extra()
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
    check_outputs(
        None,
        {"--out": args.out, "the provenance of --out": str(out.with_name(out.name + ".json"))},
        model_inputs(shipped=False, model=str(source)),
    )
    size = None
    if args.network_size is not None and args.kind != "detector":
        raise BadInputError("--network-size: only the detector has one")
    if args.kind == "detector":
        calibration = _detector_calibration(args, source)  # the .tflite: at its size
        size = args.network_size
    else:
        from emts.stages.e_verify import Verifier

        calibration = verifier_calibration(
            calibration_sets(args),
            args.clips,
            args.seed,
            resolution=Verifier(source, threads=1).resolution,
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
        "command": command_line(),
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
    _add_calibration_set(p)
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
        type=network_size,
        metavar="WxH",
        help="detector: convert (and calibrate) at this input size (default: the size the "
        "ONNX runs at). A model run at twice its training size wants a file at its training "
        "size too, for Stage C's coarse pass: name it NAME.WxH.tflite beside NAME.tflite "
        "(e.g. detector.thermal.int8.256x192.tflite) and Stage C finds it",
    )
    p.set_defaults(run=_cmd_export_litert)


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
