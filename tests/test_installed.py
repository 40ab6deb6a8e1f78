"""A folder named like a package on sys.path (a test folder) is not the package installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade.installed import is_installed


def test_a_folder_of_the_name_is_not_the_package(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "spade_shadow_pkg").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert not is_installed("spade_shadow_pkg")
    (tmp_path / "spade_shadow_pkg" / "__init__.py").write_text("")
    assert is_installed("spade_shadow_pkg")


def test_modules_with_code_are_installed_and_absent_ones_are_not() -> None:
    assert is_installed("json") and is_installed("sys") and is_installed("spade.textfile")
    assert not is_installed("spade_no_such_module")
    assert not is_installed("spade_no_such_module.child")
