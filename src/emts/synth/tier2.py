"""Tier 2: 4-frame pseudo-video from a still image with person boxes, made on the fly (§4.2).

The whole image follows a smooth random similarity trajectory (the drone), while each person
is cut out (hole inpainted) and follows its *own* trajectory with an oscillating lower-body
shear (a crude gait proxy). A zoom re-crop brings a chosen person to a random target height,
log-uniform 28-130 frame px, so close-range scales are covered too. The frames then pass
through the simulated sensor (noise, JPEG); Stage A/B are run on them by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from emts.synth.camera import CameraMotionConfig, CameraPath, relative_motion
from emts.synth.common import FRAME_SIZE, log_uniform
from emts.synth.phenomena import SensorModel, make_noise_bank
from emts.synth.plates import remove_persons
from emts.synth.still_clip import cut_out_movers, map_boxes

TIER2_FRAMES = 4  # §4.2
ZOOM_TARGET_HEIGHT = (28.0, 130.0)  # frame px, log-uniform (§4.2)
ZOOM_PROBABILITY = 0.5
_noise_bank: np.ndarray | None = None


@dataclass
class PseudoClip:
    frames: list[np.ndarray]  # decoded uint8 640x512
    person_boxes: list[np.ndarray]  # per frame (n, 4) [x, y, w, h] frame px; row i = person i
    motions: list[np.ndarray]  # true camera motion per frame (identity for frame 0)


def pseudo_clip(
    image: np.ndarray,
    person_boxes: list[list[float]],
    rng: np.random.Generator,
    frames: int = TIER2_FRAMES,
    vehicle_boxes: list[list[float]] | None = None,
    zoom: bool = True,
    person_speed: tuple[float, float] = (0.2, 1.5),
    vehicle_speed: tuple[float, float] = (0.5, 4.0),
    random_heading: bool = False,
    camera: CameraMotionConfig | None = None,
    drift: float | None = None,
) -> PseudoClip:
    """Make one pseudo-video clip from a gray uint8 still and its person boxes.

    Args:
        image: gray uint8 still.
        person_boxes: ``[x, y, w, h]`` persons; they move and are labeled.
        rng: random generator.
        frames: clip length.
        vehicle_boxes: vehicles to cut out and move rigidly as *unlabeled* movers (hard
            negatives); None or empty leaves them parked in the plate.
        zoom: allow the zoom re-crop and a slight zoom-in; False keeps the still's own scale
            (the evaluation protocol of §6.5).
        person_speed, vehicle_speed: ranges of the movers' speeds, still px/frame.
        random_heading: movers head in uniformly random directions (else roughly towards
            the still's centre).
        camera: camera motion statistics (default :class:`CameraMotionConfig`).
        drift: if given, the camera starts drifting at a speed uniform in [0, drift] frame
            px/frame in a random direction (the smooth random path only starts from rest).
    """
    global _noise_bank
    if _noise_bank is None:
        _noise_bank = make_noise_bank(np.random.default_rng(7))
    vehicle_boxes = vehicle_boxes or []
    walkers = cut_out_movers(
        image, person_boxes, rng, speed=person_speed, random_heading=random_heading
    )
    vehicles = cut_out_movers(
        image,
        vehicle_boxes,
        rng,
        speed=vehicle_speed,
        articulated=False,
        random_heading=random_heading,
    )
    background = remove_persons(image, list(person_boxes) + list(vehicle_boxes)).astype(np.float32)
    scale = float(rng.uniform(1.0, 1.25)) if zoom else 1.0
    path = CameraPath(
        (image.shape[1], image.shape[0]),
        FRAME_SIZE,
        camera or CameraMotionConfig(),
        rng,
        zoom=scale,
    )
    if zoom and walkers and rng.random() < ZOOM_PROBABILITY:
        chosen = walkers[int(rng.integers(len(walkers)))]
        target = log_uniform(rng, *ZOOM_TARGET_HEIGHT)
        path.zoom = float(np.clip(target / max(chosen.box_size[1], 1.0), 0.5, 8.0))
        path._rest = (path.angle, path.zoom)
        centre = chosen.position + chosen.box_offset + chosen.box_size / 2
        jitter = rng.uniform(-0.35, 0.35, 2) * np.array(FRAME_SIZE) / path.zoom
        path.centre = centre + jitter
    path.target = path.centre.copy()
    if drift is not None:
        angle = rng.uniform(-np.pi, np.pi)
        path.set_drift(rng.uniform(0.0, drift) * np.array([np.cos(angle), np.sin(angle)]))
    sensor = SensorModel.random(rng)
    out = PseudoClip([], [], [])
    previous = path.pose()
    for t in range(frames):
        pose = previous if t == 0 else path.step()
        plate = background.copy()
        for vehicle in vehicles:
            vehicle.draw(plate, t)
        plate_boxes = [w.draw(plate, t) for w in walkers]
        frame = cv2.warpAffine(
            plate, pose[:2], FRAME_SIZE, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
        )
        motion = relative_motion(previous, pose)
        decoded, _ = sensor.apply(frame, motion, rng, _noise_bank)
        out.frames.append(decoded)
        out.person_boxes.append(map_boxes(plate_boxes, pose))
        out.motions.append(motion)
        previous = pose
    return out
