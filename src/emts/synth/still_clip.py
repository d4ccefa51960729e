"""A short gusty clip from one still aerial image: the demo's and the benchmark's input.

The still is the plate; a hovering camera (:class:`~emts.synth.camera.CameraPath`) with wind
gusts looks at it. Optionally its labeled persons are cut out (the hole inpainted) and walk
across the plate on their own paths with a swinging lower body (the §4.2 gait proxy), so
that R shows them while the ego-compensated background stays dark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources

import cv2
import numpy as np

from emts.synth.camera import CameraMotionConfig, CameraPath, relative_motion
from emts.synth.plates import remove_persons

DEMO_STILL = "hituav_0_60_40_0_06500"
_WALK_SPEED = (0.6, 1.2)  # plate px/frame: 1.4 m/s at 30 fps for a ~30 px (1.7 m) person
_GAIT_HZ = (1.5, 2.5)  # §4.1 gait frequency
_FPS = 30.0
_SHEAR = 0.35  # peak lower-body shear (x offset per px of leg length)
_SENSOR_NOISE = 1.5  # gray levels, Gaussian


@dataclass
class StillClip:
    """Frames with their ground truth.

    Attributes:
        frames: uint8 gray frames (h, w).
        motions: true ``M_t`` (2x3, frame t-1 -> t) per frame; identity for frame 0.
        person_boxes: per frame, an (n, 4) array of ``[x, y, w, h]`` boxes of moving persons.
    """

    frames: list[np.ndarray] = field(default_factory=list)
    motions: list[np.ndarray] = field(default_factory=list)
    person_boxes: list[np.ndarray] = field(default_factory=list)


def load_demo_still(name: str = DEMO_STILL) -> tuple[np.ndarray, list[list[float]]]:
    """A packaged HIT-UAV still (gray uint8) and its person boxes (CC BY 4.0, see its JSON)."""
    folder = resources.files("emts") / "data"
    data = np.frombuffer((folder / f"{name}.jpg").read_bytes(), np.uint8)
    image = cv2.imdecode(data, cv2.IMREAD_GRAYSCALE)
    meta = json.loads((folder / f"{name}.json").read_text())
    boxes = [b["bbox"] for b in meta["boxes_xywh"] if b["category"] == "Person"]
    return image, boxes


@dataclass
class CutOut:
    """An object cut out of a still that moves over the plate on its own path."""

    sprite: np.ndarray  # float32 patch
    alpha: np.ndarray  # float32 0..1 feathered
    position: np.ndarray  # plate px of the sprite's top-left
    velocity: np.ndarray  # plate px/frame
    gait_hz: float
    phase: float
    box_offset: np.ndarray  # (x, y) of the person box inside the sprite
    box_size: np.ndarray  # (w, h)
    shear: float = _SHEAR  # peak lower-body shear; 0 for a rigid mover (vehicle)

    def draw(self, plate: np.ndarray, t: int) -> np.ndarray:
        """Composite onto ``plate`` (float32, modified) and return the plate-pixel box."""
        h, w = self.sprite.shape
        swing = self.shear * np.sin(2 * np.pi * self.gait_hz * t / _FPS + self.phase)
        hip = self.box_offset[1] + 0.5 * self.box_size[1]
        # Lower body shears about the hip line; upper body stays.
        ys = np.arange(h, dtype=np.float32)[:, None]
        map_x = np.arange(w, dtype=np.float32)[None, :] - np.maximum(ys - hip, 0) * swing
        map_x = np.ascontiguousarray(np.broadcast_to(map_x, (h, w)), dtype=np.float32)
        map_y = np.ascontiguousarray(np.broadcast_to(ys, (h, w)), dtype=np.float32)
        sprite = cv2.remap(
            self.sprite, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )
        alpha = cv2.remap(self.alpha, map_x, map_y, cv2.INTER_LINEAR, borderValue=0)
        top_left = self.position + self.velocity * t
        x0, y0 = np.floor(top_left).astype(int)
        frac = top_left - (x0, y0)
        shift = np.float32([[1, 0, frac[0]], [0, 1, frac[1]]])
        sprite = cv2.warpAffine(sprite, shift, (w + 1, h + 1), borderMode=cv2.BORDER_REPLICATE)
        alpha = cv2.warpAffine(alpha, shift, (w + 1, h + 1))
        ph, pw = plate.shape
        xa, ya, xb, yb = max(x0, 0), max(y0, 0), min(x0 + w + 1, pw), min(y0 + h + 1, ph)
        if xa < xb and ya < yb:
            region = plate[ya:yb, xa:xb]
            a = alpha[ya - y0 : yb - y0, xa - x0 : xb - x0]
            s = sprite[ya - y0 : yb - y0, xa - x0 : xb - x0]
            region[:] = region * (1 - a) + s * a
        return np.array([*(top_left + self.box_offset), *self.box_size])


def cut_out_movers(
    plate: np.ndarray,
    boxes: list[list[float]],
    rng: np.random.Generator,
    speed: tuple[float, float] = _WALK_SPEED,
    articulated: bool = True,
    random_heading: bool = False,
) -> list[CutOut]:
    """Make movers of the ``[x, y, w, h]`` boxes of ``plate`` (which is not modified; inpaint
    the originals away with :func:`~emts.synth.plates.remove_persons`).

    Articulated movers (persons) swing their lower body at a gait frequency; rigid ones
    (vehicles) only translate. Movers head towards a point near the plate centre (so long
    paths stay on the plate), or in a uniformly random direction with ``random_heading``.
    """
    margin = 4
    movers = []
    for x, y, w, h in boxes:
        x0, y0 = int(max(x - margin, 0)), int(max(y - margin, 0))
        x1, y1 = int(min(x + w + margin, plate.shape[1])), int(min(y + h + margin, plate.shape[0]))
        if x1 - x0 < 2 or y1 - y0 < 2:
            continue
        sprite = plate[y0:y1, x0:x1].astype(np.float32)
        alpha = np.zeros(sprite.shape, np.float32)
        centre = ((x + w / 2 - x0), (y + h / 2 - y0))
        if articulated:
            cv2.ellipse(alpha, (centre, (w * 1.1, h * 1.05), 0), 1.0, -1)
        else:
            alpha[int(y - y0) : int(y - y0 + h), int(x - x0) : int(x - x0 + w)] = 1.0
        alpha = cv2.GaussianBlur(alpha, (5, 5), 1.2)
        # Head towards a point near the plate centre, so the path stays on the plate.
        goal = np.array([plate.shape[1], plate.shape[0]]) * rng.uniform(0.35, 0.65, 2)
        heading = np.arctan2(goal[1] - (y + h / 2), goal[0] - (x + w / 2)) + rng.normal(0, 0.4)
        if random_heading:
            heading = rng.uniform(-np.pi, np.pi)
        pace = rng.uniform(*speed)
        movers.append(
            CutOut(
                sprite=sprite,
                alpha=alpha,
                position=np.array([x0, y0], float),
                velocity=pace * np.array([np.cos(heading), np.sin(heading)]),
                gait_hz=float(rng.uniform(*_GAIT_HZ)),
                phase=float(rng.uniform(0, 2 * np.pi)),
                box_offset=np.array([x - x0, y - y0], float),
                box_size=np.array([w, h], float),
                shear=_SHEAR if articulated else 0.0,
            )
        )
    return movers


def gusty_clip(
    n_frames: int,
    seed: int = 0,
    image: np.ndarray | None = None,
    person_boxes: list[list[float]] | None = None,
    frame_size: tuple[int, int] = (640, 512),
    zoom: float = 1.15,
    moving_persons: bool = True,
    camera: CameraMotionConfig | None = None,
) -> StillClip:
    """Render ``n_frames`` of a hovering, gust-shaken camera over a still.

    Args:
        n_frames: number of frames.
        seed: random seed; the clip is a deterministic function of its arguments.
        image: gray uint8 plate; default the packaged HIT-UAV still.
        person_boxes: ``[x, y, w, h]`` person boxes of the plate (default: the still's own).
        frame_size: (w, h) of the frames.
        zoom: frame px per plate px (>1 keeps the view inside the plate most of the time).
        moving_persons: cut the persons out and make them walk; False keeps the still as is.
        camera: camera motion statistics.
    """
    rng = np.random.default_rng(seed)
    if image is None:
        image, default_boxes = load_demo_still()
        person_boxes = default_boxes if person_boxes is None else person_boxes
    person_boxes = person_boxes or []
    walkers = cut_out_movers(image, person_boxes, rng) if moving_persons else []
    background = remove_persons(image, person_boxes) if moving_persons else image
    background = background.astype(np.float32)
    path = CameraPath((image.shape[1], image.shape[0]), frame_size, camera, rng, zoom=zoom)
    clip = StillClip()
    previous_pose = path.pose()
    for t in range(n_frames):
        pose = previous_pose if t == 0 else path.step()
        plate = background.copy()
        plate_boxes = [walker.draw(plate, t) for walker in walkers]
        if plate_boxes:  # follow-me: the drone keeps the first person near the frame centre
            path.target = plate_boxes[0][:2] + plate_boxes[0][2:] / 2
        frame = cv2.warpAffine(
            plate, pose[:2], frame_size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
        )
        frame += rng.normal(0.0, _SENSOR_NOISE, frame.shape).astype(np.float32)
        clip.frames.append(np.clip(frame, 0, 255).astype(np.uint8))
        clip.motions.append(relative_motion(previous_pose, pose))
        clip.person_boxes.append(map_boxes(plate_boxes, pose))
        previous_pose = pose
    return clip


def map_boxes(boxes: list[np.ndarray], pose: np.ndarray) -> np.ndarray:
    """Axis-aligned bounds of plate boxes seen through ``pose``."""
    out = np.zeros((len(boxes), 4))
    for i, (x, y, w, h) in enumerate(boxes):
        corners = np.array([[x, y], [x + w, y], [x, y + h], [x + w, y + h]]) - 0.5
        mapped = corners @ pose[:2, :2].T + pose[:2, 2] + 0.5
        lo, hi = mapped.min(axis=0), mapped.max(axis=0)
        out[i] = [*lo, *(hi - lo)]
    return out
