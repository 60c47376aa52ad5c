"""The Vega bundle inlined in HTML output is built by vl-convert once per version and kept on disk."""

from __future__ import annotations

import hashlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from ncu_roof.render.charts import save


class _FakeVlConvert(types.ModuleType):
    """vl_convert with a bundle that counts how often it was built."""

    def __init__(self, version: str | None = "9.9.9") -> None:
        super().__init__("vl_convert")
        if version is not None:
            self.__version__ = version
        self.built = 0

    def javascript_bundle(self) -> str:
        self.built += 1
        return "const vega = 1;\r\nconst ü = 2;\n"  # a CR and a non-ASCII letter kept as they are


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[_FakeVlConvert]:
    module = _FakeVlConvert()
    monkeypatch.setitem(sys.modules, "vl_convert", module)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    save.vega_bundle.cache_clear()
    yield module
    save.vega_bundle.cache_clear()  # no test after this one may get the fake bundle


def _fresh_bundle() -> str:
    save.vega_bundle.cache_clear()  # as a new process would
    return save.vega_bundle()


def test_built_once_then_read_from_the_cache(fake: _FakeVlConvert, tmp_path: Path) -> None:
    bundle = "const vega = 1;\r\nconst ü = 2;\n"
    assert _fresh_bundle() == bundle and fake.built == 1
    path = tmp_path / "cache" / "ncu-roof" / "vega-bundle-9.9.9.js"
    digest = hashlib.sha256(bundle.encode("utf-8")).hexdigest()
    assert path.read_bytes() == f"// ncu-roof vega bundle sha256 {digest}\n{bundle}".encode()
    assert _fresh_bundle() == bundle and fake.built == 1  # read back, not built


def test_a_damaged_cache_is_built_again(fake: _FakeVlConvert, tmp_path: Path) -> None:
    _fresh_bundle()
    path = tmp_path / "cache" / "ncu-roof" / "vega-bundle-9.9.9.js"
    for damage in (path.read_bytes()[:-3], b"", b"\xff\xfe not utf-8", path.read_bytes().replace(b"vega", b"vegb")):
        path.write_bytes(damage)
        built = fake.built
        assert _fresh_bundle() == "const vega = 1;\r\nconst ü = 2;\n"
        assert fake.built == built + 1
    assert _fresh_bundle() and fake.built == built + 1  # the rebuilt copy is good again


def test_no_cache_where_it_cannot_be_written_or_keyed(fake: _FakeVlConvert, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # its "folder" is a file: nothing can be written
    assert _fresh_bundle() and _fresh_bundle() and fake.built == 2
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    del fake.__version__  # no version to key a cached copy by
    assert _fresh_bundle() and _fresh_bundle() and fake.built == 4
    assert not (tmp_path / "cache").exists()
