"""Checking a ``--device`` before anything is built on it.

Why: ``--device cuda`` on a machine without CUDA ended in a torch traceback deep inside model
construction; every command that takes ``--device`` calls :func:`check_device` at start-up instead
and turns its error into one line.
"""

from __future__ import annotations


class DeviceUnavailableError(ValueError):
    """The requested torch device does not exist on this machine."""


def check_device(name: str) -> None:
    """Raise :class:`DeviceUnavailableError` unless torch can place tensors on ``name``.

    Args:
        name: a torch device string: ``cpu``, ``cuda``, ``cuda:1``, ``mps``, ...
    """
    import torch

    try:
        device = torch.device(name)
    except (RuntimeError, ValueError) as error:
        raise DeviceUnavailableError(f"--device {name}: not a torch device ({error})") from error
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailableError(
                f"--device {name}: no CUDA device is available on this machine; use --device cpu"
            )
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise DeviceUnavailableError(f"--device {name}: this machine has {count} CUDA device(s)")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise DeviceUnavailableError(f"--device {name}: MPS is not available on this machine")
