"""The frames of the real-footage suite (``emts eval real``, :mod:`emts.eval.real`).

* **uav123-person12**, frames 1-201 (:func:`person12_frames`): a real RGB drone follow clip
  (one person walking across a sunlit plaza, 640x360). Every frame goes through Stages A-B as a
  user's video would (frame 1 has no motion channels yet; it is counted).
* **HIT-UAV**, real thermal stills as 4-frame pseudo-clips, last frame scored
  (:func:`hituav_frames`): each person cut out, the hole inpainted, walking 0.5-1.5 px/frame at
  640x512 in a random direction; the camera drifts at up to 4 px/frame. Variant ``persons``:
  only persons move; ``vehicles``: the image's vehicles also drive (0.5-3 px/frame) as
  unlabeled movers.

Each scored frame is an :class:`EvalFrame`: Stage B's channels (at every network size asked
for), the working frames and the truth, in WORKING pixels (640x512).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from emts.config import NETWORK_SIZE, WORKING_SIZE, ChannelConfig
from emts.errors import BadInputError
from emts.front_end import MotionFrontEnd, key_config
from emts.geometry import Frame, FrameGeometry
from emts.stages.appearance import AppearanceView
from emts.stages.b_channels import MotionChannels, network_content
from emts.synth.camera import REFERENCE_WIDTH, CameraMotionConfig
from emts.synth.plates import read_hituav
from emts.synth.tier2 import pseudo_clip

PERSON12_FRAMES = 201  # frames 1-201 are labelled
PERSON_SPEED = (0.5, 1.5)  # px/frame at 640x512
VEHICLE_SPEED = (0.5, 3.0)
CAMERA_DRIFT = 4.0  # px/frame at 640x512
HITUAV_VARIANTS = {"persons": "only persons move", "vehicles": "persons and vehicles move"}


@dataclass
class EvalFrame:
    """One scored frame: Stage B's channels, the working frames and the truth (WORKING px)."""

    name: str
    channels: np.ndarray  # (3, H, W) float32 at the geometry's network size
    working: np.ndarray  # uint8 640x512, frame t
    previous: np.ndarray | None  # uint8 640x512, frame t-1 (None on a stream's first frame)
    motion: np.ndarray  # 2x3 Stage A estimate, WORKING, t-1 -> t
    valid: np.ndarray  # uint8 640x512 mask of the letterbox content
    geometry: FrameGeometry
    gt: np.ndarray  # (m, 4) person boxes, WORKING px
    # Stage B at further network sizes (detectors trained at another size), same Stage A
    more_channels: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    motion_known: bool = True  # Stage A estimated M_t (not the identity of a first frame)
    # a clip's earlier frames with a known motion, oldest first, for Stage C's temporal mode:
    # ({network size: channels}, M_t WORKING); None: the frame continues the previous one's
    # stream (uav123-person12)
    history: list[tuple[dict[tuple[int, int], np.ndarray], np.ndarray]] | None = None
    # the colour input frame, where there is one (Stage C's box fit: emts.stages.c_detect.boxfit)
    colour: AppearanceView | None = None
    # the key (emts.front_end.channel_key) of ``channels``: None, the geometry's network size
    key: tuple | None = None

    def channels_at(self, key: tuple) -> np.ndarray:
        """Stage B's channels of ``key``: a network size (w, h) with the paper's warp, or
        (w, h, warp) (:func:`emts.front_end.channel_key`)."""
        key = tuple(key)
        if key == (self.key or self.geometry.network_size):
            return self.channels
        return self.more_channels[key]

    def geometry_at(self, size: tuple) -> FrameGeometry:
        """The frame's geometry with a NETWORK frame of ``size`` (a channel key's first two)."""
        size = tuple(size[:2])
        if size == self.geometry.network_size:
            return self.geometry
        return _geometry(self.geometry.input_size, size)

    @classmethod
    def of(
        cls,
        name: str,
        result,
        previous: np.ndarray | None,
        gt: np.ndarray,
        more: MoreSizes | None = None,
        key: tuple | None = None,
    ) -> EvalFrame:
        """The frame of a :class:`emts.front_end.FrontEndResult` (Stages A and B's output,
        channels of ``key``); ``more`` adds Stage B at further network sizes and warps."""
        return cls(
            name=name,
            channels=result.channels,
            working=result.working,
            previous=previous,
            motion=np.asarray(result.motion.matrix),
            valid=result.geometry.input_to_working.content_mask(),
            geometry=result.geometry,
            gt=gt,
            more_channels=more(result) if more is not None else {},
            motion_known=result.motion.method != "identity",
            key=key,
        )


class MoreSizes:
    """Stage B at further network sizes and warps (channel keys, :func:`_front_end`), on one
    stream's Stage A results (so that detectors trained at different sizes are compared on
    the same camera-motion estimates)."""

    def __init__(self, keys, ego_compensation: bool = True) -> None:
        self.stages = {
            tuple(key): MotionChannels(_stage_b(key, ego_compensation), network_size=key[:2])
            for key in keys
        }

    def __call__(self, result) -> dict[tuple, np.ndarray]:
        out = {}
        for key, stage in self.stages.items():
            content = network_content(_geometry(result.geometry.input_size, key[:2]))
            out[key] = stage.update(result.working, result.motion, content)
        return out


