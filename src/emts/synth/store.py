"""On-disk format of generated clip sets, and reading them back.

A set is a folder::

    DIR/manifest.json        what was generated: set kind, split, seed, clip count, parameters
    DIR/clips/000123.npz     frames and cached channels of clip 123
    DIR/clips/000123.json    its labels

``clips/NNNNNN.npz`` holds

* ``jpeg`` (uint8) and ``jpeg_offsets`` (int64, n+1): the n frames, 640x512 gray, as the JPEG
  bytes the simulated camera stream delivered (frame i is ``jpeg[off[i]:off[i+1]]``);
* ``difference`` (float16, n x 192 x 256): Stage B's D channel computed by the package's own
  Stage A/B (:class:`emts.front_end.MotionFrontEnd`) on the decoded frames.

L and R are rebuilt on load by Stage B's own functions (L from the decoded frame, R from D),
so the cache costs one float16 plane per frame. The only difference from a fresh Stage A/B
run is D's float16 rounding (at most 2.4e-4 for |D| < 0.5).

``clips/NNNNNN.json`` holds ``{"clip", "kind", "split", "seed", "plate", "scene", "frames"}``;
``frames[i]`` is ``{"frame": i, "camera_motion": M (2x3, frame i-1 -> i, input px; identity
for frame 0), "persons": [{"id", "box": [x, y, w, h], "visible", "contrast"}],
"distractors": [{"kind", "id", "box"}]}``. Boxes are in the 640x512 frame's pixels, top-left
corner and size;
``visible`` is the fraction of the person's coverage not hidden by what is drawn over it
(trees, roofs, nearer actors) or cut by the frame edge; ``contrast`` is the person's mean
luminance offset from the local plate mean in units of the local plate standard deviation
(|contrast| < 1: nearly invisible in L).
"""

from __future__ import annotations

import json
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from emts.errors import BadInputError
from emts.front_end import MotionFrontEnd
from emts.stages.b_channels import network_image, residual_from_difference

FORMAT_VERSION = 1


@dataclass
class StoredClip:
    """One clip read back from a set."""

    index: int
    frames: list[np.ndarray]  # uint8 gray 640x512
    channels: np.ndarray  # float32 (n, 3, 192, 256) [L, R, D]
    labels: dict


def compute_differences(frames: list[np.ndarray]) -> np.ndarray:
    """Stage A/B's D channel for each frame of a clip (float16, n x 192 x 256)."""
    front = MotionFrontEnd()
    return np.stack([front.step(frame).channels[2] for frame in frames]).astype(np.float16)


def write_clip(
    folder: Path, index: int, jpegs: list[bytes], frames: list[np.ndarray], labels: dict
) -> int:
    """Store one clip (computing its channels); returns the bytes written."""
    clips = folder / "clips"
    clips.mkdir(parents=True, exist_ok=True)
    offsets = np.cumsum([0] + [len(j) for j in jpegs]).astype(np.int64)
    blob = np.frombuffer(b"".join(jpegs), np.uint8)
    npz = clips / f"{index:06d}.npz"
    np.savez(npz, jpeg=blob, jpeg_offsets=offsets, difference=compute_differences(frames))
    label_path = clips / f"{index:06d}.json"
    label_path.write_text(json.dumps(labels, separators=(",", ":")))
    return npz.stat().st_size + label_path.stat().st_size


def decode_frames(npz: np.lib.npyio.NpzFile) -> list[np.ndarray]:
    blob, offsets = npz["jpeg"], npz["jpeg_offsets"]
    return [
        cv2.imdecode(blob[offsets[i] : offsets[i + 1]], cv2.IMREAD_GRAYSCALE)
        for i in range(len(offsets) - 1)
    ]


