"""Chart files: a chart (or a diagnosis: its main chart) in, a Vega-Lite spec or a file out.

:func:`save_chart` writes .html (self-contained, the Vega libraries inlined), .json (the
Vega-Lite spec), .png or .svg (through vl-convert); :func:`check_chart_path` refuses a path
before any work is done.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ncu_roof.errors import InputError
from ncu_roof.files import check_writable, write_atomic
from ncu_roof.render.charts import vegalite as vl
from ncu_roof.render.charts.points import PNG_HINT, _finite_json, _json_default, script_json
from ncu_roof.render.charts.views import _main_chart


# --- specs and files -----------------------------------------------------------------------------
def chart_spec(chart: Any, validate: bool = False) -> dict[str, Any]:
    """The Vega-Lite spec of a chart: one built by :mod:`.vegalite` (no Altair needed) or an Altair
    chart (Altair's row limit lifted for this conversion only). Not checked against Vega-Lite's JSON
    schema unless ``validate`` (through Altair: the check changes nothing and took 0.1-0.2 s of a
    10,000-launch report; the chart tests validate every chart)."""
    if isinstance(chart, vl.TopLevel):
        if not validate:
            return _finite_json(chart.to_dict())
        chart = vl.to_altair(chart)
    import altair as alt

    with alt.data_transformers.disable_max_rows():
        return _finite_json(chart.to_dict(validate=validate))


def _vl_convert(what: str) -> Any:
    try:
        import vl_convert
    except ImportError as exc:
        raise InputError(f"{what} needs vl-convert-python: {PNG_HINT}") from exc
    return vl_convert


@lru_cache(maxsize=1)
def vega_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script (from vl-convert), to inline in HTML.

    Building it takes vl-convert about 2 s, so it is kept, once per vl-convert version, in the
    user's cache folder (:func:`bundle_cache_path`) with its SHA-256 on the first line; a cached
    copy that cannot be read or fails its checksum is built again, and a cache that cannot be
    written is done without."""
    vl_convert = _vl_convert("a self-contained HTML chart")
    path = bundle_cache_path(getattr(vl_convert, "__version__", None))
    cached = _cached_bundle(path) if path is not None else None
    if cached is not None:
        return cached
    bundle: str = vl_convert.javascript_bundle()
    if path is not None:
        digest = hashlib.sha256(bundle.encode("utf-8")).hexdigest()
        with contextlib.suppress(OSError, InputError):
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, f"{_BUNDLE_MARK}{digest}\n{bundle}")
    return bundle


_BUNDLE_MARK = "// ncu-roof vega bundle sha256 "


def bundle_cache_path(version: str | None) -> Path | None:
    """``$XDG_CACHE_HOME/ncu-roof/vega-bundle-<vl-convert version>.js`` (default ``~/.cache``);
    None without a version to key it by or a home folder."""
    from ncu_roof.files import user_cache_dir

    folder = user_cache_dir() if version else None
    return None if folder is None else folder / f"vega-bundle-{version}.js"


def _cached_bundle(path: Path) -> str | None:
    try:
        head, bundle = path.read_bytes().decode("utf-8").split("\n", 1)  # no newline translation
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    digest = hashlib.sha256(bundle.encode("utf-8")).hexdigest()
    return bundle if head == f"{_BUNDLE_MARK}{digest}" else None


# A chart shrinks to its page (never grows): the SVG keeps its layout (labels, roof angles) and scales
# by its viewBox, so the legend and every point stay on screen in a narrow window.
FIT_CSS = (".chart .vega-embed { display: block; max-width: 100%; } "
           ".chart svg.marks { display: block; max-width: 100%; height: auto; }")

EMBED_JS = """
document.querySelectorAll('script[type="application/json"][data-chart]').forEach(function (el) {
  vegaEmbed('#' + el.dataset.chart, JSON.parse(el.textContent), {actions: false, renderer: 'svg'})
    .catch(function (err) { document.getElementById(el.dataset.chart).textContent = 'chart failed: ' + err; });
});
"""


def chart_html(spec: dict[str, Any], title: str = "ncu-roof roofline") -> str:
    """A self-contained HTML page with one chart (no network needed)."""
    import html

    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title>\n"
            f"<style>{FIT_CSS}</style>\n<script>{vega_bundle()}</script></head>\n"
            "<body><div class=\"chart\" id=\"chart0\"></div>\n"
            f"<script type=\"application/json\" data-chart=\"chart0\">{script_json(spec)}</script>\n"
            f"<script>{EMBED_JS}</script></body></html>\n")


CHART_SUFFIXES = (".html", ".json", ".png", ".svg")


def check_chart_path(path: str | Path, force: bool = False) -> Path:
    """Raise the one-line InputError that saving a chart at ``path`` would raise, before any work:
    a suffix other than .html/.json/.png/.svg, an existing file without ``force``, no folder, or
    .html/.png/.svg without vl-convert-python (it supplies the inlined Vega and the renderer)."""
    path = Path(path)
    check_writable(path, force, CHART_SUFFIXES, "chart", "--chart")
    if path.suffix.lower() != ".json":
        _vl_convert(f"saving {path.suffix.lower()}")
    return path


def save_chart(chart: Any, path: str | Path, force: bool = False) -> Path:
    """Save a chart by suffix: .html (self-contained, works offline), .json (the Vega-Lite spec),
    .png or .svg; never overwrite without ``force``. ``chart`` is a chart (built by :mod:`.vegalite`
    or Altair's), a Vega-Lite spec, or a Diagnosis (its main chart: the roofline, or speed of light
    where nothing can be placed). The one save path of every chart the tool writes."""
    path = check_chart_path(path, force)
    if hasattr(chart, "placed"):
        chart = _main_chart(chart)[1]
    spec = chart if isinstance(chart, dict) else chart_spec(chart)
    suffix = path.suffix.lower()
    if suffix == ".json":
        data: str | bytes = json.dumps(spec, indent=2, allow_nan=False, default=_json_default) + "\n"
    elif suffix == ".html":
        data = chart_html(spec, _title_text(spec))
    elif suffix == ".png":
        data = _vl_convert("PNG export").vegalite_to_png(spec, scale=2)
    else:
        data = _vl_convert("SVG export").vegalite_to_svg(spec)
    return write_atomic(path, data)


def _title_text(spec: dict[str, Any]) -> str:
    """The page title of a chart: its own title, else the roofline's."""
    title = spec.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    return str(text) if isinstance(text, str) and text else "ncu-roof roofline"
