"""Pictures for people: the channel panel video, and later annotated tracks and timelines."""

from __future__ import annotations

import cv2
import numpy as np

from emts.errors import EmtsError

# Display gains: R and D are small in practice (a few percent of full scale), so they are
# amplified for viewing; values beyond the gain saturate.
RESIDUAL_DISPLAY_GAIN = 4.0
DIFFERENCE_DISPLAY_GAIN = 4.0
_PANEL_SCALE = 2  # each 256x192 channel is shown at 512x384


def _diverging(signed: np.ndarray) -> np.ndarray:
    """Signed values in [-1, 1] -> BGR: blue for negative, black at 0, red/yellow for positive."""
    positive = np.clip(signed, 0, 1)
    negative = np.clip(-signed, 0, 1)
    bgr = np.stack([negative, np.maximum(positive, negative) ** 2 * 0.6, positive], axis=-1)
    return (bgr * 255).astype(np.uint8)


def channel_panel(channels: np.ndarray, caption: str | None = None) -> np.ndarray:
    """Side-by-side L | R | D picture (BGR uint8) of a (3, 192, 256) channel stack.

    L is gray, R is shown with the inferno colour map (x4 gain), D with a diverging map
    (x4 gain: red where the scene got brighter than the warped previous frame, blue darker).
    """
    luminance, residual, difference = channels
    panels = [
        cv2.cvtColor((np.clip(luminance, 0, 1) * 255).astype(np.uint8), cv2.COLOR_GRAY2BGR),
        cv2.applyColorMap(
            (np.clip(residual * RESIDUAL_DISPLAY_GAIN, 0, 1) * 255).astype(np.uint8),
            cv2.COLORMAP_INFERNO,
        ),
        _diverging(np.clip(difference * DIFFERENCE_DISPLAY_GAIN, -1, 1)),
    ]
    labels = ("L", f"R x{RESIDUAL_DISPLAY_GAIN:g}", f"D x{DIFFERENCE_DISPLAY_GAIN:g}")
    scaled = []
    for panel, label in zip(panels, labels, strict=True):
        big = cv2.resize(
            panel, None, fx=_PANEL_SCALE, fy=_PANEL_SCALE, interpolation=cv2.INTER_NEAREST
        )
        _label(big, label, (8, 22))
        scaled.append(big)
    picture = np.hstack(scaled)
    if caption:
        _label(picture, caption, (8, picture.shape[0] - 10))
    return picture


