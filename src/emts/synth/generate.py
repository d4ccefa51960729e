"""Generating clip sets in parallel (``emts synth tier1|negatives|bench|fpbench``)."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

import cv2
from tqdm import tqdm

from emts.errors import BadInputError
from emts.synth.clips import TIER1_FRAMES, ClipSpec, render_clip
from emts.synth.common import CONTRAST_SCALE, SETS
from emts.synth.plates import HitUavPlates
from emts.synth.store import FORMAT_VERSION, write_clip

_worker_pool: HitUavPlates | None = None
_worker_out: Path | None = None


def _init_worker(hituav: str | None, split: str, out: str) -> None:
    global _worker_pool, _worker_out
    cv2.setNumThreads(1)
    _worker_pool = HitUavPlates(hituav, split) if hituav else None
    _worker_out = Path(out)


def _make_one(spec: ClipSpec) -> tuple[int, int, int]:
    """Render and store one clip; returns (index, frames, bytes)."""
    assert _worker_out is not None
    clip = render_clip(spec, _worker_pool)
    size = write_clip(_worker_out, spec.index, clip.jpegs, clip.frames, clip.labels)
    return spec.index, len(clip.frames), size


def _check_out(out: Path, manifest: dict) -> None:
    """Generate only into an empty folder or over the same set (an interrupted run done
    again writes the same files): a set of another name, size, seed or parameters there
    would leave its clips beside the new ones, to be read as theirs."""
    if not out.is_dir() or not any(out.iterdir()):
        return
    old_path = out / "manifest.json"
    try:
        old = json.loads(old_path.read_text())
    except (OSError, ValueError):  # ValueError: JSON and UTF-8 decoding errors
        old = None
    if not isinstance(old, dict):
        raise BadInputError(
            f"--out {out} is not empty and holds no clip set: generate into an empty folder"
        )
    changed = [
        f"{key} {old.get(key)!r} -> {value!r}"
        for key, value in manifest.items()
        if key != "complete" and old.get(key) != value
    ]
    if changed:
        raise BadInputError(
            f"--out {out} holds another clip set ({'; '.join(changed)}): its clips would stay "
            "beside the new ones; generate into an empty folder or delete it first"
        )


def generate_set(
    name: str,
    out: str | Path,
    clips: int | None = None,
    seed: int = 0,
    workers: int = 2,
    hituav: str | Path | None = None,
    progress: bool = True,
    frames: int = TIER1_FRAMES,
    mesh_walkers: float = 0.0,
    contrast_scale: float = CONTRAST_SCALE,
    hard_shade: float = 0.0,
) -> dict:
    """Generate set ``name`` (a key of :data:`SETS`) into ``out``, ``frames`` frames per clip,
    a ``mesh_walkers`` share of its persons drawn as MakeHuman meshes, every mover's contrast
    times ``contrast_scale``, a ``hard_shade`` share of its clips with a building's or a
    canopy's deep shade on the ground (:class:`~emts.synth.phenomena.HardShade`); returns the
    manifest."""
    kind = SETS[name]
    count = kind.default_clips if clips is None else clips
    out = Path(out)
    if hituav is not None:
        HitUavPlates(hituav, kind.split)  # fail early with a clear message
    manifest = {
        "format_version": FORMAT_VERSION,
        "set": name,
        "kind": kind.clip_kind,
        "split": kind.split,
        "description": kind.description,
        "clips": count,
        "frames_per_clip": frames,
        "seed": seed,
        "mesh_walkers": mesh_walkers,
        "contrast_scale": contrast_scale,
        **({"hard_shade": hard_shade} if hard_shade > 0 else {}),  # (older sets: none)
        "real_plates": None if hituav is None else f"HIT-UAV train split, {kind.split} id blocks",
        "complete": False,
    }
    _check_out(out, manifest)
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    specs = [
        ClipSpec(
            kind.clip_kind,
            kind.split,
            seed,
            index,
            frames=frames,
            mesh_walkers=mesh_walkers,
            contrast_scale=contrast_scale,
            hard_shade=hard_shade,
        )
        for index in range(count)
    ]
    start = time.perf_counter()
    frames = size = 0
    args = (None if hituav is None else str(hituav), kind.split, str(out))
    bar = tqdm(total=count, desc=f"synth {name}", unit="clip", disable=None if progress else True)
    if workers <= 1:
        _init_worker(*args)
        results = map(_make_one, specs)
        for _, n, b in results:
            frames, size = frames + n, size + b
            bar.update()
    else:
        context = multiprocessing.get_context("spawn")
        with context.Pool(workers, initializer=_init_worker, initargs=args) as pool:
            for _, n, b in pool.imap_unordered(_make_one, specs, chunksize=2):
                frames, size = frames + n, size + b
                bar.update()
    bar.close()
    seconds = time.perf_counter() - start
    manifest.update(
        complete=True,
        frames=frames,
        bytes=size,
        seconds=round(seconds, 1),
        frames_per_second=round(frames / max(seconds, 1e-9), 1),
    )
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
