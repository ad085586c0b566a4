"""Atomic file writes: a file is either the old version or the complete new one, never a part.

Each writer writes ``<name>.tmp`` beside the target, then renames it over the target
(``os.replace``, atomic on POSIX), creating the parent folder first.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any, Callable

from apd.base.paths import free_space


def atomic_write(path, write: Callable[[Path], None], *, digest: bool = False) -> Path:
    """Call ``write(tmp_path)``, then move ``tmp_path`` over ``path``; returns ``path``.
    With ``digest``, also record the file's SHA-256 in ``<path>.sha256`` (see :func:`check_file`).
    A full disk raises an OSError (ENOSPC) naming ``path`` and its folder's free space
    (:func:`disk_full_error`); the partial ``tmp_path`` is removed.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "a" / "x.txt"
        >>> atomic_write(p, lambda tmp: tmp.write_text("hello")).read_text()
        'hello'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except Exception as err:
        if not is_disk_full(err):
            raise
        tmp.unlink(missing_ok=True)
        raise disk_full_error(path, err) from err
    if digest:
        record_digest(path)
    return path


def is_disk_full(err: BaseException) -> bool:
    """Whether ``err`` says the disk (or the user's quota) is full: an OSError with ENOSPC or EDQUOT,
    or a library's message saying so (torch and safetensors wrap the OSError in their own errors).

    Example:
        >>> is_disk_full(OSError(errno.ENOSPC, "No space left on device")), is_disk_full(ValueError("x"))
        (True, False)
    """
    if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(err)
    return any(s in text for s in ("No space left on device", "StorageFull", "Disk quota exceeded", "[Errno 28]"))


def disk_full_error(path, err: BaseException) -> OSError:
    """An OSError (ENOSPC) in one line naming ``path``, its folder's free space and the fix."""
    path = Path(path)
    return OSError(
        errno.ENOSPC,
        f"no space left on the device to write {path} ({free_space(path.parent)} in {path.parent}; "
        f"{type(err).__name__}: {' '.join(str(err).split())[:160]}); free space there, or point "
        "APD_CACHE_DIR (artifacts) or APD_RESULTS_DIR (results) at a larger disk",
    )


def write_json(path, obj: Any, *, indent: int = 2, trailing_newline: bool = False, digest: bool = False) -> Path:
    """Write ``obj`` as JSON atomically (values JSON cannot hold are written with ``str``).

    Example:
        >>> import tempfile
        >>> p = write_json(Path(tempfile.mkdtemp()) / "r.json", {"kl": 0.5})
        >>> json.loads(p.read_text())
        {'kl': 0.5}
    """
    text = json.dumps(obj, indent=indent, default=str) + ("\n" if trailing_newline else "")
    return atomic_write(path, lambda tmp: tmp.write_text(text), digest=digest)


def torch_save(obj: Any, path, *, digest: bool = False) -> Path:
    """``torch.save(obj, path)``, atomically (``digest``: also record ``<path>.sha256``)."""
    import torch

    return atomic_write(path, lambda tmp: torch.save(obj, tmp), digest=digest)


# ----------------------------------------------------------------------------------------------
# Digests: every cached artifact records a SHA-256 when it is written and is checked when it is
# loaded. A file ``x`` records ``x.sha256`` beside it (``atomic_write(..., digest=True)``); a folder
# written by ``save_pretrained`` records ``digests.json`` inside it (``write_folder_digests``).
# A damaged artifact is renamed to ``<name>.damaged-<time>`` (never deleted) with one message
# naming it, and its writer rebuilds it. Artifacts from before digests were recorded have none
# and are accepted as they are.

DIGESTS = "digests.json"
#: A file that :func:`notify` appends its lines to (the build sets it and shows them on the
#: terminal of the person running the build, whose kernel's warnings go to the chapter's run log).
NOTICES_ENV = "APD_NOTICES"


def notify(message: str) -> None:
    """Append ``message`` (one line) to ``$APD_NOTICES`` when it is set; never fails.

    Example:
        >>> notify("apd: something was repaired")   # a no-op outside the build
    """
    path = os.environ.get(NOTICES_ENV)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(" ".join(str(message).split()) + "\n")
    except OSError:
        pass


