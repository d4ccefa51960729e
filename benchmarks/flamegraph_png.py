"""Render py-spy's collapsed stacks (``py-spy record --format raw``) as a flame graph PNG.

Only the samples under ``--root`` (a function name, default ``Pipeline.step``) are drawn, with
that function at the bottom, so the picture is the per-frame pipeline and not the clip
generation around it. Boxes narrower than 0.4 % of the samples are dropped.

Usage:
    py-spy record -r 500 --format raw -o stacks.txt -- python -m emts.cli bench --frames 2000
    python benchmarks/flamegraph_png.py stacks.txt flame.png [--title TEXT]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

_MIN_SHARE = 0.004


def _frame_name(frame: str) -> str:
    """'Detector.raw (emts/stages/c_detect/detector.py:128)' -> 'Detector.raw (detector.py)'."""
    match = re.match(r"(.*?) \((.*?)(?::\d+)?\)$", frame)
    if not match:
        return frame
    function, path = match.groups()
    return f"{function} ({Path(path).name})"


def load_tree(path: Path, root: str) -> dict:
    """Nested {name: [samples, children]} of the stacks under ``root``, merged by name."""
    tree: dict = {}
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [_frame_name(f) for f in stack.split(";")]
        starts = [i for i, f in enumerate(frames) if f.startswith(root + " ")]
        if not starts:
            continue
        node = tree
        for frame in frames[starts[0] :]:
            entry = node.setdefault(frame, [0, {}])
            entry[0] += int(count)
            node = entry[1]
    return tree


def draw(tree: dict, out: Path, title: str) -> None:
    total = sum(entry[0] for entry in tree.values())
    figure, axes = plt.subplots(figsize=(16, 7))
    colours = plt.get_cmap("YlOrRd")
    depth_max = 0

    def place(node: dict, left: float, depth: int) -> None:
        nonlocal depth_max
        for name, (samples, children) in sorted(node.items(), key=lambda kv: -kv[1][0]):
            share = samples / total
            if share < _MIN_SHARE:
                continue
            depth_max = max(depth_max, depth)
            colour = colours(0.25 + 0.5 * ((hash(name) % 97) / 97))
            axes.barh(depth, share, left=left, height=0.9, color=colour, edgecolor="white")
            label = f"{name} {100 * share:.1f}%"
            if share > 0.03:
                axes.text(
                    left + share / 2,
                    depth,
                    label[: int(share * 190)],
                    ha="center",
                    va="center",
                    fontsize=7,
                )
            place(children, left, depth + 1)
            left += share

    place(tree, 0.0, 0)
    axes.set_xlim(0, 1)
    axes.set_ylim(-0.6, depth_max + 0.6)
    axes.set_yticks([])
    axes.set_xlabel("share of the per-frame pipeline's samples")
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stacks", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--root", default="Pipeline.step")
    parser.add_argument("--title", default="emts bench: where a frame's time goes")
    args = parser.parse_args(argv)
    draw(load_tree(args.stacks, args.root), args.out, args.title)
    print(f"{args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
