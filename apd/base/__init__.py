"""Foundations every stage uses: atomic files, a file lock, device resolution, project paths,
progress bars.

Nothing here imports another part of ``apd``.
"""
from apd.base import io, lock, device, paths, checks, progress
from apd.base.io import (
    atomic_write, write_json, torch_save, DIGESTS, NOTICES_ENV, notify, file_sha256, record_digest, recorded_digest,
    write_folder_digests, set_aside, check_file, check_folder, read_json_checked, remove_stale_tmp, remove_checkpoints,
)
from apd.base.lock import file_lock, LockBusy, held_lock
from apd.base.device import resolve_device, cpu_threads
from apd.base.paths import project_root, user_cache_dir, cache_dir
from apd.base.checks import number, count
from apd.base.progress import PROGRESS_ENV, progress_enabled, PROGRESS_FILE_ENV, progress_bar

__all__ = [
    "io", "lock", "device", "paths", "checks", "progress", "atomic_write", "write_json", "torch_save", "DIGESTS",
    "NOTICES_ENV", "notify", "file_sha256", "record_digest", "recorded_digest", "write_folder_digests", "set_aside",
    "check_file", "check_folder", "read_json_checked", "remove_stale_tmp", "remove_checkpoints", "file_lock",
    "LockBusy", "held_lock", "resolve_device", "cpu_threads", "project_root", "user_cache_dir", "cache_dir", "number",
    "count", "PROGRESS_ENV", "progress_enabled", "PROGRESS_FILE_ENV", "progress_bar",
]