_verified: dict = {}  # (path, size, mtime_ns, ino) -> digest, so a run hashes each artifact once


def _stat_key(path: Path):
    st = path.stat()
    return (str(path), st.st_size, st.st_mtime_ns, st.st_ino)


def file_sha256(path) -> str:
    """The SHA-256 (hex) of a file's bytes, read in 1 MiB blocks (memoized per size and mtime)."""
    import hashlib

    path = Path(path)
    key = _stat_key(path)
    if key not in _verified:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _verified[key] = h.hexdigest()
    return _verified[key]


def file_digest(path) -> str:
    """The SHA-256 (hex) of a file's bytes, read afresh each time, so an edit is always seen (the
    scheme of :func:`file_sha256`, without its memo: results files, which a person may edit)."""
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def record_digest(path) -> str:
    """Write ``<path>.sha256`` holding the SHA-256 of ``path``; returns the digest."""
    path = Path(path)
    digest = file_sha256(path)
    atomic_write(_sidecar(path), lambda tmp: tmp.write_text(digest + "\n"))
    return digest


def recorded_digest(path) -> str | None:
    """The digest recorded for a file (its ``.sha256`` sidecar, or its folder's ``digests.json``), or None."""
    path = Path(path)
    side = _sidecar(path)
    if side.is_file():
        return side.read_text().strip() or None
    manifest = path.parent / DIGESTS
    if manifest.is_file():
        try:
            return json.loads(manifest.read_text()).get(path.name)
        except (ValueError, AttributeError):
            return None
    return None


