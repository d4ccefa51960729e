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


def _inferno(values: np.ndarray) -> np.ndarray:
    """Values in [0, 1] -> BGR with the inferno colour map."""
    return cv2.applyColorMap((np.clip(values, 0, 1) * 255).astype(np.uint8), cv2.COLORMAP_INFERNO)


def display_gains(channels: np.ndarray, percentile: float = 99.5) -> tuple[float, float]:
    """Gains that put R's and |D|'s ``percentile`` at full scale (a still picture's own
    scale: on a thermal frame R is a few thousandths and a fixed gain shows black)."""
    residual = float(np.percentile(channels[1], percentile))
    difference = float(np.percentile(np.abs(channels[2]), percentile))
    return 1.0 / max(residual, 1e-4), 1.0 / max(difference, 1e-4)


def channel_panel(
    channels: np.ndarray,
    caption: str | None = None,
    residual_gain: float = RESIDUAL_DISPLAY_GAIN,
    difference_gain: float = DIFFERENCE_DISPLAY_GAIN,
) -> np.ndarray:
    """Side-by-side L | R | D picture (BGR uint8) of a (3, 192, 256) channel stack.

    L is gray, R is shown with the inferno colour map (x ``residual_gain``), D with a
    diverging map (x ``difference_gain``: red where the scene got brighter than the warped
    previous frame, blue darker). The fixed default gains keep a video's frames comparable.
    """
    luminance, residual, difference = channels
    panels = [
        cv2.cvtColor((np.clip(luminance, 0, 1) * 255).astype(np.uint8), cv2.COLOR_GRAY2BGR),
        _inferno(residual * residual_gain),
        _diverging(np.clip(difference * difference_gain, -1, 1)),
    ]
    labels = ("L", f"R x{residual_gain:.3g}", f"D x{difference_gain:.3g}")
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


