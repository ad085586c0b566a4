"""The embedded pico family end to end: corpus -> tokenizer -> pretrained members -> ``Family``.

    built = pico.build("default")          # trains once (cached), then returns in seconds
    fam = built.family()                   # a Family over the trained members

Scales: ``"smoke"`` (seconds; tests and CI), ``"default"`` (the book on a 2-core CPU: 400 people, six
members spanning 139x), ``"default-200"`` (200 people, the same six members: the ``default-200``
profile) and ``"gpu"`` (seven members spanning 371x and 2.5 times the default's text, for one GPU: the
``gpu`` profile). Artifacts live under
``apd.base.paths.cache_dir()``, keyed by the configuration that produced them.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from apd.base.paths import cache_dir
from apd.family import pretrain
from apd.family.loading import load_family
from apd.family.registry import SCALES
from apd.world import corpus as corpus_mod


def configs(scale: str) -> tuple[corpus_mod.CorpusConfig, pretrain.PicoConfig]:
    """The corpus and pretraining configurations of a scale."""
    if scale == "smoke":
        return corpus_mod.CorpusConfig.smoke(), pretrain.PicoConfig.smoke()
    if scale == "default":
        return corpus_mod.CorpusConfig.book(), pretrain.PicoConfig.default()
    if scale == "gpu":
        return corpus_mod.CorpusConfig.gpu(), pretrain.PicoConfig.gpu()
    if scale == "default-200":
        return corpus_mod.CorpusConfig.default200(), pretrain.PicoConfig.default200()
    if scale == "exact-truth":
        return corpus_mod.CorpusConfig(), pretrain.PicoConfig.default()
    raise ValueError(f"unknown pico scale {scale!r}; use one of {SCALES}")


@dataclass
class PicoBuild:
    """A built pico family: its corpus (world + splits), tokenizer and trained member folders."""

    scale: str
    corpus: corpus_mod.Corpus
    tokenizer: object
    family_dir: Path
    pico_config: pretrain.PicoConfig

    def manifest(self) -> dict:
        """The trained family's ``family.json`` (members, config, train seconds; {} when absent)."""
        path = self.family_dir / "family.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    def family(self, device=None, dtype=None):
        return load_family("pico", local_dir=self.family_dir, device=device, dtype=dtype)


def build(scale: str = "default", cache: Path | str | None = None, device=None, progress: bool = True) -> PicoBuild:
    """Build (or find cached) the corpus, tokenizer and trained family of ``scale``."""
    corpus_cfg, pico_cfg = configs(scale)
    return build_configured(corpus_cfg, pico_cfg, scale, cache=cache, device=device, progress=progress)


def build_configured(
    corpus_cfg: corpus_mod.CorpusConfig,
    pico_cfg: pretrain.PicoConfig,
    name: str = "custom",
    cache: Path | str | None = None,
    device=None,
    progress: bool = True,
    train: bool = True,
) -> PicoBuild:
    """:func:`build` for any corpus and pretraining configuration (a testbed study's world and
    family); cached by the configurations as :func:`build` is, ``name`` is the build's label.
    ``train=False``: only find the trained family (FileNotFoundError when it is not cached).

    Example:
        >>> corpus_cfg, pico_cfg = configs("smoke")
        >>> build_configured(corpus_cfg, pico_cfg, "smoke", device="cpu", progress=False).family_dir.name.startswith("pico-")
        True
    """
    cache = Path(cache) if cache is not None else cache_dir()
    corp = corpus_mod.build_corpus(corpus_cfg)
    tok = corp.tokenizer(cache_dir=cache / "tokenizers")
    if not train:
        folder = pretrain.family_dir(pico_cfg, tok, corp.pretrain, cache / "families", device=device)
        if not (folder / "family.json").is_file():
            raise FileNotFoundError(f"the {name!r} family is not trained yet ({folder}); build it with train=True.")
    family_dir = pretrain.train_family(
        pico_cfg, tok, corp.pretrain, cache / "families", device=device, progress=progress
    )
    return PicoBuild(name, corp, tok, Path(family_dir), pico_cfg)


def find_cached(scale: str = "default", cache: Path | str | None = None, device=None) -> PicoBuild | None:
    """The :class:`PicoBuild` of ``scale`` if its family, trained on ``device``'s kind (CPU fp32 and
    CUDA bf16 autocast have different cache keys), is already cached; else None. Never trains a
    family (it may train the small tokenizer). For tools that must not start a long training run."""
    corpus_cfg, pico_cfg = configs(scale)
    cache = Path(cache) if cache is not None else cache_dir()
    want = json.loads(json.dumps(pico_cfg.to_dict()))
    # cheap pre-check on the manifests before building the corpus and hashing its token stream
    if not any(
        _manifest_config(d / "family.json") == want
        for d in (cache / "families").glob(f"{pico_cfg.prefix}-*")
        if (d / "family.json").is_file()
    ):
        return None
    corp = corpus_mod.build_corpus(corpus_cfg)
    tok = corp.tokenizer(cache_dir=cache / "tokenizers")
    folder = pretrain.family_dir(pico_cfg, tok, corp.pretrain, cache / "families", device=device)
    intact = (folder / "family.json").is_file() and pretrain.family_intact(folder)  # sets damage aside
    return PicoBuild(scale, corp, tok, folder, pico_cfg) if intact else None


def _manifest_config(path: Path):
    """The ``config`` of a family manifest, or None when it does not parse (``build`` repairs it)."""
    try:
        return json.loads(path.read_text()).get("config")
    except ValueError:
        return None


#: Registry names the smoke members stand in for (smallest first; the last is the QA reference).
STAND_IN_NAMES = {"pythia": ("pythia-70m-deduped", "pythia-160m-deduped", "pythia-410m-deduped", "pythia-12b-deduped")}


def export_stand_in(built: PicoBuild, folder, family: str = "pythia") -> Path:
    """Copy the members of ``built`` into ``folder`` under a Hub family's member names, smallest
    first, so that the Hub code path of every chapter can run offline on trained models (profile
    ``hub-smoke``). Load the result with ``load_family(family, members=..., local_dir=folder,
    check_sizes=False)``: the x-axis is then ln of the counted sizes, not the registry's."""
    names = STAND_IN_NAMES[family]
    members = json.loads((built.family_dir / "family.json").read_text())["members"]
    if len(members) < len(names):
        raise ValueError(f"{built.family_dir} has {len(members)} members; the {family} stand-in needs {len(names)}.")
    folder = Path(folder)
    for src, name in zip(members[-len(names) :], names):
        dst = folder / name
        if not (dst / "config.json").exists():
            tmp = folder / f".{name}.partial"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(built.family_dir / src, tmp)
            tmp.rename(dst)
    return folder
