"""``emts batch track``: :func:`emts.apps.track.run_track` over many flights, each a Ray task.

A flight is a video file, or a folder of images that holds no video. Each one writes, under
the output folder, ``NAME.jsonl`` (the JSON lines of ``emts track``, flushed per frame as they
are computed) and then ``NAME.summary.json`` (its counts and latencies, written whole once the
lines are); the batch writes ``batch.md`` and ``batch.json``, a table of every flight. A flight
whose summary says ``ok`` and whose JSON lines hold the lines it counts is done: a batch run
again skips it (``force`` redoes it); a flight with lines but no summary (a run killed in the
middle) is redone. A flight that cannot be tracked (an unreadable or corrupt video) is reported
``failed`` with its reason and the others go on; it is tried again on the next run.

Ray is imported only when a batch runs (:func:`import_ray`): this module, like the rest of the
runtime, loads without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import signal
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from emts.errors import BadInputError
from emts.io import IMAGE_SUFFIXES, VIDEO_SUFFIXES

log = logging.getLogger("emts")

# What a folder argument expands to: the containers VideoWriter writes and the other common
# ones OpenCV's FFmpeg reads. A file named on the command line is a flight whatever its suffix.
BATCH_VIDEO_SUFFIXES = VIDEO_SUFFIXES | frozenset(
    {".mpg", ".mpeg", ".ts", ".mts", ".m2ts", ".wmv", ".webm", ".flv", ".3gp"}
)
SUMMARY_SUFFIX = ".summary.json"
TABLE_MD = "batch.md"
TABLE_JSON = "batch.json"
RAY_EXTRA = "pip install 'emts[distributed]'"
# The object store of a local Ray instance: tasks return a summary of a few hundred bytes, so
# the smallest store Ray accepts (75 MiB) is plenty, and no share of the RAM is set aside.
LOCAL_OBJECT_STORE = 80 * 1024 * 1024
STATUSES = ("ok", "failed", "skipped", "interrupted")


@dataclass(frozen=True)
class Flight:
    """One flight of a batch: ``name`` (its outputs' name) and ``source``, the absolute path
    of a video file or of an image folder (a worker on another machine reads that path)."""

    name: str
    source: str

    def jsonl(self, out: Path) -> Path:
        return Path(out) / f"{self.name}.jsonl"

    def summary(self, out: Path) -> Path:
        return Path(out) / f"{self.name}{SUMMARY_SUFFIX}"


def import_ray(command: str = "emts batch"):
    """The ``ray`` module, or a one-line BadInputError that names the extra to install."""
    try:
        import ray
    except ImportError:
        raise BadInputError(f"{command} runs on Ray, which is not installed: {RAY_EXTRA}") from None
    return ray


def _listing(paths: list[Path], most: int = 8) -> str:
    names = [p.name for p in paths[:most]]
    return ", ".join(names) + (f", ... ({len(paths) - most} more)" if len(paths) > most else "")


def find_flights(arguments: Iterable[str]) -> tuple[list[Flight], list[str]]:
    """The flights the command-line arguments name, and one note per folder on what it held.

    A file is a flight. A folder expands to the videos in it (:data:`BATCH_VIDEO_SUFFIXES`;
    not its subfolders; names starting with a dot -- ``.DS_Store``, macOS's ``._flight.mp4``
    -- are left out), or, holding images and no video, is one flight: an image sequence. The
    same file named twice is one flight. Names: :func:`flight_names`.

    Raises:
        BadInputError: an argument names nothing, or a folder holds neither videos nor images.
    """
    sources: list[Path] = []
    notes: list[str] = []
    for text in arguments:
        path = Path(text)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
            videos = [p for p in files if p.suffix.lower() in BATCH_VIDEO_SUFFIXES]
            images = [p for p in files if p.suffix.lower() in IMAGE_SUFFIXES]
            if videos:
                ignored = f"; {len(images)} images beside them left out" if images else ""
                notes.append(f"folder {text}: {len(videos)} videos ({_listing(videos)}){ignored}")
                sources += videos
            elif images:
                notes.append(f"folder {text}: no video, {len(images)} images: one flight")
                sources.append(path)
            else:
                kinds = ", ".join(sorted(BATCH_VIDEO_SUFFIXES))
                raise BadInputError(f"folder {text} holds no video ({kinds}) and no image")
        elif path.is_file():
            sources.append(path)
        elif path.exists():  # a FIFO or a device: reading it may never return
            raise BadInputError(f"{text} is not a regular file or folder")
        else:
            raise BadInputError(f"{text}: no such file or folder")
    unique: dict[Path, Path] = {}
    for path in sources:
        unique.setdefault(path.resolve(), path.absolute())
    paths = list(unique.values())
    return [Flight(n, str(p)) for n, p in zip(flight_names(paths), paths, strict=True)], notes


def _base(path: Path) -> str:
    return path.name if path.is_dir() else path.stem


def flight_names(sources: list[Path]) -> list[str]:
    """Each flight's name: the video's stem (an image folder's own name). Flights that share
    one are named ``FOLDER-STEM`` by the folder each lies in; where that is shared too (the
    same stem in one folder: ``flight.mp4``, ``flight.avi``) six hex digits of the path follow.
    A name depends only on the flight's path and on which other flights share its stem."""

    def clashes(names: list[str]) -> set[str]:
        counts = Counter(n.casefold() for n in names)  # one file on a case-blind file system
        return {n for n, k in counts.items() if k > 1}

    names = [_base(p) for p in sources]
    shared = clashes(names)
    names = [
        f"{p.parent.name}-{n}" if n.casefold() in shared else n
        for p, n in zip(sources, names, strict=True)
    ]
    shared = clashes(names)
    return [
        f"{n}-{hashlib.sha1(str(p).encode()).hexdigest()[:6]}" if n.casefold() in shared else n
        for p, n in zip(sources, names, strict=True)
    ]


def _complete_lines(path: Path) -> int | None:
    """The number of lines of the file at ``path`` if its last line is whole, else None."""
    try:
        with open(path, "rb") as stream:
            count, last = 0, b"\n"
            while chunk := stream.read(1 << 20):
                count += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError:
        return None
    return count if last == b"\n" else None


def _same_file(a: str, b: str) -> bool:
    try:
        return a == b or os.path.samefile(a, b)
    except OSError:
        return False


def done_summary(flight: Flight, out: Path) -> dict | None:
    """The flight's summary if it is done under ``out`` (its summary says ``ok`` and its JSON
    lines hold as many whole lines as the summary counts), else None.

    Raises:
        BadInputError: the summary there is of another source (a flight of the same name from
            another batch): nothing is overwritten unasked.
    """
    path = flight.summary(out)
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none, or a damaged one: the flight is not done
        return None
    if not isinstance(summary, dict) or summary.get("status") != "ok":
        return None
    if not _same_file(str(summary.get("source")), flight.source):
        raise BadInputError(
            f"{path} is the summary of {summary.get('source')}, not of {flight.source}: "
            "choose another --out, or pass --force to overwrite it"
        )
    if _complete_lines(flight.jsonl(out)) != summary.get("lines"):
        return None
    return summary


def write_json(path: Path, value: dict) -> None:
    """Write ``value`` whole or not at all: a reader never sees half a file."""
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    os.replace(part, path)


def one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _quiet_opencv() -> None:
    """As ``emts track`` does: FFmpeg's console chatter on a corrupt video stays out."""
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # AV_LOG_QUIET
    import cv2

    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)


def track_flight(flight: Flight, out: str, make_pipeline: Callable, fps: float | None) -> dict:
    """Track one flight as ``emts track --lock auto`` does (:func:`emts.apps.track.run_track`,
    the same JSON lines); the task each flight of a batch runs.

    Removes the flight's summary first (from then on the flight is not done), streams its
    JSON lines, then writes its summary whole. ``make_pipeline``: builds the
    :class:`emts.pipeline.Pipeline` (a fresh one per flight). A flight that cannot be tracked
    is returned (and its summary written) with ``status`` ``failed`` and a one-line
    ``reason``; the error is not raised.
    """
    from emts.apps.track import LockRequest, run_track

    _quiet_opencv()
    out_dir = Path(out)
    summary_path, jsonl = flight.summary(out_dir), flight.jsonl(out_dir)
    summary_path.unlink(missing_ok=True)
    events: Counter[str] = Counter()

    def count_events(result, _size) -> None:
        if result is not None and result.event is not None:
            events[result.event] += 1

    start = time.perf_counter()
    row: dict = {"flight": flight.name, "source": flight.source, "host": socket.gethostname()}
    try:
        pipeline = make_pipeline()
        summary = run_track(
            flight.source, LockRequest(), None, str(jsonl), pipeline, fps=fps, hook=count_events
        )
    except Exception as error:  # the flight's own failure; the batch goes on
        if not isinstance(error, BadInputError | OSError):
            log.exception("%s failed", flight.source)  # a bug: Ray's worker log keeps it
        reason = one_line(error)
        if isinstance(error, OSError) and error.filename:
            reason = f"{error.filename}: {error.strerror or reason}"
        row.update(status="failed", reason=reason, wall_s=round(time.perf_counter() - start, 3))
        write_json(summary_path, row)
        return row
    latency = summary.latency_ms(0.5)
    row.update(
        status="ok",
        reason=summary.incomplete or "",
        lines=_complete_lines(jsonl),
        frames=summary.frames,
        skipped_frames=summary.skipped,
        locked_frames=summary.locked_frames,
        lock_fraction=round(summary.locked_frames / max(summary.frames, 1), 4),
        reacquisitions=summary.reacquisitions,
        lock_events=events["lock"],
        lost_events=events["lost"],
        relock_events=events["relock"],
        detector=summary.detector,
        incomplete=summary.incomplete,
        ms_median={stage: round(ms, 3) for stage, ms in latency.items()},
        ms_p90={stage: round(ms, 3) for stage, ms in summary.latency_ms(0.9).items()},
        ms_per_frame=round(latency.get("total", float("nan")), 3),
        wall_s=round(time.perf_counter() - start, 3),
    )
    write_json(summary_path, row)
    return row


def _cell(value, spec: str = "") -> str:
    if value is None or (isinstance(value, float) and value != value):  # None or NaN
        return "-"
    return format(value, spec)


TABLE_COLUMNS = (
    "flight",
    "status",
    "frames",
    "locked",
    "reacquisitions",
    "lost",
    "relock",
    "median ms/frame",
    "reason",
)


def table_row(row: dict) -> list[str]:
    """A flight's cells in :data:`TABLE_COLUMNS` order."""
    has_counts = "frames" in row
    return [
        row["flight"],
        row["status"],
        _cell(row.get("frames")),
        _cell(row.get("lock_fraction"), ".1%") if has_counts else "-",
        _cell(row.get("reacquisitions")),
        _cell(row.get("lost_events")),
        _cell(row.get("relock_events")),
        _cell(row.get("ms_per_frame"), ".2f"),
        (row.get("reason") or "").replace("|", "/"),
    ]


def counts(rows: list[dict]) -> dict[str, int]:
    """How many flights have each status."""
    tally = Counter(r["status"] for r in rows)
    return {s: tally[s] for s in STATUSES if tally[s] or s != "interrupted"}


def write_table(out: Path, rows: list[dict], command: str | None = None) -> tuple[Path, Path]:
    """``batch.md`` and ``batch.json`` under ``out``: one row per flight (its status, with the
    one-line reason of a failed or skipped one); each file written whole."""
    tally = counts(rows)
    said = ", ".join(f"{n} {s}" for s, n in tally.items())
    lines = [
        "# emts batch track",
        "",
        f"{len(rows)} flights: {said}." + (f" Command: `{command}`." if command else ""),
        "Per flight: `NAME.jsonl` (emts track's JSON lines) and `NAME.summary.json`.",
        "",
        "| " + " | ".join(TABLE_COLUMNS) + " |",
        "|---|---|" + "---:|" * (len(TABLE_COLUMNS) - 3) + "---|",
    ]
    lines += ["| " + " | ".join(table_row(r)) + " |" for r in rows]
    md, js = Path(out) / TABLE_MD, Path(out) / TABLE_JSON
    part = md.with_name(md.name + ".part")
    part.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(part, md)
    write_json(js, {"command": command, "out": str(out), "counts": tally, "flights": rows})
    return md, js


def progress_line(row: dict) -> str:
    """One line on a finished flight."""
    if row["status"] != "ok":
        return f"{row['flight']}: {row['status']}: {row.get('reason') or '-'}"
    text = (
        f"{row['flight']}: ok, {row['frames']} frames, locked {row['lock_fraction']:.1%}, "
        f"{row['reacquisitions']} reacquisitions, {row['lost_events']} lost, "
        f"{row['relock_events']} relock, {_cell(row['ms_per_frame'], '.1f')} ms/frame "
        f"({row['wall_s']:.1f} s on {row['host']})"
    )
    return text + (f"; incomplete input: {row['incomplete']}" if row.get("incomplete") else "")


class RaySignals:
    """The SIGTERM and SIGHUP handlers in force before Ray started, put back once it has:
    Ray's own abort the process, where the command's end it as Ctrl-C does (the flights still
    running cancelled, the table written). Each handler put back records what it raises, since
    a Ray wait turns that into a plain KeyboardInterrupt and the signal's number is lost."""

    def __init__(self) -> None:
        numbers = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
        self.before = {number: signal.getsignal(number) for number in numbers}
        self.raised: BaseException | None = None

    def _recording(self, handler):
        def handle(signum, frame):
            try:
                handler(signum, frame)
            except BaseException as error:
                self.raised = error
                raise

        return handle

    def _install(self, recording: bool) -> None:
        for number, handler in self.before.items():
            if handler is None:  # not installed from Python: left as it is
                continue
            if recording and callable(handler):
                handler = self._recording(handler)
            with contextlib.suppress(ValueError):  # not the main thread: nothing to do
                signal.signal(number, handler)

    def put_back(self) -> None:
        self._install(recording=True)

    def restore(self) -> None:
        self._install(recording=False)


def _check_answers(address: str) -> None:
    """Refuse a HOST:PORT where nothing listens, in one line: Ray would retry for minutes."""
    host, colon, port = address.split("://", 1)[-1].rpartition(":")
    if not colon or not port.isdigit():  # "auto": Ray looks for the cluster itself
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=10):
            pass
    except OSError as error:
        raise BadInputError(
            f"nothing answers at the Ray cluster address {address} ({error.strerror or error}); "
            "is `ray start --head` running there?"
        ) from None


