"""``apd data``: fetch the 9 data files the recorded build read, and check a folder of them.

``apd data fetch FOLDER`` downloads them into ``FOLDER`` (``qa/...``,
``factuality_prompts/...``), checks each against the SHA-256 in :data:`FILES` and writes
``FOLDER/SHA256SUMS``; ``check [FOLDER]`` (default ``$APD_DATA_DIR``) says what is missing,
invalid or different; ``page`` prints ``book/data.md``. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

#: The environment variable naming the folder of offline copies (:func:`apd.base.paths.data_folder`).
DATA_ENV = "APD_DATA_DIR"
#: The checksum file ``fetch`` writes in the folder (``sha256sum -c SHA256SUMS`` reads it).
SUMS = "SHA256SUMS"
_CARD = "not stated in the offline copies' README; see the dataset's card: "


@dataclass(frozen=True)
class DataFile:
    """One file the recorded build read.

    path: relative to the data directory. dataset: the QA dataset read from it (a key of
    ``apd.evaluation.qa_data.DATASETS``); None for a FactualityPrompts file. split: the split it
    holds. rows: its non-blank lines. sha256: the digest of the copy the recorded build used.
    url: where ``fetch`` downloads it; convert: how the download becomes the file (None: as is).
    source, license, format: for the data page.
    """

    path: str
    dataset: Optional[str]
    split: str
    rows: int
    sha256: str
    url: str
    source: str
    license: str
    format: str
    convert: Optional[str] = None


_LLMF = "https://raw.githubusercontent.com/mosaicml/llm-foundry/main/scripts/eval/local_data/"
_AMZN = (
    "https://raw.githubusercontent.com/amazon-science/llm-asymptotic-decoding/"
    "843d2b8e49ee5744e12cb14076d5ec825c35ab5b/FactualityPrompt/prompts/"
)

#: The files, their splits and the SHA-256 of the copies the recorded build used (the default profile's
#: QA datasets, stand-ins included, and FactualityPrompts' test split of both kinds).
FILES: tuple[DataFile, ...] = (
    DataFile(
        "qa/lambada_openai.jsonl",
        "lambada",
        "test",
        5153,
        "411bfbe5b9054346b6a19299c0242670adbefb9162efd958593cbc0290b8c9dc",
        _LLMF + "language_understanding/lambada_openai.jsonl",
        "LAMBADA, OpenAI version (Hub: EleutherAI/lambada_openai); copy from mosaicml/llm-foundry",
        _CARD + "<https://huggingface.co/datasets/EleutherAI/lambada_openai>",
        "`{context, continuation}`",
    ),
    DataFile(
        "qa/commonsense_qa_train.jsonl",
        "commonsense_qa",
        "train",
        9741,
        "58ffa3c8472410e24b8c43f423d89c8a003d8284698a6ed7874355dedd09a2fb",
        "https://s3.amazonaws.com/commensenseqa/train_rand_split.jsonl",
        "CommonsenseQA (Hub: tau/commonsense_qa); the recorded copy came from kojima-takeshi188/zero_shot_cot, "
        "fetched from the authors' release",
        _CARD + "<https://huggingface.co/datasets/tau/commonsense_qa>",
        "`{id, question: {stem, choices[5]}, answerKey}`",
    ),
    DataFile(
        "qa/openbook_qa.jsonl",
        "openbookqa",
        "test",
        500,
        "adb2e5c7f8db810ddad4d6b2bf53dcc86dcc545499f7aafcaf42a8e179476c09",
        _LLMF + "commonsense_reasoning/openbook_qa.jsonl",
        "OpenBookQA (Hub: allenai/openbookqa, main), the offline stand-in for QASC (Q only); "
        "copy from mosaicml/llm-foundry",
        _CARD + "<https://huggingface.co/datasets/allenai/openbookqa>",
        "`{query, choices[4], gold}`",
    ),
    DataFile(
        "qa/arc_easy.jsonl",
        "arc_easy",
        "test",
        2376,
        "d2d12e59543acf9a5ef6079634a72b30215e36c2fd4236fff3bc855d287b87f5",
        _LLMF + "world_knowledge/arc_easy.jsonl",
        "ARC-Easy (Hub: allenai/ai2_arc, ARC-Easy), the offline stand-in for ARC; copy from mosaicml/llm-foundry",
        _CARD + "<https://huggingface.co/datasets/allenai/ai2_arc>",
        "`{query, choices[4], gold}`",
    ),
    DataFile(
        "qa/social_iqa_dev.jsonl",
        "social_iqa",
        "validation",
        1954,
        "26cf304136c026b70ccaabcd6eec45afc116f4dc013818475bb7b34fe1b0f26d",
        "https://raw.githubusercontent.com/eric11eca/common-bench/"
        "8ff3fe714c738e0f99935939c494df0b7bb97442/data/socialiqa/dev.jsonl",
        "SocialIQA dev (Hub: allenai/social_i_qa); copy from eric11eca/common-bench",
        _CARD + "<https://huggingface.co/datasets/allenai/social_i_qa>",
        "`{context, question, options[3], answer}` (answer as text)",
    ),
    DataFile(
        "qa/multirc_val.jsonl",
        "multirc",
        "validation",
        83,
        "d2b480195b15574ac00d52c4479f630bc161a7ab2de77e970fd00652846953ee",
        "https://raw.githubusercontent.com/DavidHe137/mice/"
        "4e7f44b4a847a689362b83c24a9d18b033b25c8d/data/MultiRC/val.jsonl",
        "MultiRC dev, SuperGLUE format, 83 passages / 953 questions (Hub: aps/super_glue, multirc); "
        "copy from DavidHe137/mice",
        _CARD + "<https://huggingface.co/datasets/aps/super_glue>",
        "`{idx, version, passage: {text, questions: [{question, answers: [{text, label}]}]}}`",
    ),
    DataFile(
        "qa/squad_v1.1_dev.jsonl",
        "squad",
        "validation",
        10570,
        "5c5322f597a8ccbf954b310371e865f168f0a0d2894065637098ef19d617f38d",
        "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json",
        "SQuAD v1.1 dev (Hub: rajpurkar/squad); rajpurkar/SQuAD-explorer, one line per question, articles by title",
        _CARD + "<https://huggingface.co/datasets/rajpurkar/squad>",
        "`{title, paragraph, context, question, answers[]}`",
        convert="squad",
    ),
    DataFile(
        "factuality_prompts/fever_factual_test7k_final.jsonl",
        None,
        "test",
        7000,
        "8a9f06a37f82f8942e79886042f5811c139a04d1d894863a8281cefa2d9ba20a",
        _AMZN + "fever_factual_test7k_final.jsonl",
        "FactualityPrompts, factual, the paper's 7k test split; amazon-science/llm-asymptotic-decoding",
        _CARD + "<https://github.com/nayeon7lee/FactualityPrompt>",
        "`{id, prompt, evidence_info: [[wiki_title, wiki_id], ...]}`",
    ),
    DataFile(
        "factuality_prompts/fever_nonfactual_test7k_final.jsonl",
        None,
        "test",
        7000,
        "a116fe8dc554019d3e7304a650b895c6af81c03ec83688850b7e0ccc22853de2",
        _AMZN + "fever_nonfactual_test7k_final.jsonl",
        "FactualityPrompts, nonfactual, the paper's 7k test split; amazon-science/llm-asymptotic-decoding",
        _CARD + "<https://github.com/nayeon7lee/FactualityPrompt>",
        "`{id, prompt, evidence_info: [[wiki_title, wiki_id], ...]}`",
    ),
)


def sha256(path: Path) -> str:
    """The hex SHA-256 of the file at ``path``, read in 1 MiB blocks.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "x"; _ = p.write_bytes(b"")
        >>> sha256(p)[:16]
        'e3b0c44298fc1c14'
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _squad_lines(raw: bytes) -> bytes:
    """SQuAD v1.1's ``dev-v1.1.json`` as the offline copy's lines: one JSON line per question
    ``{title, paragraph, context, question, answers}``, articles sorted by title."""
    out = []
    for article in sorted(json.loads(raw)["data"], key=lambda a: a["title"]):
        for p, par in enumerate(article["paragraphs"]):
            for qa in par["qas"]:
                row = {
                    "title": article["title"],
                    "paragraph": p,
                    "context": par["context"],
                    "question": qa["question"],
                    "answers": [a["text"] for a in qa["answers"]],
                }
                out.append(json.dumps(row) + "\n")
    return "".join(out).encode("utf-8")


