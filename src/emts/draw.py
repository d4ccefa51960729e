"""Pictures for people: the channel panel video, and later annotated tracks and timelines."""

from __future__ import annotations

import cv2
import numpy as np

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
