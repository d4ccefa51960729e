"""Which shipped model files run: fp32, int8, or whichever is faster here (issue 11).

The package ships each model twice, ``models/detector.onnx`` (fp32) and
``models/detector.int8.onnx`` (static int8, QDQ; made by ``emts quantize``), and the same for
the verifier. ``precision`` picks between them:

* ``fp32`` -- the float models (the default; every accuracy figure in the README is theirs).
* ``int8`` -- the int8 models.
* ``auto`` -- the faster of the two *on this machine*, by measurement: once per process,
  model and thread count, both sessions run the model on an all-zero input, interleaved,
  ``AUTO_WARMUP`` + ``AUTO_RUNS`` times each; int8 is chosen only if its median is below
  ``AUTO_MARGIN`` x the fp32 median (a tie goes to fp32, the more accurate). Measuring beats
  a CPU-feature rule: on our x86 build machine int8 ran about 2x *slower* than fp32 although
  the CPU lists AVX-512 VNNI (the network is so small that the per-tensor quantize /
  dequantize steps outweigh the integer arithmetic); on ARM cores, where the integer kernels
  are the fast path, int8 is expected to win, but that is not measured here.

Each precision ships for two runtimes (``backend``): ``onnxruntime`` (``.onnx``, the default)
and ``litert`` (``.tflite`` through LiteRT/XNNPACK, extra ``[litert]``; :mod:`emts.litert`).
``auto`` measures the two precisions of the chosen backend.

The runtime stays torch-free: onnxruntime, or LiteRT's interpreter.
"""

from __future__ import annotations

import logging
import time
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from emts.errors import BadInputError
from emts.litert import BACKENDS, DEFAULT_BACKEND, SUFFIXES, backend_of, check_backend

PRECISIONS = ("fp32", "int8", "auto")
DEFAULT_PRECISION = "fp32"
AUTO_WARMUP = 3
AUTO_RUNS = 15
AUTO_MARGIN = 0.9  # int8 must be at least 10 % faster to be picked
_STEMS = {"fp32": "", "int8": ".int8"}
_DUMMY_SHAPES = {"detector": (1, 3, 192, 256), "verifier": (1, 40, 16)}