_CONVERTERS: dict[str, Callable[[bytes], bytes]] = {"squad": _squad_lines}


def _open_url(url: str, timeout: float = 30.0):
    """A readable response for ``url`` (what tests replace with a fake)."""
    return urllib.request.urlopen(url, timeout=timeout)


def _download(url: str, label: str, log) -> bytes:
    """The bytes at ``url``, with a progress line per 4 MiB on ``log``."""
    chunks, got, step = [], 0, 4 << 20
    with _open_url(url) as response:
        total = int(response.headers.get("Content-Length") or 0) if hasattr(response, "headers") else 0
        while True:
            block = response.read(1 << 20)
            if not block:
                break
            chunks.append(block)
            if (got + len(block)) // step > got // step:
                log(f"  {label}: {(got + len(block)) / 1e6:.1f} MB" + (f" of {total / 1e6:.1f}" if total else ""))
            got += len(block)
    return b"".join(chunks)


def _write_sums(folder: Path, digests: dict[str, str]) -> None:
    lines = "".join(f"{d}  {p}\n" for p, d in sorted(digests.items()))
    (folder / SUMS).write_text(lines, encoding="utf-8")


def fetch(folder, log=print) -> int:
    """Download every file of :data:`FILES` into ``folder`` in the offline copies' layout, keep a
    file already there with the recorded SHA-256, and write ``folder/SHA256SUMS``; 0 when all 9
    match, else 1 after one line per problem (the first network failure stops it).

    Example (the files already there are only checked):
        >>> import tempfile
        >>> fetch(tempfile.mkdtemp(), log=lambda line: None)  # doctest: +SKIP
        0
    """
    folder = Path(folder).expanduser()
    problems, digests = [], {}
    for i, f in enumerate(FILES, 1):
        target = folder / f.path
        label = f"[{i}/{len(FILES)}] {f.path}"
        if target.is_file() and sha256(target) == f.sha256:
            log(f"{label}: already there, checksum ok")
            digests[f.path] = f.sha256
            continue
        log(f"{label}: downloading {f.url}")
        try:
            data = _download(f.url, label, log)
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            log(
                f"apd data fetch: cannot download {f.url} ({type(e).__name__}: {reason}); this machine looks "
                f"offline: run `apd data fetch {folder}` on a connected machine and copy the folder here, "
                f"or point {DATA_ENV} at an existing copy."
            )
            return 1
        if f.convert:
            data = _CONVERTERS[f.convert](data)
        digest = hashlib.sha256(data).hexdigest()
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        part.write_bytes(data)
        os.replace(part, target)
        digests[f.path] = digest
        if digest != f.sha256:
            problems.append(
                f"{f.path}: the download from {f.url} has SHA-256 {digest[:12]}..., not the recorded "
                f"{f.sha256[:12]}... (the source changed): results may differ from the recorded build's; "
                "use the recorded copy if you have it."
            )
        else:
            log(f"{label}: {len(data):,} bytes, checksum ok")
    _write_sums(folder, digests)
    for line in problems:
        log(line)
    log(f"wrote {folder / SUMS}" + ("" if problems else f"; now set {DATA_ENV}={folder}"))
    return 1 if problems else 0


