"""Foundations every stage uses: atomic files, a file lock, device resolution, project paths,
progress bars.

Nothing here imports another part of ``apd``.
"""
from apd.base.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    # apd.base.io
    "atomic_write": "apd.base.io", "write_json": "apd.base.io", "torch_save": "apd.base.io",
    "DIGESTS": "apd.base.io", "NOTICES_ENV": "apd.base.io", "notify": "apd.base.io",
    "file_sha256": "apd.base.io", "record_digest": "apd.base.io", "recorded_digest": "apd.base.io",
    "write_folder_digests": "apd.base.io", "set_aside": "apd.base.io", "check_file": "apd.base.io",
    "check_folder": "apd.base.io", "read_json_checked": "apd.base.io", "remove_stale_tmp": "apd.base.io",
    "remove_checkpoints": "apd.base.io", "io": "apd.base.io",
    # apd.base.lock
    "file_lock": "apd.base.lock", "LockBusy": "apd.base.lock", "held_lock": "apd.base.lock",
    "lock": "apd.base.lock",
    # apd.base.device
    "resolve_device": "apd.base.device", "cpu_threads": "apd.base.device", "device": "apd.base.device",
    # apd.base.paths
    "project_root": "apd.base.paths", "user_cache_dir": "apd.base.paths", "cache_dir": "apd.base.paths",
    "paths": "apd.base.paths",
    # apd.base.lazy
    "attach": "apd.base.lazy", "lazy": "apd.base.lazy",
    # apd.base.checks
    "number": "apd.base.checks", "count": "apd.base.checks", "checks": "apd.base.checks",
    # apd.base.progress
    "PROGRESS_ENV": "apd.base.progress", "progress_enabled": "apd.base.progress",
    "PROGRESS_FILE_ENV": "apd.base.progress", "progress_bar": "apd.base.progress",
    "progress": "apd.base.progress",
})