# the 8 one-pixel shifts that outline a label (a thicker stroke would also space the glyphs
# wider, and its last letter showed beside the text as a ghost: "reacquiree")
_OUTLINE = [(dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy]


def _label(image: np.ndarray, text: str, origin: tuple[int, int], scale: float = 0.6) -> None:
    """White text with a black outline of the same glyphs, readable on any background."""
    x, y = origin
    font = cv2.FONT_HERSHEY_SIMPLEX
    for dx, dy in _OUTLINE:
        cv2.putText(image, text, (x + dx, y + dy), font, scale, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.putText(image, text, origin, font, scale, (255, 255, 255), 1, cv2.LINE_AA)


VERIFIED_COLOUR = (60, 220, 60)  # green: verified lock
LOCKED_COLOUR = (60, 220, 220)  # yellow: locked, not (yet) verified
REACQUIRE_COLOUR = (0, 140, 255)  # orange: reacquisition (coasting)
DETECTION_COLOUR = (160, 160, 160)
_INSET_WIDTH = 0.2  # the R inset's width, a share of the picture's: small, off the target
_INSET_MARGIN = 24  # px kept between the inset and the target's box (its label sits above)


def annotate(frame: np.ndarray, result, index: int | None = None) -> np.ndarray:
    """BGR picture of one :class:`emts.pipeline.FrameResult` on its input frame (captioned
    with ``index``, the source's frame number, if given, else the pipeline's).

    Raw detections are drawn faintly, the target with a crosshair: green when the verifier
    has accepted the lock, yellow while locked but unverified, orange while reacquiring.
    A small inset shows the R channel in a corner away from the target, and not at all on
    a frame where every corner would cover it: nothing drawn hides the person.
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
        # above the box, or below it where the image's top edge leaves no room
        _label(image, label, (int(x), int(y) - 6 if y >= 20 else int(y + h) + 18))
    _inset(image, result)
    number = result.index if index is None else index
    _label(image, f"frame {number}  {result.mode}", (8, image.shape[0] - 10))
    return image


def inset_corner(
    image_size: tuple[int, int], inset_size: tuple[int, int], target_box=None
) -> tuple[int, int] | None:
    """Top-left corner (x, y) for an inset of ``inset_size`` (w, h) in a picture of
    ``image_size`` (w, h): the first of top right, top left, bottom right whose rectangle stays
    :data:`_INSET_MARGIN` px off ``target_box`` ([x, y, w, h], None: no target); None where
    each would come that close (bottom left holds the frame caption)."""
    width, height = image_size
    iw, ih = inset_size
    if iw >= width or ih >= height:
        return None
    corners = [(width - iw, 0), (0, 0), (width - iw, height - ih - 24)]
    if target_box is None:
        return corners[0]
    x, y, w, h = (float(v) for v in target_box)
    m = _INSET_MARGIN
    for cx, cy in corners:
        apart = cx >= x + w + m or cx + iw <= x - m or cy >= y + h + m or cy + ih <= y - m
        if apart:
            return cx, cy
    return None


def _inset(image: np.ndarray, result) -> None:
    residual = result.channels[1]
    iw = max(int(round(_INSET_WIDTH * image.shape[1])), 64)
    ih = max(int(round(iw * residual.shape[0] / residual.shape[1])), 1)
    box = None if result.target is None else result.target.box
    corner = inset_corner((image.shape[1], image.shape[0]), (iw, ih), box)
    if corner is None:
        return
    inset = cv2.applyColorMap(
        (np.clip(residual * RESIDUAL_DISPLAY_GAIN, 0, 1) * 255).astype(np.uint8),
        cv2.COLORMAP_INFERNO,
    )
    x, y = corner
    image[y : y + ih, x : x + iw] = cv2.resize(inset, (iw, ih), interpolation=cv2.INTER_AREA)
    cv2.rectangle(image, (x, y), (x + iw - 1, y + ih - 1), (255, 255, 255), 1)
    _label(image, "R", (x + 4, y + 16), 0.5)


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


_EVENT_MARKS = {"lock": "L", "lost": "x", "relock": "R", "dropped": "D", "unlock": "U"}
_P_COLOUR = (180, 100, 30)  # the verifier's P(human) line


def _text(image, text, origin, scale=0.4, colour=(0, 0, 0)) -> None:
    cv2.putText(image, text, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, colour, 1, cv2.LINE_AA)


def _frame_ticks(first: int, last: int, target: int = 10) -> list[int]:
    """Round frame numbers from ``first`` to ``last``, about ``target`` of them."""
    span = max(last - first, 1)
    raw = span / target
    magnitude = 10 ** int(np.floor(np.log10(raw))) if raw >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return list(range((first + step - 1) // step * step, last + 1, step))


def timeline(results: list[dict], path, title: str = "tracker mode per frame") -> bool:
    """PNG timeline (as the paper's Fig. 6): the verifier's P(human) over a strip with one
    coloured bar per frame for the mode (grey search, orange reacquire, green verified lock,
    yellow unverified lock), the events marked on it (L lock, x lost, R relock, D dropped,
    U unlock), a frame axis and a legend.

    Returns:
        Whether the file was written (False: no writer for the suffix, or not writable).
    """
    n = max(len(results), 1)
    step = max(1, min(6, 1200 // n))
    left = 70
    width = max(n * step + left + 20, 620)
    top, plot_bottom = 62, 170  # P(human) from 1.0 at top to 0.0 at plot_bottom
    strip_top, strip_bottom = 182, 212
    height = 262
    image = np.full((height, width, 3), 255, np.uint8)
    _text(image, title, (8, 18), 0.5)
    legend = [
        ("search", _MODE_COLOURS["search"]),
        ("locked, verified", VERIFIED_COLOUR),
        ("locked, unverified", LOCKED_COLOUR),
        ("reacquire", REACQUIRE_COLOUR),
    ]
    x = 8
    for name, colour in legend:
        cv2.rectangle(image, (x, 30), (x + 12, 42), colour, -1)
        _text(image, name, (x + 16, 41))
        x += 22 + 7 * len(name)
    cv2.line(image, (x, 36), (x + 16, 36), _P_COLOUR, 2)
    _text(image, "P(human)", (x + 20, 41))
    x += 90
    _text(image, "events: L lock, x lost, R relock, D dropped, U unlock", (x, 41))
    for label, value in (("1.0", 1.0), ("0.5", 0.5), ("0.0", 0.0)):
        y = int(plot_bottom - value * (plot_bottom - top))
        _text(image, label, (38, y + 4), 0.35)
        cv2.line(image, (left - 5, y), (width - 5, y), (220, 220, 220), 1)
    _text(image, "P(human)", (2, top - 8), 0.35)
    _text(image, "mode", (20, strip_bottom - 10), 0.35)
    for i, r in enumerate(results):
        x = left + i * step
        cv2.rectangle(image, (x, strip_top), (x + step - 1, strip_bottom), _bar_colour(r), -1)
    for i, r in enumerate(results):
        mark = _EVENT_MARKS.get(r.get("event"))
        if mark is not None:
            x = left + i * step + step // 2
            cv2.line(image, (x, strip_top - 4), (x, strip_bottom), (0, 0, 0), 1)
            _text(image, mark, (x - 3, strip_top - 6), 0.35)
    frames = [int(r.get("frame", i)) for i, r in enumerate(results)] or [0]
    for frame in _frame_ticks(frames[0], frames[-1]):
        i = frame - frames[0]
        if not 0 <= i < len(results):
            continue
        x = left + i * step + step // 2
        cv2.line(image, (x, strip_bottom), (x, strip_bottom + 5), (0, 0, 0), 1)
        _text(image, str(frame), (x - 4 * len(str(frame)), strip_bottom + 18), 0.35)
    _text(image, "frame", (width // 2 - 16, height - 8), 0.4)
    span = plot_bottom - top
    previous = None
    for i, r in enumerate(results):
        p = None if r.get("target") is None else r["target"].get("p_human")
        if p is None:
            previous = None
            continue
        point = (left + i * step + step // 2, int(plot_bottom - p * span))
        if previous is not None:
            cv2.line(image, previous, point, _P_COLOUR, 1, cv2.LINE_AA)
        cv2.circle(image, point, 2, _P_COLOUR, -1)
        previous = point
    from emts.io import write_image

    try:
        write_image(path, image)
    except (cv2.error, EmtsError, OSError):  # no encoder for the suffix, or a failing disk
        return False
    return True


def channels_figure(
    channels: np.ndarray,
    heatmap: np.ndarray,
    detections,
    caption: str = "",
    own_scale: bool = False,
) -> np.ndarray:
    """The paper's Fig. 2 for one frame: L | R | D | heatmap | decoded detections on L. R and
    D at the fixed display gains of the channel video, or with ``own_scale`` (a still
    picture) at this frame's own (:func:`display_gains`), with colour bars in the channels'
    units beneath them.

    Args:
        channels: (3, 192, 256) ``[L, R, D]``.
        heatmap: (24, 32) detector heatmap in [0, 1].
        detections: decoded :class:`emts.stages.c_detect.detector.Detection` (NETWORK px).
        caption: drawn at the bottom left.
        own_scale: scale R and D for this picture and add the colour bars.
    """
    gains = (
        display_gains(channels) if own_scale else (RESIDUAL_DISPLAY_GAIN, DIFFERENCE_DISPLAY_GAIN)
    )
    panel = channel_panel(channels, None, *gains)
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
    if not own_scale:
        return figure
    bars = np.full((34, figure.shape[1], 3), 255, np.uint8)
    ramp = np.linspace(0.0, 1.0, size[0] - 80)[None, :].repeat(10, axis=0)
    r_max, d_max = 1.0 / gains[0], 1.0 / gains[1]
    for index, (colours, low, high) in enumerate(
        [
            (None, None, None),
            (_inferno(ramp), "0", f"{r_max:.3g}"),
            (_diverging(2 * ramp - 1), f"-{d_max:.3g}", f"+{d_max:.3g}"),
            (cv2.applyColorMap((ramp * 255).astype(np.uint8), cv2.COLORMAP_VIRIDIS), "0", "1"),
        ]
    ):
        if colours is None:
            continue
        x = index * size[0] + 40
        bars[4:14, x : x + colours.shape[1]] = colours
        _text(bars, low, (x - 4 * len(low), 28), 0.35)
        _text(bars, high, (x + colours.shape[1] - 4 * len(high), 28), 0.35)
    return np.vstack([figure, bars])
