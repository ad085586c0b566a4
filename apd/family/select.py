"""A chapter's family by name: the embedded pico family, or a Hub family (pythia, opt, qwen1.5)."""

from __future__ import annotations

from apd.base.device import resolve_device
from apd.family.loading import load_family
from apd.family.settings import settings_for


def get_family(
    family: str = "pico",
    pico_scale: str = "default",
    members=None,
    local_dir=None,
    device: str | None = "auto",
    dtype=None,
    progress: bool = True,
    **load_kwargs,
):
    """``(Family, PicoBuild | None)``: the embedded pico family (trained here once, then cached) or a
    Hub family (``pythia``, ``opt``, ``qwen1.5``; ``local_dir`` for local copies).

    load_kwargs: more arguments of :func:`apd.family.loading.load_family` (``check_sizes``, ``offload``,
    ``log_sizes``, ``hub_kwargs``, ...), e.g. ``check_sizes=False`` for models of your own under a
    registered family's member names. ``built`` is None for Hub families. ``pico_scale`` (also the
    scale of a Hub family's ALM' training) is checked here, by building its
    :func:`apd.family.settings.settings_for`, before anything loads.

    Example:
        >>> import apd
        >>> fam, built = apd.get_family("pico", "smoke", device="cpu", progress=False)
        >>> fam.names[0], fam.names[-1]          # the ALM and the ELM
        ('pico-3.3k', 'pico-57k')
        >>> bool((fam.log_sizes[1:] > fam.log_sizes[:-1]).all())   # x = ln(non-embedding size), increasing
        True
    """
    if isinstance(family, str):  # a FamilySpec of your own has no training settings
        settings_for(family, pico_scale)
    dev = resolve_device(device)
    if family == "pico":
        from apd.family import pico  # the embedded builder loads only when asked for: Hub families never import it

        if local_dir is not None:
            raise ValueError(
                "local_dir is for Hub families (pythia, opt, qwen1.5); the pico family is "
                "trained and cached here (apd.family.pico.build). Leave local_dir=None for pico."
            )
        built = pico.build(pico_scale, device=dev, progress=progress)
        fam = load_family("pico", members=members, local_dir=built.family_dir, device=dev, dtype=dtype, **load_kwargs)
        return fam, built
    return load_family(family, members=members, local_dir=local_dir, device=dev, dtype=dtype, **load_kwargs), None
