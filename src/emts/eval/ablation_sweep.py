"""``emts ablate``: the study's runs (:mod:`emts.eval.ablation`) as Ray tasks, resumable.

Every training is one Ray task (``num_cpus`` = ``--cpus-per-run``, at most a node's; one GPU
where the cluster has one) and every scoring of a run on one set is another (one CPU), which
Ray starts once the run's training is done. Under ``DIR/runs/<row>/<seed>/`` a run keeps
``spec.json`` (what it is), ``train/`` (:func:`emts.train.loop.train_detector`'s folder, with
its ``checkpoint.pt`` every 100 steps), ``model.onnx`` + ``training.json`` once trained,
``scores/<set>.json`` once scored, and ``result.json`` last. A run whose ``result.json`` is
there is never redone; a killed sweep run again resumes each unfinished training from its last
checkpoint and scores only what is not scored yet.

Ray is imported when a sweep runs (:func:`emts.apps.batch.import_ray`); the local instance,
the cluster address and the signal handling are ``emts batch track``'s.
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdm import tqdm

from emts.apps.batch import RaySignals, import_ray, local_cores, one_line, start_ray
from emts.errors import BadInputError
from emts.eval.ablation import (
    RESULT,
    ROWS,
    SCORE_SETS,
    DataPaths,
    Protocol,
    RunSpec,
    read_json,
    result_record,
    score,
    seed_folder,
    train_run,
    write_json,
)

SPEC = "spec.json"


def plan(
    out: Path,
    rows: list[str],
    seeds: list[int],
    steps: int | None = None,
    threads: int = 2,
    protocol: Protocol | None = None,
) -> list[RunSpec]:
    """The runs of ``rows`` (trained rows once per seed, the others once) under ``out``.

    Raises:
        BadInputError: a run folder there was made with other settings (a smoke run's
            ``--steps``, another protocol): nothing is mixed into it.
    """
    protocol = protocol or Protocol()
    specs = []
    for row in rows:
        variant = ROWS[row]
        for seed in seeds if variant.trained else [None]:
            folder = Path(out).absolute() / "runs" / row / seed_folder(seed)
            spec = RunSpec(row, seed, str(folder), steps, threads, protocol)
            before = read_json(folder / SPEC)
            if before is not None and before != _identity(spec):
                raise BadInputError(
                    f"{folder} holds a run made with other settings "
                    f"({_differences(before, spec)}); choose another --out, or delete that "
                    "folder to redo it"
                )
            specs.append(spec)
    return specs


def _identity(spec: RunSpec) -> dict:
    """What makes a run's results comparable (its folder aside; threads do not change it)."""
    return {
        "row": spec.row,
        "seed": spec.seed,
        "steps": spec.steps,
        "protocol": asdict(spec.protocol),
    }


def _differences(before: dict, spec: RunSpec) -> str:
    now = _identity(spec)
    return ", ".join(
        f"{k} {before.get(k)!r} there, {now[k]!r} now" for k in now if before.get(k) != now[k]
    )


def done_result(spec: RunSpec) -> dict | None:
    """The run's ``result.json`` if it is finished, else None."""
    result = read_json(Path(spec.folder) / RESULT)
    if result is None or result.get("row") != spec.row or result.get("seed") != spec.seed:
        return None
    return result


def _earlier_runs(source: Path) -> list[dict]:
    """The run records in ``source``: an ``ablation.json`` report's runs, or one run's
    ``result.json``."""
    earlier = read_json(Path(source))
    if isinstance(earlier, dict) and isinstance(earlier.get("runs"), list):
        return earlier["runs"]
    if isinstance(earlier, dict) and "row" in earlier and "scores" in earlier:
        return [earlier]
    raise BadInputError(
        f"--results-from {source}: not an emts ablate report (ablation.json) or run result"
        " (result.json)"
    )