def _validate(f: DataFile, path: Path) -> None:
    """Read ``path`` as the loader would, each row checked against the loader's schema of field types
    (:data:`apd.evaluation.qa_data.OFFLINE_FIELDS`, :data:`apd.evaluation.factuality.sources.ROW_FIELDS`);
    a ValueError, one line per problem, when it is invalid."""
    if f.dataset is None:
        from apd.evaluation.factuality.sources import check_prompts_file

        check_prompts_file(path)
    else:
        from apd.evaluation.qa_data import check_offline_file

        check_offline_file(f.dataset, path.parent.parent)


def problems(folder) -> list[str]:
    """One line per problem with the data files in ``folder``: missing, invalid (as the loaders read
    them: not JSON, a field missing or of the wrong type, ...) or with a SHA-256 other than the
    recorded build's; empty when all 9 are as recorded.

    Example:
        >>> import tempfile
        >>> problems(tempfile.mkdtemp())[0]  # doctest: +ELLIPSIS
        'qa/lambada_openai.jsonl: missing from ...; run `apd data fetch ...` to download it.'
    """
    folder = Path(folder).expanduser()
    out = []
    for f in FILES:
        path = folder / f.path
        if not path.is_file():
            out.append(f"{f.path}: missing from {folder}; run `apd data fetch {folder}` to download it.")
            continue
        try:
            _validate(f, path)
        except ValueError as e:  # one line per problem (a field of the wrong type: file:line: field: ...)
            out += [f"{f.path}: invalid: {line}" for line in str(e).splitlines()]
            continue
        digest = sha256(path)
        if digest != f.sha256:
            out.append(
                f"{f.path}: SHA-256 {digest[:12]}... is not the recorded build's {f.sha256[:12]}... (another "
                f"version of the file): results may differ; run `apd data fetch {folder}` to replace it."
            )
    return out


