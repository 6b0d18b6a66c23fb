"""The non-trace work of a step (physics, rewards, episode ends) in two implementations.

Which runs when (``physics.step_kernel``, ``auto`` by default; the choice is
:func:`navi_environment.step.fused.resolve_step_kernel`):

* The torch reference: :mod:`~navi_environment.step.physics` (kinematics, collision sweep and
  slide), :mod:`~navi_environment.step.rewards` (the ten reward terms) and
  :mod:`~navi_environment.step.episodes` (counters, truncation, scene rotation). Batched tensor
  ops: the CUDA path, the CPU path when the tracer runs torch, and the oracle of the fused step.
  Episode resets always run here.
* The fused numba step: :mod:`~navi_environment.step.fused_kernels` does the same work in the same
  float32 order as two kernels around the sensor trace; :mod:`~navi_environment.step.fused` is the
  glue that hands them zero-copy views of the backend's tensors. Used on CPU with the numba tracer,
  where ~230 tiny torch ops would cost as much as the trace.

:class:`navi_environment.backend.SdfDagBackend` drives both. The tests that bind them live in
``tests/step/`` (``test_fused_equivalence.py``: whole steps and each kernel against its torch twin).
"""