log = logging.getLogger(__name__)


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise BadInputError(f"precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    return precision


def shipped_model(
    kind: str, precision: str, backend: str = DEFAULT_BACKEND, variant: str = ""
) -> Path:
    """The packaged ``kind`` model file of a concrete precision (``fp32`` or ``int8``) for
    ``backend`` (``onnxruntime``: ``detector.onnx`` / ``detector.int8.onnx``; ``litert``:
    ``detector.tflite`` / ``detector.int8.tflite``); a ``variant`` (``thermal``) has its own
    files beside them (``detector.thermal.int8.tflite``)."""
    if kind not in _DUMMY_SHAPES or precision not in _STEMS or backend not in BACKENDS:
        raise KeyError((kind, precision, backend))
    name = f"{kind}{'.' + variant if variant else ''}{_STEMS[precision]}{SUFFIXES[backend]}"
    return Path(str(resources.files("emts") / "models" / name))


def shipped_files() -> list[Path]:
    """Every file of the package's model folder (what the shipped models' runs may read)."""
    folder = Path(str(resources.files("emts") / "models"))
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


# Sensor-specific detectors shipped beside the default, by the name a command's --model takes.
DETECTOR_VARIANTS = ("thermal",)


def named_model(model: str) -> str:
    """``model`` as a path: the name of a shipped detector variant (``thermal``) gives its fp32
    file in the package, unless a file of that name exists here; anything else as given."""
    if model in DETECTOR_VARIANTS and not Path(model).exists():
        return str(shipped_model("detector", "fp32", variant=model))
    return model


def shipped_variant(kind: str, model: str | Path) -> str | None:
    """The variant name of ``model`` if it is a shipped variant's fp32 ONNX (what
    ``--model thermal`` resolves to), else None."""
    if kind != "detector":
        return None
    path = Path(model).resolve()
    return next(
        (v for v in DETECTOR_VARIANTS if path == shipped_model(kind, "fp32", variant=v).resolve()),
        None,
    )


def _input_shape(session, kind: str) -> tuple[int, ...]:
    """The model's input shape, its open axes filled from the paper's (e.g. batch 1)."""
    shape = getattr(session.get_inputs()[0], "shape", None) or _DUMMY_SHAPES[kind]
    return tuple(
        d if isinstance(d, int) else fallback
        for d, fallback in zip(shape, _DUMMY_SHAPES[kind], strict=True)
    )


def _median_ms(session, feed: dict, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feed)
        out.append((time.perf_counter() - start) * 1e3)
    return out


@cache
def _measured_choice(kind: str, fp32: Path, int8: Path, threads: int) -> str:
    from emts.stages.c_detect.detector import load_session

    sessions = {
        p: load_session(path, kind, threads) for p, path in (("fp32", fp32), ("int8", int8))
    }
    times: dict[str, list[float]] = {p: [] for p in sessions}
    for round_ in range(AUTO_WARMUP + AUTO_RUNS):
        for precision, session in sessions.items():
            feed = {session.get_inputs()[0].name: np.zeros(_input_shape(session, kind), np.float32)}
            ms = _median_ms(session, feed, 1)
            if round_ >= AUTO_WARMUP:
                times[precision] += ms
    median = {p: float(np.median(v)) for p, v in times.items()}
    choice = "int8" if median["int8"] < AUTO_MARGIN * median["fp32"] else "fp32"
    log.info(
        "precision auto, %s, %d threads: fp32 %.3f ms, int8 %.3f ms -> %s",
        kind,
        threads,
        median["fp32"],
        median["int8"],
        choice,
    )
    return choice


def resolve_precision(
    kind: str,
    precision: str,
    threads: int = 2,
    backend: str = DEFAULT_BACKEND,
    variant: str = "",
) -> str:
    """``fp32`` or ``int8`` for ``precision`` (``auto`` measured once, then cached)."""
    check_precision(precision)
    check_backend(backend)
    if precision != "auto":
        return precision
    fp32 = shipped_model(kind, "fp32", backend, variant)
    int8 = shipped_model(kind, "int8", backend, variant)
    if not int8.is_file():
        log.warning("no int8 %s shipped for %s: precision auto runs fp32", kind, backend)
        return "fp32"
    return _measured_choice(kind, fp32, int8, threads)


def model_path(
    kind: str,
    precision: str = DEFAULT_PRECISION,
    threads: int = 2,
    backend: str = DEFAULT_BACKEND,
    variant: str = "",
) -> Path:
    """The shipped ``kind`` ("detector" or "verifier") model for ``precision`` and
    ``backend`` (of ``variant``, e.g. ``thermal``, if given).

    Raises:
        BadInputError: an unknown precision or backend, a model that is not shipped, or (for
            ``litert``) a missing LiteRT runtime.
    """
    if check_backend(backend) == "litert":
        from emts.litert import require_litert

        require_litert()  # one line before anything is measured or loaded
    chosen = resolve_precision(kind, precision, threads, backend, variant)
    path = shipped_model(kind, chosen, backend, variant)
    if not path.is_file():
        model = f" --model {variant}" if variant else ""
        make = (
            f"`emts quantize {kind}{model}`"
            if backend == "onnxruntime"
            else f"`emts export-litert {kind}{model} --precision {chosen}`"
        )
        raise BadInputError(
            f"no {chosen} {kind} shipped for {backend} ({path}); make it with {make}"
        )
    return path


def model_for(
    kind: str,
    model: str | Path | None,
    precision: str | None,
    threads: int = 2,
    backend: str | None = None,
) -> Path | None:
    """What a command runs: an explicit ``model`` file as given (``precision`` then only
    fp32 / unset, since it picks among the *shipped* files; the file's suffix picks the
    runtime, so ``backend`` must be unset or agree), else the shipped file of ``precision``
    and ``backend`` -- the default model's, or a shipped variant's (``--model thermal``).
    None: the caller's own default (the shipped fp32 model)."""
    variant = shipped_variant(kind, model) if model is not None else None
    if variant is not None and (precision or backend):
        return model_path(
            kind, precision or DEFAULT_PRECISION, threads, backend or DEFAULT_BACKEND, variant
        )
    if model is not None:
        if precision not in (None, DEFAULT_PRECISION):
            raise BadInputError(
                f"--precision {precision} picks a shipped {kind}; with an explicit model file "
                "drop --precision (the file is run as it is)"
            )
        if backend is not None and check_backend(backend) != backend_of(model):
            raise BadInputError(
                f"--backend {backend} does not run {Path(model).name}: a .onnx runs in "
                "onnxruntime, a .tflite in litert (the suffix picks it); drop --backend"
            )
        if backend_of(model) == "litert":
            from emts.litert import require_litert

            require_litert()
        return Path(model)
    return model_path(kind, precision or DEFAULT_PRECISION, threads, backend or DEFAULT_BACKEND)