def check(folder=None, log=print) -> int:
    """Check ``folder`` (default ``$APD_DATA_DIR``) with :func:`problems`: 0 when all is well, else 1
    after one line per problem."""
    folder = folder or os.environ.get(DATA_ENV) or None
    if folder is None:
        log(f"apd data check: no folder given and {DATA_ENV} is not set; pass FOLDER or set {DATA_ENV}.")
        return 1
    if not Path(folder).expanduser().is_dir():
        log(f"apd data check: {folder} is not a folder; run `apd data fetch {folder}` to create it.")
        return 1
    found = problems(folder)
    for line in found:
        log(line)
    if not found:
        log(f"{folder}: all {len(FILES)} data files present, valid and as recorded.")
    return 1 if found else 0


def page() -> str:
    """``book/data.md``: every file of :data:`FILES` with its source, split, license and format."""
    lines = [
        "# Data files",
        "",
        "<!-- generated from apd.evaluation.datafiles.FILES by `python -m apd.evaluation.datafiles page > book/data.md` -->",
        "",
        "The QA chapter and the FactualityPrompts part of the factuality chapter read these "
        f"{len(FILES)} files: from `${DATA_ENV}` when it is set, else from the Hugging Face Hub (QA, the "
        "same splits) and the original source (FactualityPrompts). `apd data fetch data/` downloads "
        "them into `data/` and checks each against the SHA-256 of the copy the recorded build used; "
        f"`apd data check data/` (default `${DATA_ENV}`) says which are missing, invalid or different.",
        "",
        "| file | dataset | split | rows | format |",
        "| --- | --- | --- | --- | --- |",
    ]
    for f in FILES:
        dataset = f"`{f.dataset}`" if f.dataset else "FactualityPrompts"
        lines.append(f"| `{f.path}` | {dataset} | {f.split} | {f.rows:,} | {f.format} |")
    lines += ["", "## Sources and licenses", ""]
    for f in FILES:
        lines.append(
            f"- `{f.path}` ({f.split}): {f.source}; downloaded from <{f.url}>"
            + (f" (converted: {f.convert})" if f.convert else "")
            + f". License: {f.license}. SHA-256 `{f.sha256}`."
        )
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    """``apd data fetch FOLDER`` | ``apd data check [FOLDER]`` | ``apd data page``; the exit status.

    Example:
        >>> main(["page"]) == 0  # doctest: +ELLIPSIS
        # Data files
        ...
        True
    """
    parser = argparse.ArgumentParser(prog="apd data", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fetch", help="download the data files into FOLDER and write its SHA256SUMS")
    p.add_argument("folder")
    p = sub.add_parser("check", help=f"check FOLDER (default ${DATA_ENV}): present, valid, as recorded")
    p.add_argument("folder", nargs="?")
    sub.add_parser("page", help="print book/data.md")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        return fetch(args.folder)
    if args.command == "check":
        return check(args.folder)
    sys.stdout.write(page())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
