"""Which torch device to run on. torch is imported when a function here is called, so that
``apd.base`` (which the build imports) stays light."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def resolve_device(device=None) -> torch.device:
    """``None`` or ``"auto"``: CUDA when available, else the CPU; anything else as given.

    Asking for CUDA where there is none is an error that names the fix.

    Example:
        >>> resolve_device("cpu")
        device(type='cpu')
    """
    import torch

    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device {str(device)!r} asked for, but CUDA is not available here; "
            "use device='cpu' or 'auto' (e.g. --set family.device=cpu)."
        )
    return dev


@contextlib.contextmanager
def cpu_threads(n=1):
    """Run the block with ``n`` torch CPU threads (None: leave them), then restore the old count.
    Tiny models on a shared CPU run many times faster on one thread than on contended threads.

    Example:
        >>> import torch
        >>> with cpu_threads(1):
        ...     torch.get_num_threads()
        1
    """
    import torch

    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)
