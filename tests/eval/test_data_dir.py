"""How records name the data directory: never a machine's absolute path for the default."""

from __future__ import annotations

from pathlib import Path

from eval.data import project_root, recorded_data_dir


def test_default_data_dir_is_recorded_relative_to_the_project(tmp_path: Path) -> None:
    default = (project_root().parent / "shared" / "data").resolve()
    assert recorded_data_dir(default) == "../shared/data"
    assert recorded_data_dir(tmp_path) == str(tmp_path)
