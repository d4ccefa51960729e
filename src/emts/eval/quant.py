"""``emts eval quant``: what int8 costs in accuracy and buys in time (issue 11 part 5).

Three detectors on the same frames: the float model, the int8 model calibrated with min-max
(the shipped one) and an int8 model calibrated with onnxruntime's moving-average estimator on
the same calibration stream (made here, not shipped; `sec:minmax`, `tab:detection`).
Accuracy: AP@0.25 / AP@0.5 on the held-out synthetic bench (:func:`emts.eval.detect.
evaluate_bench`, frames 5-18) and on HIT-UAV val in both pseudo-clip variants of the
real-footage suite (:func:`emts.eval.real.hituav_frames`). Latency: each model alone
(interleaved run by run, 1 and 2 threads) and the whole pipeline (``emts bench`` at fp32 and
int8, alternating). With the LiteRT runtime installed (extra ``[litert]``) the shipped
``.tflite`` twins join both: the int8 LiteRT detector is scored beside the ONNX ones, and
every precision x backend is timed (XNNPACK on the same thread counts). The load average and
any other heavy process seen are written beside the latency figures.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from emts.config import NETWORK_SIZE
from emts.errors import BadInputError
from emts.eval.detect import EVAL_THRESHOLD, NetworkDetect, evaluate_bench
from emts.eval.metrics import ImageResult, coco_ap
from emts.litert import litert_available
from emts.precision import shipped_model, shipped_variant
from emts.stages.c_detect.detector import Detector, load_session

THREADS = (1, 2)
PIPELINE_FRAMES = 300
PIPELINE_ROUNDS = 2
BUSY_PATTERN = "emts adapt|train_detector|emts train|emts eval|emts bench|pytest"
TARGET_AP_GAP = 0.008  # issue 11: int8 min-max within 0.008 AP@0.25 of float


class _Fanout:
    """One ``DetectFn`` that runs several detectors on each frame and keeps their outputs,
    so one pass over the bench (its loading dominates) scores every model."""

    def __init__(self, detects: dict) -> None:
        self.detects = detects
        self.outputs: dict[str, list] = {name: [] for name in detects}
        sizes = {getattr(d, "network_size", None) for d in detects.values()}
        if len(sizes) > 1:
            raise BadInputError("eval quant: the models must share one network size")
        self.network_size = sizes.pop() or NETWORK_SIZE

    def __call__(self, channels: np.ndarray):
        for name, detect in self.detects.items():
            self.outputs[name].append(detect(channels))
        return self.outputs[next(iter(self.detects))][-1]


def bench_accuracy(models: dict[str, Path], bench: str, clips: int | None) -> dict[str, dict]:
    fanout = _Fanout({name: NetworkDetect(Detector(path)) for name, path in models.items()})
    first = evaluate_bench(fanout, bench, clips)
    out = {}
    for name, outputs in fanout.outputs.items():
        results = [
            ImageResult(r.gt_boxes, r.gt_ignore, boxes, scores)
            for r, (boxes, scores) in zip(first, outputs, strict=True)
        ]
        ap = coco_ap(results)
        out[name] = {"images": len(results), "AP@0.25": ap["AP@0.25"], "AP@0.5": ap["AP@0.5"]}
    return out


def hituav_accuracy(
    models: dict[str, Path], root: str, variant: str, seeds: int, images: int | None = None
) -> dict[str, dict]:
    from emts.eval.real import hituav_frames, network_boxes
    from emts.front_end import channel_key

    detectors = {name: Detector(path, threshold=EVAL_THRESHOLD) for name, path in models.items()}
    results: dict[str, list[ImageResult]] = {name: [] for name in models}
    sizes = [channel_key(d) for d in detectors.values()]
    frames = itertools.chain.from_iterable(
        hituav_frames(root, "val", variant, seed, images, sizes) for seed in range(seeds)
    )
    for frame in tqdm(frames, desc=f"eval quant: hituav {variant}", unit="frame", disable=None):
        for name, detector in detectors.items():
            channels = frame.channels_at(channel_key(detector))
            boxes, scores = network_boxes(detector, frame, channels)
            results[name].append(
                ImageResult(frame.gt, np.zeros(len(frame.gt), bool), boxes, scores)
            )
    out = {}
    for name, images in results.items():
        ap = coco_ap(images)
        out[name] = {"images": len(images), "AP@0.25": ap["AP@0.25"], "AP@0.5": ap["AP@0.5"]}
    return out


def machine_state() -> dict:
    """Load average and other heavy processes now (latency figures are only fair on an idle
    machine)."""
    busy = subprocess.run(
        ["pgrep", "-af", BUSY_PATTERN], capture_output=True, text=True, check=False
    ).stdout.strip()
    own = str(os.getpid())
    others = [line for line in busy.splitlines() if line and not line.startswith(own + " ")]
    others = [line for line in others if "eval quant" not in line and "pgrep" not in line]
    return {"loadavg": [round(v, 2) for v in os.getloadavg()], "other_heavy_processes": others}


def _cpu_seconds(lines: list[str]) -> float:
    """CPU time used so far by the processes of ``pgrep -af`` lines (0 for ended ones)."""
    total = 0.0
    for line in lines:
        try:
            fields = Path(f"/proc/{line.split()[0]}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return total


def cpu_busy(seconds: float = 5.0) -> float:
    """Share of all cores busy over ``seconds`` (from /proc/stat; 0.0 where it is absent)."""

    def sample() -> tuple[int, int]:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait

    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return 0.0
    return 1.0 - (idle1 - idle0) / max(total1 - total0, 1)


def wait_for_idle(seconds: float, poll: float = 10.0, busy_limit: float = 0.15) -> dict:
    """Wait up to ``seconds`` until the machine is idle: no named training or benchmark
    process working (under 2 % of a core) and, whatever runs, under ``busy_limit`` of all
    cores busy over ``poll`` seconds; returns the state when timing starts (with the share)."""
    deadline = time.monotonic() + seconds
    while True:
        state = machine_state()
        before = _cpu_seconds(state["other_heavy_processes"])
        busy = cpu_busy(poll)
        named_idle = _cpu_seconds(state["other_heavy_processes"]) - before < 0.02 * poll
        state["cpu_busy_before"] = round(busy, 3)
        if (busy < busy_limit and named_idle) or time.monotonic() >= deadline:
            return state


def model_latency(models: dict[str, Path], kind: str, feed: np.ndarray, runs: int) -> dict:
    """Median / p90 ms of each model alone, interleaved run by run, per thread count."""
    out: dict[str, dict] = {}
    for threads in THREADS:
        sessions = {name: load_session(path, kind, threads) for name, path in models.items()}
        times: dict[str, list[float]] = {name: [] for name in sessions}
        for index in range(runs + 20):
            for name, session in sessions.items():
                start = time.perf_counter()
                session.run(None, {session.get_inputs()[0].name: feed})
                if index >= 20:
                    times[name].append((time.perf_counter() - start) * 1e3)
        del sessions
        gc.collect()  # idle sessions' spinning threads must not slow the next measurement
        for name, values in times.items():
            out.setdefault(name, {})[f"{threads} threads"] = {
                "median_ms": round(float(np.median(values)), 4),
                "p90_ms": round(float(np.percentile(values, 90)), 4),
            }
    return out


def pipeline_latency(
    rounds: int = PIPELINE_ROUNDS,
    frames: int = PIPELINE_FRAMES,
    litert: bool = False,
    model: str | None = None,
) -> dict:
    """``emts bench`` end to end at fp32 and int8 (and, with ``litert``, both again on the
    LiteRT backend: rows "fp32 LiteRT", "int8 LiteRT"), alternating, median of the rounds'
    medians; ``model``: a shipped variant's fp32 file (its own files), else the default."""
    from emts.apps.bench import run_bench

    runs = [("fp32", "onnxruntime"), ("int8", "onnxruntime")]
    if litert:
        runs += [("fp32", "litert"), ("int8", "litert")]
    totals: dict[str, dict[str, list[float]]] = {}
    stage_c: dict[str, dict[str, list[float]]] = {}
    for _ in range(rounds):
        for threads in THREADS:
            for precision, backend in runs:
                gc.collect()  # the previous pipeline's runtime threads end first
                report = run_bench(
                    frames=frames,
                    threads=threads,
                    model=model,
                    precision=precision,
                    backend=backend,
                )
                key = f"{threads} threads"
                row = precision if backend == "onnxruntime" else f"{precision} LiteRT"
                totals.setdefault(row, {}).setdefault(key, []).append(report["total"]["median_ms"])
                stage_c.setdefault(row, {}).setdefault(key, []).append(
                    report["stages"]["C"]["median_ms"]
                )
    return {
        precision: {
            key: {
                "total_median_ms": round(float(np.median(values)), 4),
                "rounds": values,
                "C_median_ms": round(float(np.median(stage_c[precision][key])), 4),
            }
            for key, values in by_threads.items()
        }
        for precision, by_threads in totals.items()
    }


