"""The five per-frame stages of the paper's Fig. 1, one module or package each, in order:

* :mod:`emts.stages.a_ego_motion` -- Stage A, the camera's own motion between frames.
* :mod:`emts.stages.b_channels` -- Stage B, the ego-motion-normalized ``[L, R, D]`` channels.
* :mod:`emts.stages.c_detect` -- Stage C, the micro-detector and its runtime modes.
* :mod:`emts.stages.acquisition` -- how a lock is made (operator tap, auto-lock).
* :mod:`emts.stages.appearance` -- the target's look, shared by Stages C and D.
* :mod:`emts.stages.d_track` -- Stage D, the Kalman tracker in stabilized coordinates.
* :mod:`emts.stages.e_verify` -- Stage E, "moves like a human" from optical-flow descriptors.

:mod:`emts.front_end` runs A and B; :mod:`emts.pipeline` composes them all.
"""