def carry_results(specs: list[RunSpec], sources: Path | list[Path]) -> list[RunSpec]:
    """Take the finished runs of earlier sweeps' ``ablation.json`` (another machine's, a
    committed report) or single runs' ``result.json`` as done: each run of ``specs`` with the
    same row, seed, protocol and step budget gets that run's record as its ``result.json``
    (and ``spec.json``), unless its folder already holds a result. A run not finished there
    whose training checkpoint lies beside a report (``checkpoints/ROW-seedK.pt``, a copy of
    its ``train/checkpoint.pt``) starts from it where its folder has none (the training
    refuses another run's checkpoint). Returns the runs carried (finished or from a
    checkpoint).

    Raises:
        BadInputError: a source is neither an ``emts ablate`` report nor a run's result.
    """
    from emts.train.loop import CHECKPOINT  # (the train extra: emts ablate requires it)

    sources = [Path(sources)] if isinstance(sources, (str, Path)) else [Path(p) for p in sources]
    earlier = [(source, run) for source in sources for run in _earlier_runs(source)]
    carried = []
    for spec in specs:
        if done_result(spec) is not None:
            continue
        for source, run in earlier:
            if (
                run.get("row") == spec.row
                and run.get("seed") == spec.seed
                and run.get("protocol") == asdict(spec.protocol)
                and run.get("step_budget_override") == spec.steps
                and run.get("status") != "failed"
                and "scores" in run
            ):
                folder = Path(spec.folder)
                folder.mkdir(parents=True, exist_ok=True)
                write_json(folder / SPEC, _identity(spec))
                record = {**run, "carried_from": str(source.absolute())}
                write_json(folder / RESULT, record)
                carried.append(spec)
                break
        else:
            for source in sources:
                saved = source.parent / CHECKPOINTS / checkpoint_name(spec)
                train = Path(spec.folder) / "train" / CHECKPOINT
                if spec.variant.trained and saved.is_file() and not train.is_file():
                    train.parent.mkdir(parents=True, exist_ok=True)
                    write_json(Path(spec.folder) / SPEC, _identity(spec))
                    shutil.copyfile(saved, train)
                    carried.append(spec)
                    break
    return carried


# Beside a report: unfinished trainings' checkpoints carried to another machine.
CHECKPOINTS = "checkpoints"


def checkpoint_name(spec: RunSpec) -> str:
    """``ROW-seedK.pt``: a run's training checkpoint as kept beside a report."""
    return f"{spec.row}-{seed_folder(spec.seed)}.pt"


def _train_task(spec: RunSpec, data: DataPaths, device: str) -> dict:
    return train_run(spec, data, device)


def _score_task(spec: RunSpec, data: DataPaths, which: str, _training) -> dict:
    # (_training: the training task's result; passing it makes Ray wait for the training)
    return score(spec, data, which)


def _reason(error: BaseException) -> str:
    """One line for a task's failure: the exception inside Ray's wrapper."""
    cause = getattr(error, "cause", None) or error
    return f"{type(cause).__name__}: {one_line(cause)}"


def progress_line(row: dict) -> str:
    """One line on a finished (or failed) run."""
    label = row["row"] if row.get("seed") is None else f"{row['row']} seed {row['seed']}"
    if row.get("status") == "failed":
        return f"{label}: failed: {row['reason']}"
    s = row["scores"]

    def cell(name: str) -> str:
        value = s.get(name)
        return "-" if value is None else f"{value:.3f}"

    trained = (
        f", trained in {row['train_seconds']:.0f} s on {row['training_device']}"
        if row.get("train_seconds") is not None
        else ""
    )
    return (
        f"{label}: bench AP25 {cell('bench AP@0.25')}, HIT-UAV AP25 "
        f"{cell('HIT-UAV persons AP@0.25')} / {cell('HIT-UAV vehicles AP@0.25')}, "
        f"person12 AP25 {cell('person12 AP@0.25')}{trained}"
    )


@dataclass
class SweepResult:
    """Every requested run's result (finished earlier, now, or failed) and the report."""

    rows: list[dict]
    report: tuple[Path, ...]
    seconds: float

    @property
    def failed(self) -> int:
        return sum(r.get("status") == "failed" for r in self.rows)