def start_ray(ray, address: str | None, cores: int) -> bool:
    """Join the cluster at ``address``, or start a local instance on ``cores`` CPUs; False
    (nothing started) when this process is connected already (an embedding program, tests)."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing sent anywhere
    if address:
        _check_answers(address)
    quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    try:
        if address:
            ray.init(address=address, **quiet)
        else:
            # "local": a new instance, never a cluster that RAY_ADDRESS or `ray start` names
            ray.init("local", num_cpus=cores, object_store_memory=LOCAL_OBJECT_STORE, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as error:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        hint = ""
        if address and os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
            hint = (
                " (a cluster with Ray's token authentication, the default of `ray start`: set "
                "RAY_AUTH_MODE=token and copy the head's ~/.ray/auth_token here)"
            )
        raise BadInputError(f"cannot start or join {where}: {one_line(error)}{hint}") from None
    return True


def local_cores() -> int:
    """The CPUs this process may run on (its affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


@dataclass
class BatchResult:
    """The flights' rows in the order given, and where the table was written."""

    rows: list[dict]
    table: tuple[Path, Path]

    @property
    def failed(self) -> int:
        return sum(r["status"] == "failed" for r in self.rows)

    @property
    def incomplete(self) -> int:
        return sum(bool(r.get("incomplete")) for r in self.rows if r["status"] == "ok")


def run_batch(
    flights: list[Flight],
    out: Path,
    make_pipeline: Callable,
    *,
    fps: float | None = None,
    workers: int | None = None,
    threads: int = 1,
    address: str | None = None,
    force: bool = False,
    quiet: bool = False,
    command: str | None = None,
) -> BatchResult:
    """Track ``flights`` as Ray tasks, at most ``workers`` at a time (default: the cluster's
    CPUs // ``threads``), each asking Ray for ``threads`` CPUs (at most a node's); write the
    table.

    Flights done earlier are skipped unless ``force``. One line per finished flight (and a
    progress bar on a terminal) on stderr unless ``quiet``. On Ctrl-C the flights still
    running are cancelled and the table says ``interrupted`` for them.
    """
    ray = import_ray()
    out = Path(out).absolute()
    rows: dict[str, dict] = {}
    todo = []
    for flight in flights:
        summary = None if force else done_summary(flight, out)
        if summary is None:
            todo.append(flight)
        else:
            reason = "done earlier (its summary and JSON lines are there); --force redoes it"
            rows[flight.name] = {**summary, "status": "skipped", "reason": reason}

    def say(text: str) -> None:
        if not quiet:
            tqdm.write(text, file=sys.stderr)

    if rows:
        done = f"{len(rows)} of {_flights(len(flights))} done earlier"
        say(f"{done}, skipped ({_listing_names(rows)})")
    signals = RaySignals()
    started = start_ray(ray, address, local_cores()) if todo else False
    if started:
        signals.put_back()
    out.mkdir(parents=True, exist_ok=True)
    running: dict = {}
    bar = None
    try:
        if todo:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            # a task asking for more CPUs than any node has would wait for ever: a node's all
            largest = max(n["Resources"].get("CPU", 0) for n in ray.nodes() if n["Alive"])
            each = max(1, min(threads, int(largest)))
            cap = workers or max(1, cpus // each)
            where = f"the Ray cluster at {address}" if address else "Ray"
            say(f"{_flights(len(todo))} to track on {where}: {cpus} CPUs, {cap} at a time")
            task = ray.remote(track_flight).options(num_cpus=each, max_retries=0)
            bar = tqdm(  # disable=None: a bar on a terminal only
                total=len(flights),
                initial=len(rows),
                desc="batch",
                unit="flight",
                disable=True if quiet else None,
            )
            waiting = list(todo)
            pipeline_ref = ray.put(make_pipeline)
            while waiting or running:
                while waiting and len(running) < cap:
                    flight = waiting.pop(0)
                    running[task.remote(flight, str(out), pipeline_ref, fps)] = flight
                ready, _ = ray.wait(list(running), num_returns=1)
                flight = running.pop(ready[0])
                try:
                    row = ray.get(ready[0])
                except Exception as error:  # the task itself died: a worker killed, a node lost
                    row = {"flight": flight.name, "source": flight.source, "status": "failed"}
                    row["reason"] = f"{type(error).__name__}: {one_line(error)}"
                rows[flight.name] = row
                bar.update(1)
                say(f"[{len(rows)}/{len(flights)}] {progress_line(row)}")
    except BaseException as stop:
        for ref in running:
            ray.cancel(ref, force=True)
        if isinstance(stop, KeyboardInterrupt) and signals.raised not in (None, stop):
            raise signals.raised from None  # SIGTERM or SIGHUP, said as such
        raise
    finally:
        if bar is not None:
            bar.close()
        ordered = []
        for flight in flights:
            row = rows.get(flight.name) or {
                "flight": flight.name,
                "source": flight.source,
                "status": "interrupted",
                "reason": "the batch stopped before this flight was reported done; run it again "
                "(what is done is skipped)",
            }
            ordered.append(row)
        table = write_table(out, ordered, command)
        if started:
            ray.shutdown()
            signals.restore()
    return BatchResult(ordered, table)


def _flights(count: int) -> str:
    return f"{count} flight" + ("" if count == 1 else "s")


def _listing_names(rows: dict, most: int = 8) -> str:
    names = list(rows)
    return ", ".join(names[:most]) + (
        f", ... ({len(names) - most} more)" if len(names) > most else ""
    )
