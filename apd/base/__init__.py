"""Foundations every stage uses: atomic files, a file lock, device resolution, project paths,
progress bars.

Nothing here imports another part of ``apd``.
"""

from apd.base import io, lock, device, paths, checks, progress
from apd.base.io import (
    atomic_write,
    write_json,
    torch_save,
    DIGESTS,
    NOTICES_ENV,
    notify,
    file_sha256,
    record_digest,
    recorded_digest,
    write_folder_digests,
    set_aside,
    check_file,
    check_folder,
    read_json_checked,
    remove_stale_tmp,
    remove_checkpoints,
)
from apd.base.lock import file_lock, LockBusy, held_lock
from apd.base.device import resolve_device, cpu_threads
from apd.base.paths import project_root, user_cache_dir, cache_dir
from apd.base.checks import number, count
from apd.base.progress import PROGRESS_ENV, progress_enabled, PROGRESS_FILE_ENV, progress_bar


__all__ = [
    "DIGESTS",
    "LockBusy",
    "NOTICES_ENV",
    "PROGRESS_ENV",
    "PROGRESS_FILE_ENV",
    "atomic_write",
    "cache_dir",
    "check_file",
    "check_folder",
    "checks",
    "count",
    "cpu_threads",
    "device",
    "file_lock",
    "file_sha256",
    "held_lock",
    "io",
    "lock",
    "notify",
    "number",
    "paths",
    "progress",
    "progress_bar",
    "progress_enabled",
    "project_root",
    "read_json_checked",
    "record_digest",
    "recorded_digest",
    "remove_checkpoints",
    "remove_stale_tmp",
    "resolve_device",
    "set_aside",
    "torch_save",
    "user_cache_dir",
    "write_folder_digests",
    "write_json",
]