def _label(image: np.ndarray, text: str, origin: tuple[int, int]) -> None:
    cv2.putText(image, text, origin, cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(image, text, origin, cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 1, cv2.LINE_AA)


VERIFIED_COLOUR = (60, 220, 60)  # green: verified lock
LOCKED_COLOUR = (60, 220, 220)  # yellow: locked, not (yet) verified
REACQUIRE_COLOUR = (0, 140, 255)  # orange: reacquisition (coasting)
DETECTION_COLOUR = (160, 160, 160)
_INSET_SCALE = 0.75


def annotate(frame: np.ndarray, result, index: int | None = None) -> np.ndarray:
    """BGR picture of one :class:`emts.pipeline.FrameResult` on its input frame (captioned
    with ``index``, the source's frame number, if given, else the pipeline's).

    Raw detections are drawn faintly, the target with a crosshair: green when the verifier
    has accepted the lock, yellow while locked but unverified, orange while reacquiring.
    A small inset shows the R channel.
    """
    if frame.dtype != np.uint8:
        frame = cv2.normalize(frame, None, 0, 255, cv2.NORM_MINMAX).astype(np.uint8)
    image = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR) if frame.ndim == 2 else frame[:, :, :3].copy()
    if image.ndim == 3 and image.shape[2] == 1:
        image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    scale = max(image.shape[1] / 640, 1.0)
    for box, _score in result.detections:
        x, y, w, h = (int(round(v)) for v in box)
        cv2.rectangle(image, (x, y), (x + w, y + h), DETECTION_COLOUR, 1)
    if result.target is not None:
        colour = (
            REACQUIRE_COLOUR
            if result.mode == "reacquire"
            else (VERIFIED_COLOUR if result.verified else LOCKED_COLOUR)
        )
        x, y, w, h = result.target.box
        thickness = max(1, int(2 * scale))
        cv2.rectangle(image, (int(x), int(y)), (int(x + w), int(y + h)), colour, thickness)
        cx, cy, arm = int(x + w / 2), int(y + h / 2), int(max(w, h) * 0.8 + 6)
        cv2.line(image, (cx - arm, cy), (cx - arm // 3, cy), colour, thickness)
        cv2.line(image, (cx + arm // 3, cy), (cx + arm, cy), colour, thickness)
        cv2.line(image, (cx, cy - arm), (cx, cy - arm // 3), colour, thickness)
        cv2.line(image, (cx, cy + arm // 3), (cx, cy + arm), colour, thickness)
        p = result.target.p_human
        label = f"{result.mode}" + ("" if p is None else f" P(human) {p:.2f}")
        _label(image, label, (int(x), max(int(y) - 6, 14)))
    inset = cv2.applyColorMap(
        (np.clip(result.channels[1] * RESIDUAL_DISPLAY_GAIN, 0, 1) * 255).astype(np.uint8),
        cv2.COLORMAP_INFERNO,
    )
    inset = cv2.resize(inset, None, fx=_INSET_SCALE * scale, fy=_INSET_SCALE * scale)
    ih, iw = inset.shape[:2]
    if ih < image.shape[0] and iw < image.shape[1]:
        image[:ih, -iw:] = inset
        _label(image, "R", (image.shape[1] - iw + 4, 16))
    number = result.index if index is None else index
    _label(image, f"frame {number}  {result.mode}", (8, image.shape[0] - 10))
    return image


_MODE_COLOURS = {
    "search": (150, 150, 150),
    "reacquire": REACQUIRE_COLOUR,
    "locked": VERIFIED_COLOUR,
}


def _bar_colour(record: dict) -> tuple[int, int, int]:
    """The mode's colour; a lock the verifier has not accepted is yellow, as in the video."""
    target = record.get("target") or {}
    if record["mode"] == "locked" and target.get("verified") is False:
        return LOCKED_COLOUR
    return _MODE_COLOURS[record["mode"]]


def timeline(results: list[dict], path, title: str = "tracker mode per frame") -> bool:
    """PNG timeline (as the paper's Fig. 6): one coloured bar per frame for the mode (grey
    search, orange reacquire, green verified lock, yellow unverified lock) and the verifier's
    P(human) drawn above it.

    Returns:
        Whether the file was written (False: no writer for the suffix, or not writable).
    """
    n = max(len(results), 1)
    step = max(1, min(6, 1200 // n))
    width, height, strip = n * step + 80, 220, 40
    image = np.full((height, width, 3), 255, np.uint8)
    top = 40
    cv2.putText(image, title, (8, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 1, cv2.LINE_AA)
    for i, r in enumerate(results):
        x = 70 + i * step
        cv2.rectangle(
            image,
            (x, height - strip - 20),
            (x + step - 1, height - 20),
            _bar_colour(r),
            -1,
        )
    for label, y in (
        ("1.0", top),
        ("0.5", (top + height - strip - 30) // 2),
        ("0.0", height - strip - 30),
    ):
        cv2.putText(image, label, (30, y + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (0, 0, 0), 1)
        cv2.line(image, (65, y), (width - 5, y), (220, 220, 220), 1)
    cv2.putText(image, "P(human)", (2, top - 8), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (0, 0, 0), 1)
    cv2.putText(image, "mode", (20, height - 35), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (0, 0, 0), 1)
    span = height - strip - 30 - top
    previous = None
    for i, r in enumerate(results):
        p = None if r["target"] is None else r["target"].get("p_human")
        if p is None:
            previous = None
            continue
        point = (70 + i * step + step // 2, int(height - strip - 30 - p * span))
        if previous is not None:
            cv2.line(image, previous, point, (180, 100, 30), 1, cv2.LINE_AA)
        cv2.circle(image, point, 2, (180, 100, 30), -1)
        previous = point
    from emts.io import write_image

    try:
        write_image(path, image)
    except (cv2.error, EmtsError, OSError):  # no encoder for the suffix, or a failing disk
        return False
    return True


def channels_figure(
    channels: np.ndarray, heatmap: np.ndarray, detections, caption: str = ""
) -> np.ndarray:
    """The paper's Fig. 2 for one frame: L | R | D | heatmap | decoded detections on L.

    Args:
        channels: (3, 192, 256) ``[L, R, D]``.
        heatmap: (24, 32) detector heatmap in [0, 1].
        detections: decoded :class:`emts.stages.c_detect.detector.Detection` (NETWORK px).
    """
    panel = channel_panel(channels)
    size = (panel.shape[1] // 3, panel.shape[0])
    heat = cv2.applyColorMap((np.clip(heatmap, 0, 1) * 255).astype(np.uint8), cv2.COLORMAP_VIRIDIS)
    heat = cv2.resize(heat, size, interpolation=cv2.INTER_NEAREST)
    _label(heat, "heatmap", (8, 22))
    decoded = cv2.cvtColor((np.clip(channels[0], 0, 1) * 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)
    decoded = cv2.resize(decoded, size, interpolation=cv2.INTER_LINEAR)
    scale = size[0] / channels.shape[2]
    for d in detections:
        x, y, w, h = (d.box * scale).astype(int)
        cv2.rectangle(decoded, (x, y), (x + w, y + h), VERIFIED_COLOUR, 2)
        _label(decoded, f"{d.score:.2f}", (x, max(y - 4, 12)))
    _label(decoded, "decoded", (8, 22))
    figure = np.hstack([panel, heat, decoded])
    if caption:
        _label(figure, caption, (8, figure.shape[0] - 10))
    return figure