class ClipSet:
    """Read access to a generated set folder.

    Example:
        >>> clips = ClipSet("data/tier1")          # doctest: +SKIP
        >>> clip = clips[0]; clip.channels.shape    # doctest: +SKIP
        (18, 3, 192, 256)
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        manifest = self.folder / "manifest.json"
        if not manifest.is_file():
            raise BadInputError(f"{self.folder}: not a clip set (no manifest.json)")
        try:
            self.manifest = json.loads(manifest.read_text())
        except (OSError, ValueError) as error:  # ValueError: JSON and UTF-8 decoding errors
            raise BadInputError(
                f"{manifest} cannot be read ({error}); regenerate the set with emts synth"
            ) from None
        if isinstance(self.manifest, dict) and self.manifest.get("complete") is False:
            raise BadInputError(
                f"{self.folder}: an incomplete clip set (its emts synth run is still writing it "
                "or was interrupted); wait for it or generate it again"
            )
        self.indices = sorted(int(p.stem) for p in (self.folder / "clips").glob("*.npz"))
        count = self.manifest.get("clips") if isinstance(self.manifest, dict) else None
        if count is not None:
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise BadInputError(
                    f"{manifest}: 'clips' is {count!r}, not a number of clips; regenerate the "
                    "set with emts synth"
                )
            self._check_clips(count)

    def _check_clips(self, count: int) -> None:
        """The clips on disk are the ``count`` the manifest names, each with its labels: a
        missing one would be left out of an evaluation unsaid, one it does not name is a
        stale clip of another run that would be read as this set's."""
        folder = self.folder / "clips"
        files = {
            suffix: {int(p.stem) for p in folder.glob(f"*{suffix}") if p.stem.isdigit()}
            for suffix in (".npz", ".json")
        }
        # the clips the manifest names that are there (not range(count): it may say 10**9)
        named = {i for i in files[".npz"] | files[".json"] if i < count}

        def listed(indices, total: int | None = None) -> str:
            total = len(indices) if total is None else total
            shown = ", ".join(f"{i:06d}" for i in sorted(indices)[:3])
            return shown + (f" and {total - 3} more" if total > 3 else "")

        whole = named & files[".npz"] & files[".json"]
        if len(whole) < count:
            # the first three missing are below len(whole) + 3
            missing = [i for i in range(min(count, len(whole) + 3)) if i not in whole]
            gone = count - len(whole)
            raise BadInputError(
                f"{self.folder}: its manifest names {count} clips, {gone} of them missing or "
                f"without labels (clips/{listed(missing, gone)}); generate the set again with "
                "emts synth into an empty folder"
            )
        if extra := (files[".npz"] | files[".json"]) - named:
            raise BadInputError(
                f"{self.folder}: holds {len(extra)} clips its manifest does not name "
                f"(clips/{listed(extra)}), left by another emts synth run; generate the set "
                "again into an empty folder"
            )

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, position: int) -> StoredClip:
        return self.load(self.indices[position])

    def _unreadable(self, path: Path, error: Exception | str) -> BadInputError:
        reason = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        return BadInputError(
            f"{path}: a corrupt or truncated clip file ({reason}); generate the set again with "
            "emts synth into an empty folder"
        )

    def labels(self, index: int) -> dict:
        path = self.folder / "clips" / f"{index:06d}.json"
        if path.exists() and not path.is_file():  # a FIFO or a device: reading may block
            raise self._unreadable(path, "not a regular file")
        try:
            labels = json.loads(path.read_text())
        except (OSError, ValueError) as error:  # ValueError: JSON and UTF-8 decoding errors
            raise self._unreadable(path, error) from None
        if not isinstance(labels, dict) or not isinstance(labels.get("frames"), list):
            raise self._unreadable(path, "no per-frame labels")
        return labels

    def load(self, index: int) -> StoredClip:
        path = self.folder / "clips" / f"{index:06d}.npz"
        if path.exists() and not path.is_file():  # a FIFO or a device: reading may block
            raise self._unreadable(path, "not a regular file")
        try:
            with np.load(path) as npz:
                frames = decode_frames(npz)
                difference = npz["difference"].astype(np.float32)
        # (a cut or damaged zip raises any of these, from zipfile, zlib or numpy's reader)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as error:
            raise self._unreadable(path, error) from None
        if any(frame is None for frame in frames):
            raise self._unreadable(path, "a frame's JPEG does not decode")
        images = [network_image(frame) for frame in frames]
        if difference.ndim != 3 or len(difference) != len(frames) or not frames:
            raise self._unreadable(path, f"{len(frames)} frames, D of shape {difference.shape}")
        if difference.shape[1:] != images[0].shape:
            raise self._unreadable(
                path, f"D of {difference.shape[1:]}, frames of {images[0].shape}"
            )
        if not np.isfinite(difference).all():
            raise self._unreadable(path, "D holds NaN or infinite values")
        channels = np.empty((len(frames), 3, *difference.shape[1:]), np.float32)
        for i, image in enumerate(images):
            channels[i, 0] = image
            channels[i, 2] = difference[i]
            channels[i, 1] = residual_from_difference(difference[i])
        return StoredClip(index, frames, channels, self.labels(index))