def litert_ratios(latency: dict) -> dict[str, float]:
    """LiteRT times over onnxruntime fp32's, and LiteRT int8 over LiteRT fp32."""
    out = {}
    for threads in (f"{t} threads" for t in THREADS):
        for kind, fp32 in (("detector", "float"), ("verifier", "float")):
            table = latency[kind]
            base = table[fp32][threads]["median_ms"]
            for name in ("float LiteRT", "int8 LiteRT"):
                out[f"{kind} {name} / onnxruntime float, {threads}"] = round(
                    table[name][threads]["median_ms"] / base, 2
                )
            out[f"{kind} LiteRT int8 / LiteRT float, {threads}"] = round(
                table["int8 LiteRT"][threads]["median_ms"]
                / table["float LiteRT"][threads]["median_ms"],
                2,
            )
        pipe = latency["pipeline"]
        base = pipe["fp32"][threads]["total_median_ms"]
        for name in ("fp32 LiteRT", "int8 LiteRT"):
            out[f"pipeline {name} / onnxruntime fp32, {threads}"] = round(
                pipe[name][threads]["total_median_ms"] / base, 2
            )
    return out


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, alone, whole) = plt.subplots(
        1, 3, figsize=(16, 5), gridspec_kw={"width_ratios": [1.2, 1, 1]}
    )
    names = list(report["accuracy"])
    columns = [c for c in next(iter(report["accuracy"].values())) if c.endswith("AP@0.25")]
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        values = [report["accuracy"][name][c] for c in columns]
        left.bar(np.arange(len(columns)) + k * width, values, width, label=name)
    left.set_xticks(np.arange(len(columns)) + width * (len(names) - 1) / 2)
    left.set_xticklabels([c.replace(" AP@0.25", "") for c in columns], fontsize=8)
    left.set_ylabel("AP@0.25")
    left.set_title("detector accuracy by precision")
    left.legend(fontsize=8)

    def grouped(axis, table: dict, key: str, title: str) -> None:
        """One row per model, a bar per thread count (median ms)."""
        rows = list(table)
        for k, threads in enumerate(f"{t} threads" for t in THREADS):
            values = [table[row].get(threads, {}).get(key, 0.0) for row in rows]
            axis.barh(np.arange(len(rows)) + k * 0.4, values, 0.4, label=threads)
        axis.set_yticks(np.arange(len(rows)) + 0.2)
        axis.set_yticklabels(rows, fontsize=8)
        axis.invert_yaxis()
        axis.set_xlabel("median ms (this machine; compare within a chart only)", fontsize=8)
        axis.set_title(title)
        axis.legend(fontsize=8)

    latency = report["latency"]
    models = {f"detector {n}": v for n, v in latency["detector"].items()}
    models |= {f"verifier {n}": v for n, v in latency["verifier"].items()}
    grouped(alone, models, "median_ms", "each model alone")
    grouped(whole, latency["pipeline"], "total_median_ms", "whole pipeline (emts bench)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _accuracy_table(report: dict) -> list[str]:
    columns = list(next(iter(report["accuracy"].values())))
    lines = ["| model | " + " | ".join(columns) + " | file |", "|---" * (len(columns) + 2) + "|"]
    for name, row in report["accuracy"].items():
        size = report["sizes"][name]
        cells = " | ".join(f"{row[c]:.3f}" for c in columns)
        lines.append(f"| {name} | {cells} | {size / 1024:.1f} KiB |")
    return lines


def _litert_gap(report: dict) -> list[str]:
    accuracy = report["accuracy"]
    if "int8 LiteRT" not in accuracy:
        return []
    gaps = {
        column: round(accuracy["float"][column] - accuracy["int8 LiteRT"][column], 4)
        for column in accuracy["float"]
        if column.endswith("AP@0.25")
    }
    tflite = shipped_model("detector", "int8", "litert")
    provenance = tflite.with_name(tflite.name + ".json")
    recipe = json.loads(provenance.read_text()).get("format", "?") if provenance.is_file() else "?"
    return [
        f"int8 LiteRT = the shipped `detector.int8.tflite` (`emts export-litert`: {recipe}; "
        "the same calibration stream), run by LiteRT with XNNPACK. "
        f"float - int8 LiteRT, AP@0.25: {gaps}.",
        "",
    ]


def write_report(out: Path, report: dict) -> None:
    plot(report, out / "quant.png")
    float_name, int8_name = "float", "int8 min-max"
    gaps = {
        column: round(
            report["accuracy"][float_name][column] - report["accuracy"][int8_name][column], 4
        )
        for column in report["accuracy"][float_name]
        if column.endswith("AP@0.25")
    }
    met = all(abs(g) <= TARGET_AP_GAP for g in gaps.values())
    lines = [
        "# Quantization: float vs int8 (issue 11)",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Calibration stream: {report['calibration']}. int8 = onnxruntime static quantization, "
        "QDQ, int8 per-channel symmetric weights, uint8 per-tensor asymmetric activations. "
        "The moving-average model is made here from the same float model and stream "
        "(onnxruntime MinMax calibrator, `moving_average=True`, constant 0.05, one 10-frame "
        "clip per step); it is not shipped.",
        "",
        "## Accuracy",
        "",
        *_accuracy_table(report),
        "",
        f"float - int8 min-max, AP@0.25: {gaps} (target <= {TARGET_AP_GAP}: "
        f"{'met' if met else 'NOT met'}).",
        "",
        *_litert_gap(report),
        "![accuracy and latency](quant.png)",
        "",
        "## Latency",
        "",
        f"Machine: {report['machine']}. Share of the cores busy just before the latency runs "
        f"(others' work): {report['state_before'].get('cpu_busy_before', '-')}. "
        "Load average before / after the latency runs: "
        f"{report['state_before']['loadavg']} / {report['state_after']['loadavg']}; other "
        f"heavy processes seen: {report['state_before']['other_heavy_processes'] or 'none'}"
        f" / {report['state_after']['other_heavy_processes'] or 'none'}.",
        "",
        "Each model alone (onnxruntime for .onnx, LiteRT with XNNPACK for the LiteRT rows; "
        f"median / p90 ms over {report['latency_runs']} runs, models interleaved run by run):",
        "",
        "| model | 1 thread | 2 threads |",
        "|---|---|---|",
    ]
    for kind in ("detector", "verifier"):
        for name, by_threads in report["latency"][kind].items():
            cells = " | ".join(
                f"{v['median_ms']:.3f} / {v['p90_ms']:.3f}" for v in by_threads.values()
            )
            lines.append(f"| {kind} {name} | {cells} |")
    lines += [
        "",
        f"Whole pipeline (`emts bench --precision P [--backend litert]`, {PIPELINE_FRAMES} "
        f"frames, median of {PIPELINE_ROUNDS} alternating rounds' medians; Stage C median in "
        "brackets):",
        "",
        "| precision (backend) | 1 thread | 2 threads |",
        "|---|---|---|",
    ]
    for precision, by_threads in report["latency"]["pipeline"].items():
        cells = " | ".join(
            f"{v['total_median_ms']:.3f} (C {v['C_median_ms']:.3f})" for v in by_threads.values()
        )
        lines.append(f"| {precision} | {cells} |")
    ratio = report["latency"]["int8_over_fp32"]
    lines += ["", f"int8 / fp32 time ratios (onnxruntime): {ratio}", ""]
    if "litert_ratios" in report["latency"]:
        lines += [
            f"LiteRT time ratios (each over onnxruntime fp32; int8 / fp32 within LiteRT): "
            f"{report['latency']['litert_ratios']}",
            "",
        ]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    (out / "metrics.json").write_text(json.dumps(report, indent=1) + "\n")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                flags = Path("/proc/cpuinfo").read_text()
                vnni = "avx512_vnni" in flags or "avx_vnni" in flags
                return (
                    f"{name}, {os.cpu_count()} cores, VNNI flags {'listed' if vnni else 'absent'}"
                )
    except OSError:
        pass
    return f"{os.cpu_count()} cores"


def evaluate_quant(
    out: Path,
    bench: str,
    hituav: str,
    sets: dict[str, str],
    model: str | None = None,
    int8: str | None = None,
    clips: int | None = None,
    seeds: int = 1,
    latency_runs: int = 300,
    command: str = "emts eval quant",
    hituav_images: int | None = None,
    reuse_accuracy: bool = False,
    wait_idle: float = 0.0,
) -> dict:
    """Run the quantization study; write ``report.md``, ``metrics.json`` and ``quant.png``."""
    from emts.synth.store import ClipSet
    from emts.train.quantize import detector_calibration, quantize

    fp32_path = Path(model) if model else shipped_model("detector", "fp32")
    # a shipped variant (--model thermal) is compared with its own int8 and LiteRT files
    variant = shipped_variant("detector", fp32_path) or ""
    int8_path = Path(int8) if int8 else shipped_model("detector", "int8", variant=variant)
    for path in (fp32_path, int8_path):
        if not path.is_file():
            raise BadInputError(f"{path}: no such model (make the int8 one with emts quantize)")
    ClipSet(bench)  # a missing bench is one line before any work
    if not (Path(hituav) / "val.json").is_file():
        raise BadInputError(f"{hituav}: no HIT-UAV val split (val.json) there; pass --hituav")
    out.mkdir(parents=True, exist_ok=True)
    previous = out / "metrics.json"
    lite = {
        "float LiteRT": shipped_model("detector", "fp32", "litert", variant),
        "int8 LiteRT": shipped_model("detector", "int8", "litert", variant),
    }
    litert = litert_available() and all(path.is_file() for path in lite.values())
    if not litert:
        lite = {}
    # fp32 LiteRT is the float model to 1e-5 (tests/test_litert.py): only its int8 is scored
    lite_scored = {name: path for name, path in lite.items() if name == "int8 LiteRT"}

    def score(models: dict[str, Path]) -> dict[str, dict]:
        accuracy: dict[str, dict] = {name: {} for name in models}
        for name, row in bench_accuracy(models, bench, clips).items():
            accuracy[name]["bench AP@0.25"] = row["AP@0.25"]
            accuracy[name]["bench AP@0.5"] = row["AP@0.5"]
        for variant in ("persons", "vehicles"):
            rows = hituav_accuracy(models, hituav, variant, seeds, hituav_images)
            for name, row in rows.items():
                accuracy[name][f"HIT-UAV {variant} AP@0.25"] = row["AP@0.25"]
                accuracy[name][f"HIT-UAV {variant} AP@0.5"] = row["AP@0.5"]
        return accuracy

    with tempfile.TemporaryDirectory() as scratch:
        if reuse_accuracy:
            if not previous.is_file():
                raise BadInputError(f"--reuse-accuracy: no {previous} from an earlier run")
            earlier = json.loads(previous.read_text())
            accuracy, sizes = earlier["accuracy"], earlier["sizes"]
            calibration_source, names = earlier["calibration"], earlier["models"]
            command = earlier["command"] + f"; latency: {command}"
            models = {"float": fp32_path, "int8 min-max": int8_path}
            # models the earlier run did not score (the LiteRT int8 added since) are scored
            # now, on the bench and HIT-UAV as given (pass the earlier --seeds / --clips)
            missing = {n: p for n, p in lite_scored.items() if n not in accuracy}
            if missing:
                accuracy |= score(missing)
                sizes |= {name: path.stat().st_size for name, path in missing.items()}
                names |= {name: path.name for name, path in missing.items()}
                command += f" (scored {', '.join(missing)} here)"
        else:
            fp32 = Detector(fp32_path, threads=1)  # the model's run size and residual level
            calibration = detector_calibration(
                sets,
                network_size=fp32.network_size,
                residual_reference=fp32.residual_reference,
                warp_at=fp32.stage_b_warp,
                residual_baseline=fp32.residual_baseline,
            )
            calibration_source = calibration.source
            moving = quantize(  # the shipped recipe (`emts quantize`'s defaults) but the estimator
                fp32_path,
                Path(scratch) / "moving.onnx",
                calibration,
                "moving-average",
                float_input_conv=True,
            )
            models = {"float": fp32_path, "int8 min-max": int8_path, "int8 moving-average": moving}
            scored = models | lite_scored
            names = {name: path.name for name, path in scored.items()}
            accuracy = score(scored)
            sizes = {name: path.stat().st_size for name, path in scored.items()}
        state_before = wait_for_idle(wait_idle)
        channels = ClipSet(bench)[0].channels[5][None]
        verifiers = {
            "float": shipped_model("verifier", "fp32"),
            "int8": shipped_model("verifier", "int8"),
        }
        if litert:
            verifiers |= {
                "float LiteRT": shipped_model("verifier", "fp32", "litert"),
                "int8 LiteRT": shipped_model("verifier", "int8", "litert"),
            }
        latency = {
            "detector": model_latency(models | lite, "detector", channels, latency_runs),
            "verifier": model_latency(
                verifiers,
                "verifier",
                np.random.default_rng(0).random((1, 40, 16), np.float32),
                latency_runs,
            ),
            "pipeline": pipeline_latency(litert=litert, model=str(fp32_path) if variant else None),
        }
        state_after = machine_state()
    ratios = {}
    for threads in ("1 threads", "2 threads"):
        det = latency["detector"]
        ratios[f"detector {threads}"] = round(
            det["int8 min-max"][threads]["median_ms"] / det["float"][threads]["median_ms"], 2
        )
        ver = latency["verifier"]
        ratios[f"verifier {threads}"] = round(
            ver["int8"][threads]["median_ms"] / ver["float"][threads]["median_ms"], 2
        )
        pipe = latency["pipeline"]
        ratios[f"pipeline {threads}"] = round(
            pipe["int8"][threads]["total_median_ms"] / pipe["fp32"][threads]["total_median_ms"], 2
        )
    latency["int8_over_fp32"] = ratios
    if litert:
        latency["litert_ratios"] = litert_ratios(latency)
    report = {
        "command": command,
        "calibration": calibration_source,
        "models": names,
        "accuracy": {n: {k: round(v, 4) for k, v in row.items()} for n, row in accuracy.items()},
        "sizes": sizes,
        "machine": _cpu_name(),
        "latency_runs": latency_runs,
        "accuracy_set": {"bench clips": clips or "all", "HIT-UAV seeds": seeds},
        "state_before": state_before,
        "state_after": state_after,
        "latency": latency,
    }
    write_report(out, report)
    return report