def run_sweep(
    specs: list[RunSpec],
    data: DataPaths,
    out: Path,
    *,
    address: str | None = None,
    cpus_per_run: int = 2,
    quiet: bool = False,
    command: str | None = None,
) -> SweepResult:
    """Train and score ``specs`` as Ray tasks (those finished earlier are skipped), then
    write ``ablation.md``, ``ablation.json`` and ``ablation.png`` under ``out``.

    One line per finished run (and a bar on a terminal) on stderr unless ``quiet``. A run
    that fails is reported with its one-line reason and the others are finished. On Ctrl-C
    (or SIGTERM, SIGHUP) the running tasks are cancelled and the report is written from what
    is finished.
    """
    from emts.eval.ablation_report import write_report

    ray = import_ray("emts ablate")
    started_at = time.perf_counter()
    out = Path(out).absolute()
    results: dict[RunSpec, dict] = {}
    todo = []
    for spec in specs:
        done = done_result(spec)
        if done is None:
            todo.append(spec)
        else:
            results[spec] = done

    def say(text: str) -> None:
        if not quiet:
            tqdm.write(text, file=sys.stderr)

    if results:
        names = ", ".join(s.label for s in results)
        say(f"{len(results)} of {len(specs)} runs done earlier, skipped ({names})")
    signals = RaySignals()
    started = start_ray(ray, address, local_cores()) if todo else False
    if started:
        signals.put_back()
    pending: dict = {}
    bar = None
    try:
        if todo:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            gpus = int(ray.cluster_resources().get("GPU", 0))
            largest = max(n["Resources"].get("CPU", 0) for n in ray.nodes() if n["Alive"])
            each = max(1, min(cpus_per_run, int(largest)))
            device = "cuda" if gpus else "cpu"
            where = f"the Ray cluster at {address}" if address else "Ray"
            trainings = sum(s.variant.trained for s in todo)
            cpu_text = f"{each} CPU" + ("s" if each > 1 else "") + (" + 1 GPU" if gpus else "")
            each_training = f"of {cpu_text} each, " if trainings else ""
            say(
                f"{len(todo)} runs to do on {where} ({cpus} CPUs, {gpus} GPUs): {trainings} "
                f"trainings {each_training}{len(todo) * len(SCORE_SETS)} scorings of 1 CPU"
            )
            train = ray.remote(_train_task).options(
                num_cpus=each, num_gpus=1 if gpus else 0, max_retries=0
            )
            scoring = ray.remote(_score_task).options(num_cpus=1, max_retries=0)
            trained: dict[RunSpec, object] = {}
            for spec in todo:
                folder = Path(spec.folder)
                folder.mkdir(parents=True, exist_ok=True)
                write_json(folder / SPEC, _identity(spec))
                trained[spec] = train.remote(spec, data, device) if spec.variant.trained else None
                for which in SCORE_SETS:
                    pending[scoring.remote(spec, data, which, trained[spec])] = (spec, which)
            bar = tqdm(
                total=len(specs),
                initial=len(results),
                desc="ablate",
                unit="run",
                disable=True if quiet else None,
            )
            scores: dict[RunSpec, dict] = {spec: {} for spec in todo}
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                spec, which = pending.pop(ready[0])
                try:
                    scores[spec][which] = ray.get(ready[0])
                except Exception as error:  # the training or this scoring failed
                    scores[spec][which] = {"error": _reason(error)}
                if len(scores[spec]) < len(SCORE_SETS):
                    continue
                errors = [s["error"] for s in scores[spec].values() if "error" in s]
                if errors:
                    row = {"row": spec.row, "seed": spec.seed, "status": "failed"}
                    row["reason"] = errors[0]
                else:
                    training = ray.get(trained[spec]) if trained[spec] is not None else None
                    row = result_record(spec, data, training, scores[spec])
                    write_json(Path(spec.folder) / RESULT, row)
                results[spec] = row
                bar.update(1)
                say(f"[{len(results)}/{len(specs)}] {progress_line(row)}")
    except BaseException as stop:
        for ref in pending:
            ray.cancel(ref, force=True)
        if isinstance(stop, KeyboardInterrupt) and signals.raised not in (None, stop):
            raise signals.raised from None
        raise
    finally:
        if bar is not None:
            bar.close()
        rows = [results[s] for s in specs if s in results]
        report = write_report(out, rows, specs, command)
        if started:
            ray.shutdown()
            signals.restore()
    return SweepResult(rows, report, round(time.perf_counter() - started_at, 1))
