"""Sphere tracing on a packed scene atlas: one facade, four kernels that obey the same hit rules.

Which implementation runs when (``tracer.device_kernel``, ``auto`` by default):

* :mod:`~navi_environment.tracer.wavefront` + :mod:`~navi_environment.tracer.simd` (numba, CPU):
  the sensor trace on CPU; the wavefront organises the jobs, ``simd`` holds its vector passes.
* :mod:`~navi_environment.tracer.scalar` (numba, CPU): collision sweeps and point queries on CPU,
  and the scalar sensor kernel, which is the wavefront's reference (tests, benchmark baseline).
* :mod:`~navi_environment.tracer.torch_kernel` (torch): everything on CUDA (``auto`` on a GPU
  device, or ``device_kernel=torch`` on CPU, which the equivalence tests use).
* :mod:`~navi_environment.tracer.facade`: the :class:`Tracer` that picks among them per device and
  hands the numba kernels zero-copy views of torch tensors.

The tests that bind them live in ``tests/tracer/``: wavefront against scalar, scalar against a
one-ray numpy reference, torch against numba, and all of them against analytic rooms.
"""

from navi_environment.tracer.facade import (
    Tracer,
    configure_numba,
    fibonacci_directions,
    resolve_kernel,
    sensor_directions,
)

__all__ = ["Tracer", "configure_numba", "fibonacci_directions", "resolve_kernel", "sensor_directions"]