def _stage_b(key: tuple, ego_compensation: bool = True) -> ChannelConfig:
    """Stage B's parameters of a channel key (:func:`emts.front_end.key_config`); without
    ``ego_compensation`` Stage B ignores Stage A's motion (the "w/o ego" ablation)."""
    config = key_config(key)
    if ego_compensation:
        return config
    return dataclasses.replace(config, ego_compensation=False)


def _front_end(key: tuple, ego_compensation: bool = True) -> MotionFrontEnd:
    """Stages A and B making the channels of ``key`` (:func:`emts.front_end.channel_key`)."""
    return MotionFrontEnd(channel_config=_stage_b(key, ego_compensation), network_size=key[:2])


@functools.lru_cache(maxsize=16)
def _geometry(input_size: tuple[int, int], network_size: tuple[int, int]) -> FrameGeometry:
    return FrameGeometry(input_size, network_size)


def _sizes(network_sizes) -> tuple[tuple, list[tuple]]:
    """(the first, the others) of a list of network sizes or channel keys (default: the
    paper's size)."""
    sizes = list(dict.fromkeys(tuple(s) for s in network_sizes or [NETWORK_SIZE]))
    return sizes[0], sizes[1:]


def person12_frames(
    root: str | Path,
    frames: int = PERSON12_FRAMES,
    network_sizes=None,
    ego_compensation: bool = True,
) -> Iterator[EvalFrame]:
    """Frames 1..``frames`` of uav123-person12 through Stages A-B, with their labels
    (Stage B at every size of ``network_sizes``; default: the paper's; without
    ``ego_compensation``, Stage B ignores Stage A's motion)."""
    root = Path(root)
    labels_path = root / "groundtruth_rect.txt"
    if not labels_path.is_file():
        raise BadInputError(
            f"{root}: no groundtruth_rect.txt (expected the uav123-person12 folder)"
        )
    try:
        labels = np.loadtxt(labels_path, delimiter=",", ndmin=2)[:frames]
    except ValueError as error:
        raise BadInputError(f"{labels_path}: unreadable labels ({error})") from None
    if labels.shape[1] != 4 or len(labels) < frames:
        raise BadInputError(f"{labels_path}: expected {frames} lines of x,y,w,h")
    first, others = _sizes(network_sizes)
    front = _front_end(first, ego_compensation)
    more = MoreSizes(others, ego_compensation) if others else None
    previous = None
    for i in range(frames):
        path = root / "frames" / f"{i + 1:06d}.jpg"
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise BadInputError(f"{path}: missing or unreadable")
        result = front.step(image)
        gt = result.geometry.boxes(labels[i : i + 1], Frame.INPUT, Frame.WORKING)
        frame = EvalFrame.of(f"{i + 1:06d}", result, previous, gt, more, first)
        frame.colour = AppearanceView(image, result.geometry.matrix(Frame.WORKING, Frame.INPUT))
        yield frame
        previous = result.working


def eval_camera() -> CameraMotionConfig:
    """Constant drift (set per clip, up to CAMERA_DRIFT px/frame at 640 px), no gusts."""
    return CameraMotionConfig(
        max_drift=CAMERA_DRIFT * REFERENCE_WIDTH / WORKING_SIZE[0], smoothness=1.0, gust_rate=0.0
    )


def hituav_frames(
    root: str | Path,
    split: str,
    variant: str,
    seed: int = 0,
    images: int | None = None,
    network_sizes=None,
    ego_compensation: bool = True,
) -> Iterator[EvalFrame]:
    """HIT-UAV stills of ``split`` as 4-frame pseudo-clips; the last frame of each (Stage B at
    every size of ``network_sizes``; default: the paper's; without ``ego_compensation``,
    Stage B ignores Stage A's motion)."""
    if variant not in HITUAV_VARIANTS:
        raise BadInputError(f"unknown HIT-UAV variant {variant!r}")
    root = Path(root)
    entries = read_hituav(root, split)[:images]
    camera = eval_camera()
    first, others = _sizes(network_sizes)
    for number, (name, entry) in enumerate(entries):
        still = cv2.imread(str(root / split / name), cv2.IMREAD_GRAYSCALE)
        if still is None:
            raise BadInputError(f"{root / split / name}: missing or unreadable")
        rng = np.random.default_rng([seed, number])
        clip = pseudo_clip(
            still,
            entry["persons"],
            rng,
            frames=4,
            vehicle_boxes=entry["vehicles"] if variant == "vehicles" else [],
            zoom=False,
            person_speed=PERSON_SPEED,
            vehicle_speed=VEHICLE_SPEED,
            random_heading=True,
            camera=camera,
            drift=CAMERA_DRIFT,
        )
        front = _front_end(first, ego_compensation)
        more = MoreSizes(others, ego_compensation) if others else None
        results = [front.step(frame) for frame in clip.frames]
        history = []
        for result in results[:-1]:
            channels = {first: result.channels, **(more(result) if more is not None else {})}
            if result.motion.method != "identity":
                history.append((channels, np.asarray(result.motion.matrix)))
        last = results[-1]
        gt = last.geometry.boxes(clip.person_boxes[-1], Frame.INPUT, Frame.WORKING)
        frame = EvalFrame.of(name, last, results[-2].working, gt.reshape(-1, 4), more, first)
        frame.history = history
        yield frame
