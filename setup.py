"""Everything about the package is in pyproject.toml; this adds one build step: the wheel carries the
checkout's ``profiles/*.yml`` (the source of truth), and ``_toc.yml`` for the chapters' order, as ``apd/packaged_profiles/``, where the installed
``apd`` command finds them (:func:`apd.build.profiles_dir`). An editable install reads
``profiles/`` in the checkout and copies nothing."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithProfiles(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "apd" / "packaged_profiles"
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted((HERE / "profiles").glob("*.yml")) + [HERE / "_toc.yml"]:
            self.copy_file(str(source), str(target / source.name))


setup(cmdclass={"build_py": BuildWithProfiles})
