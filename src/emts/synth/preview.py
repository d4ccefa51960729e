"""Looking at generated sets: contact sheets and export to plain image folders."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from emts.apps.draw import channel_panel
from emts.geometry import WORKING_GEOMETRY, Frame
from emts.synth.store import ClipSet

_PANEL_SCALE = 2  # channel_panel shows 256x192 channels at 2x
_PERSON_COLOUR = (80, 255, 80)
_DISTRACTOR_COLOUR = (60, 60, 255)


def contact_sheet(folder: str | Path, out: str | Path, clips: int = 8, frame: int = 9) -> Path:
    """PNG of L | R | D for ``clips`` evenly spaced clips of a set, one row per clip, with
    person boxes (green, with visible fraction) and distractor boxes (red, with kind)."""
    clip_set = ClipSet(folder)
    if len(clip_set) == 0:
        raise ValueError(f"{folder}: no clips")
    geometry = WORKING_GEOMETRY
    picks = np.unique(np.linspace(0, len(clip_set) - 1, min(clips, len(clip_set))).astype(int))
    rows = []
    for position in picks:
        clip = clip_set[position]
        t = min(frame, len(clip.frames) - 1)
        labels = clip.labels["frames"][t]
        panel = channel_panel(
            clip.channels[t], f"clip {clip.index} frame {t}  {clip.labels['plate']}"
        )
        for item, colour, text in [
            *[(p, _PERSON_COLOUR, f"{p['id']} v{p['visible']:.1f}") for p in labels["persons"]],
            *[(d, _DISTRACTOR_COLOUR, d["kind"]) for d in labels["distractors"]],
        ]:
            box = geometry.boxes([item["box"]], Frame.INPUT, Frame.NETWORK)[0] * _PANEL_SCALE
            for offset in (0, 2):  # on L and on D
                x = int(box[0]) + offset * 256 * _PANEL_SCALE
                cv2.rectangle(
                    panel, (x, int(box[1])), (x + int(box[2]), int(box[1] + box[3])), colour, 1
                )
                cv2.putText(
                    panel,
                    text,
                    (x, max(int(box[1]) - 3, 10)),
                    cv2.FONT_HERSHEY_SIMPLEX,
                    0.35,
                    colour,
                    1,
                )
        rows.append(panel)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(out), np.vstack(rows))
    return out


def export_clip(folder: str | Path, out: str | Path, index: int) -> Path:
    """Write clip ``index`` as ``frame_NNN.png`` files plus ``labels.json`` under ``out``."""
    clip = ClipSet(folder).load(index)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for t, image in enumerate(clip.frames):
        cv2.imwrite(str(out / f"frame_{t:03d}.png"), image)
    (out / "labels.json").write_text(json.dumps(clip.labels, indent=1) + "\n")
    return out
