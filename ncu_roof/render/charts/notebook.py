"""Charts for notebooks: an Altair chart in, the same chart out, shown by Jupyter as SVG drawn here.

Altair's own display loads Vega from a CDN, so a chart fails offline and in an exported notebook.
:func:`offline` gives a chart (and every chart derived from it with ``.properties()``,
``.configure_*()`` and the like, which keep its class) a display of its own: the SVG vl-convert
draws, with no script to run and nothing to fetch. It is still an Altair chart (``to_dict``,
``save``, composition).
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def svg(chart: Any) -> str:
    """A chart (Altair's or one built by :mod:`.vegalite`) or a Vega-Lite spec as SVG, drawn by vl-convert."""
    from ncu_roof.render.charts.save import _vl_convert, chart_spec

    spec = chart if isinstance(chart, dict) else chart_spec(chart)
    return str(_vl_convert("a chart in a notebook").vegalite_to_svg(spec))


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


class OfflineDisplay:
    """Mixin placed before an Altair chart class: Jupyter gets the chart as SVG (``image/svg+xml``)."""

    def _repr_mimebundle_(self, *args: Any, **kwds: Any) -> dict[str, str]:
        title = type(self).__mro__[2].__name__  # the Altair class this one extends
        try:
            drawn = svg(self)
        except Exception as exc:  # noqa: BLE001 - a display must not raise; say what went wrong instead
            return {"text/plain": f"<{title}: not drawn: {_first_line(exc)}>"}
        return {"image/svg+xml": drawn, "text/plain": f"<{title} drawn as SVG>"}


_CLASSES: dict[type, type] = {}


def offline(chart: T) -> T:
    """``chart``, displayed offline from now on (None passes through); returns the same object."""
    if chart is None or isinstance(chart, OfflineDisplay):
        return chart
    base = type(chart)
    cls = _CLASSES.get(base)
    if cls is None:
        cls = _CLASSES.setdefault(base, type(base.__name__, (OfflineDisplay, base),
                                             {"__module__": __name__, "__doc__": base.__doc__}))
    object.__setattr__(chart, "__class__", cls)  # Altair's __setattr__ would store it as a chart property
    return chart