def write_folder_digests(folder) -> dict:
    """Record the SHA-256 of every file under ``folder`` (paths relative to it) in ``folder/digests.json``."""
    folder = Path(folder)
    digests = {
        p.relative_to(folder).as_posix(): file_sha256(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != DIGESTS
    }
    write_json(folder / DIGESTS, digests, indent=1)
    return digests


def set_aside(path, what: str, reason: str, action: str) -> Path:
    """Rename a damaged artifact to ``<name>.damaged-<time>`` (with its digest sidecar) and say so once.

    ``what``: e.g. "member weights"; ``action``: what happens next, e.g. "retraining it".
    Returns the new path.
    """
    import time
    import warnings

    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    new = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while new.exists():
        new, n = path.with_name(f"{path.name}.damaged-{stamp}-{n}"), n + 1
    os.replace(path, new)
    side = _sidecar(path)
    if side.exists():
        os.replace(side, _sidecar(new))
    message = f"apd: the {what} {path} is damaged ({reason}); moved aside to {new} and {action}."
    warnings.warn(message, stacklevel=2)
    notify(message)
    return new


def check_log(path, what: str, action: str, *, last_step: int | None = None) -> bool:
    """True if the JSON-lines log ``path`` of a finished run is intact: it matches its recorded digest
    (``<path>.sha256``, recorded when the run finished), or, with none recorded (a run finished before
    logs were digested), every line is a JSON object and the last one's ``step`` is ``last_step``
    (when given), after which its digest is recorded. A damaged log is set aside (:func:`set_aside`)
    and False returned, so the run is trained again; False also when it is missing.

    Example:
        >>> import tempfile
        >>> log = Path(tempfile.mkdtemp()) / "train_log.jsonl"
        >>> _ = log.write_text('{"step": 1}\\n{"step": 2}\\n')
        >>> check_log(log, "training log", "training again", last_step=2), recorded_digest(log) is not None
        (True, True)
    """
    path = Path(path)
    if not path.is_file():
        return False
    want = recorded_digest(path)
    if want is not None:
        if file_sha256(path) == want:
            return True
        set_aside(path, what, "digest mismatch", action)
        return False
    reason = _log_problem(path, last_step)
    if reason is None:
        record_digest(path)
        return True
    set_aside(path, what, reason, action)
    return False


def _log_problem(path: Path, last_step: int | None) -> str | None:
    """Why a JSON-lines log without a recorded digest is damaged (read line by line), or None."""
    last, n = None, 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                last = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                return f"line {n} is not JSON"
            if not isinstance(last, dict):
                return f"line {n} is not a JSON object"
    if last is None:
        return "it is empty"
    if last_step is not None and last.get("step") != last_step:
        return f"it ends at step {last.get('step')}, not at the run's last step {last_step}"
    return None


def check_file(path, what: str, action: str) -> bool:
    """True if ``path`` exists and matches its recorded digest (or has none recorded); if it does
    not match, set it aside (:func:`set_aside`) and return False. False also when it is missing."""
    path = Path(path)
    if not path.is_file():
        return False
    want = recorded_digest(path)
    if want is None or file_sha256(path) == want:
        return True
    set_aside(path, what, "digest mismatch", action)
    return False


def _unreadable(folder: Path) -> str | None:
    """Why a folder without recorded digests is damaged (a safetensors file whose size does not match
    its header, e.g. truncated; a JSON file that does not parse; a torch file, e.g. ``curve_mlp.pt``,
    that is not a whole zip archive with matching CRCs or does not load), or None if it looks intact."""
    for p in sorted(folder.rglob("*")):
        try:
            if p.suffix == ".safetensors":
                from safetensors import safe_open

                with safe_open(str(p), "np") as f:
                    f.keys()
            elif p.suffix == ".json":
                json.loads(p.read_text())
            elif p.suffix in (".pt", ".pth", ".bin") and p.is_file():
                _check_torch_file(p)
        except Exception as err:
            return f"unreadable {p.name}: {type(err).__name__}"
    return None


def _check_torch_file(path: Path) -> None:
    """Raise if a ``torch.save`` file is damaged: its zip archive is cut short or a member fails its
    CRC (a file in torch's legacy format, not a zip archive, is loaded instead)."""
    import zipfile

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
        if bad is not None:
            raise zipfile.BadZipFile(f"CRC mismatch in {bad}")
        return
    import torch

    torch.load(path, map_location="cpu", weights_only=False)


def check_folder(folder, what: str, action: str, *, backfill: bool = False) -> bool:
    """True if every file listed in ``folder/digests.json`` is there with its digest (or the folder
    records none); otherwise set the whole folder aside and return False. False when it is missing.

    ``backfill`` (for the artifact's own writer, holding or not needing its lock): a folder from
    before digests were recorded is checked for readability (safetensors headers against file sizes,
    JSON files) and then has its digests recorded, so later damage is caught."""
    folder = Path(folder)
    if not folder.is_dir():
        return False
    manifest = folder / DIGESTS
    if not manifest.is_file():
        if not backfill:
            return True
        reason = _unreadable(folder)
        if reason is None:  # an intact folder from before digests were recorded: record them now
            write_folder_digests(folder)
            return True
        set_aside(folder, what, reason, action)
        return False
    try:
        want = json.loads(manifest.read_text())
        bad = [name for name, d in want.items() if not (folder / name).is_file() or file_sha256(folder / name) != d]
        reason = f"digest mismatch in {', '.join(bad[:3])}" if bad else None
    except (ValueError, AttributeError):
        reason = f"unreadable {DIGESTS}"
    if reason is None:
        return True
    set_aside(folder, what, reason, action)
    return False


def read_json_checked(path, what: str, action: str):
    """The JSON in ``path``, or None when it is missing; a file that does not parse (e.g. truncated)
    or fails its recorded digest is set aside (:func:`set_aside`) and None returned."""
    path = Path(path)
    if not check_file(path, what, action):
        return None
    try:
        return json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        set_aside(path, what, f"not valid JSON: {err}", action)
        return None


def remove_stale_tmp(folder, patterns=("*.tmp", ".tokenizer-*")) -> list[Path]:
    """Remove the temporary files and folders a dead writer left in ``folder`` (call it holding the
    folder's lock, so that no live writer owns them). Returns what was removed."""
    import shutil

    folder = Path(folder)
    gone = []
    if not folder.is_dir():
        return gone
    for pattern in patterns:
        for p in folder.glob(pattern):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            gone.append(p)
    return gone


def remove_checkpoints(folder) -> None:
    """Delete a finished run's checkpoint folder, except for damaged files set aside there (they
    are kept for inspection, so the folder stays when there are any)."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    for p in folder.iterdir():
        if ".damaged-" not in p.name and p.is_file():
            p.unlink()
    try:
        folder.rmdir()
    except OSError:  # something set aside is kept
        pass
