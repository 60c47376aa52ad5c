"""Vega-Lite specs written as Altair writes them, without Altair: the part of its API the charts use.

Altair builds a chart as a tree of schema objects, copies every subchart it layers and parses each
shorthand against the schema: 0.25-0.3 s of a report's charts, and 0.27 s more to import it. Here a
chart is plain dicts. :meth:`Chart.to_dict` returns the dict Altair's ``to_dict()`` would, key for
key and in the same order (the default theme's view size first, ``$schema`` last); every chart also
remembers the calls that made it, and :func:`to_altair` makes them again in Altair, for callers that
want an Altair chart (the notebook, ``DiagnosisResult.chart``) and for the tests that compare the two.

Supported: ``Chart(Data(values=rows))`` with ``mark_*``, ``encode`` (channel objects, ``"field:T"``
shorthands, :func:`value`, :func:`condition`), ``properties``, ``resolve_scale`` and ``configure_*``;
:func:`layer`, :func:`vconcat`, :func:`hconcat` and ``+``; data shared by every subchart is lifted
to their parent, as Altair does. What Altair would write otherwise raises: a chart without data (it
would add an empty dataset), a concatenation in a layer, other shorthands, channels or values.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, ClassVar, Self, TypeVar

import numpy as np

SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.4.1.json"  # altair 6's; the tests compare
DEFAULT_VIEW = {"continuousWidth": 300, "continuousHeight": 300}  # Altair's default theme
TYPE_CODES = {"Q": "quantitative", "N": "nominal", "O": "ordinal", "T": "temporal", "G": "geojson"}
_SHORTHAND = re.compile(r"(?P<field>[^()]+):(?P<code>[QNOTG])")
LAYER_PROPS = ("height", "width", "view")  # what a layer's parent takes from its subcharts

Call = tuple[Any, str, tuple[Any, ...], dict[str, Any]]  # (owner or None for the module, name, args, kwargs)
T = TypeVar("T", bound="TopLevel")


class Made:
    """Something built here that remembers the call that made it (see :func:`to_altair`)."""

    _call: Call


def _ordered(props: dict[str, Any], first: tuple[str, ...]) -> dict[str, Any]:
    """Altair's key order: a schema class's required properties first, then the rest sorted."""
    out = {k: props[k] for k in first if k in props}
    out.update((k, props[k]) for k in sorted(props) if k not in out)
    return out


def _plain(value: Any, has_data: bool = False) -> Any:
    """``value`` as Altair writes it: objects built here as dicts, numpy numbers as floats, tuples
    and arrays as lists. ``has_data``: whether a chart above holds data (for subcharts)."""
    kind = type(value)
    if kind is str or kind is float or kind is int or kind is bool or value is None:
        return value
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value]
    if isinstance(value, np.number):
        return float(value)
    if isinstance(value, TopLevel):
        return value._spec(has_data)
    if isinstance(value, SchemaObject):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v, has_data) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, has_data) for k, v in value.items()}
    if isinstance(value, np.datetime64 | datetime.date) or (
            hasattr(value, "__iter__") and not isinstance(value, str | bytes)):
        raise TypeError(f"no Vega-Lite value for a {kind.__name__} here (Altair would convert it)")
    return value  # as Altair passes it too (numpy booleans, pandas' NA)


# --- schema objects: scales, axes, legends, titles, data, encoding channels ---------------------------
class SchemaObject(Made):
    """A Vega-Lite object given by its properties (``Scale``, ``Axis``...), written in Altair's order."""

    _first: ClassVar[tuple[str, ...]] = ()  # the class's required properties, written first
    _positional: ClassVar[str | None] = None  # the property a positional argument sets

    def __init__(self, *args: Any, **props: Any) -> None:
        self._call = (None, type(self).__name__, args, props)
        if args:
            if len(args) > 1 or self._positional is None:
                raise TypeError(f"{type(self).__name__} takes at most one positional argument")
            props = {self._positional: args[0], **props}
        self._props = props

    def to_dict(self) -> dict[str, Any]:
        return {k: _plain(v) for k, v in _ordered(self._props, self._first).items()}


class Scale(SchemaObject):
    pass


class Axis(SchemaObject):
    pass


class Legend(SchemaObject):
    pass


class TitleParams(SchemaObject):
    _first = ("text",)
    _positional = "text"


class Data(SchemaObject):
    """Inline rows (``Data(values=rows)``); its properties keep the order given, as in Altair."""

    def to_dict(self) -> dict[str, Any]:
        return {k: _plain(v) for k, v in self._props.items()}


class Channel(SchemaObject):
    """An encoding channel: a ``"field:T"`` shorthand (T one of Q, N, O, T, G) and properties."""

    _positional = "shorthand"
    typed: ClassVar[bool] = True  # False where Vega-Lite's channel has no type (x2, y2): Altair drops it

    def to_dict(self) -> dict[str, Any]:
        props = dict(self._props)
        shorthand = props.pop("shorthand", None)
        if shorthand is not None:
            match = _SHORTHAND.fullmatch(shorthand) if isinstance(shorthand, str) else None
            if match is None:
                raise ValueError(f"shorthand {shorthand!r}: only 'field:T' is supported here")
            props.setdefault("field", match["field"])
            if self.typed:
                props.setdefault("type", TYPE_CODES[match["code"]])
        return {k: _plain(v) for k, v in _ordered(props, ()).items()}


class X(Channel):
    pass


class Y(Channel):
    pass


class X2(Channel):
    typed = False


class Y2(Channel):
    typed = False


class Color(Channel):
    pass


class Size(Channel):
    pass


class Shape(Channel):
    pass


class StrokeDash(Channel):
    pass


class Angle(Channel):
    pass


class Detail(Channel):
    pass


class Order(Channel):
    pass


class Text(Channel):
    pass


class Tooltip(Channel):
    pass


CHANNELS: dict[str, type[Channel]] = {
    "x": X, "y": Y, "x2": X2, "y2": Y2, "color": Color, "size": Size, "shape": Shape, "strokeDash": StrokeDash,
    "angle": Angle, "detail": Detail, "order": Order, "text": Text, "tooltip": Tooltip}


def _channel(name: str, value: Any) -> Any:
    """An encoding's value for channel ``name``: a shorthand becomes the channel's object."""
    if name not in CHANNELS:
        raise ValueError(f"channel {name!r} is not supported here")
    if isinstance(value, str):
        return CHANNELS[name](value)
    if isinstance(value, list | tuple):
        return [_channel(name, v) for v in value]
    if isinstance(value, Channel | dict):
        return value
    raise TypeError(f"channel {name!r}: a shorthand, a channel, value() or condition(), not {type(value).__name__}")


def value(constant: Any) -> dict[str, Any]:
    """A constant for a channel: ``{"value": constant}``."""
    return {"value": constant}


def condition(test: str, if_true: dict[str, Any], if_false: dict[str, Any]) -> dict[str, Any]:
    """``if_true`` where the Vega expression ``test`` holds, else ``if_false`` (both :func:`value`)."""
    return {"condition": {"test": test, **if_true}, **if_false}


# --- charts -------------------------------------------------------------------------------------
class TopLevel(Made):
    """What every chart has: properties, configuration, scale resolution, ``to_dict``."""

    _first: ClassVar[tuple[str, ...]]
    _props: dict[str, Any]

    @classmethod
    def _new(cls, props: dict[str, Any], call: Call) -> Self:
        chart = cls.__new__(cls)
        chart._props, chart._call = props, call
        return chart

    def _made(self, call: Call, **changes: Any) -> Self:
        """A copy with ``changes`` to its properties, made by ``call``."""
        return self._new({**self._props, **changes}, call)

    def _without(self, key: str) -> Self:
        """A copy without property ``key`` (for a parent that takes it over)."""
        return self._new({k: v for k, v in self._props.items() if k != key}, self._call)

    @property
    def data(self) -> Data | None:
        return self._props.get("data")

    def properties(self, **props: Any) -> Self:
        return self._made((self, "properties", (), props), **props)

    def resolve_scale(self, **channels: str) -> Self:
        resolve = {**self._props.get("resolve", {}), "scale": _ordered(channels, ())}
        return self._made((self, "resolve_scale", (), channels), resolve=resolve)

    def _configure(self, part: str, props: dict[str, Any]) -> Self:
        config = {**self._props.get("config", {}), part: _ordered(props, ())}
        return self._made((self, f"configure_{part}", (), props), config=config)

    def configure_axis(self, **props: Any) -> Self:
        return self._configure("axis", props)

    def configure_legend(self, **props: Any) -> Self:
        return self._configure("legend", props)

    def configure_title(self, **props: Any) -> Self:
        return self._configure("title", props)

    def configure_view(self, **props: Any) -> Self:
        return self._configure("view", props)

    def _spec(self, has_data: bool) -> dict[str, Any]:
        """The chart's dict below the top level (``has_data``: a parent holds data)."""
        inner = has_data or "data" in self._props
        return {k: _plain(v, inner) for k, v in _ordered(self._props, self._first).items()}

    def to_dict(self) -> dict[str, Any]:
        """The Vega-Lite spec, as Altair's ``to_dict()`` writes it (under its default theme)."""
        spec = self._spec(False)
        config = spec.pop("config", {})
        view = {**DEFAULT_VIEW, **config.get("view", {})}
        return {"config": {"view": view, **{k: v for k, v in config.items() if k != "view"}}, **spec,
                "$schema": SCHEMA_URL}

    def __add__(self, other: TopLevel) -> LayerChart:
        return LayerChart._of([self, other], {}, (self, "__add__", (other,), {}))


class Chart(TopLevel):
    """One mark over one data set: ``Chart(Data(values=rows)).mark_point(...).encode(...)``."""

    _first = ("data", "mark")

    def __init__(self, data: Data | None = None, **props: Any) -> None:
        self._props = {**({"data": data} if data is not None else {}), **props}
        self._call = (None, "Chart", (data,) if data is not None else (), props)

    def _spec(self, has_data: bool) -> dict[str, Any]:
        if not has_data and "data" not in self._props:
            raise ValueError("a chart without data (Altair would give it an empty dataset)")
        return super()._spec(has_data)

    def encode(self, **channels: Any) -> Chart:
        encoding = {**self._props.get("encoding", {}), **{k: _channel(k, v) for k, v in channels.items()}}
        return self._made((self, "encode", (), channels), encoding=_ordered(encoding, ()))

    def _mark(self, kind: str, props: dict[str, Any]) -> Chart:
        return self._made((self, f"mark_{kind}", (), props), mark={"type": kind, **_ordered(props, ())})

    def mark_bar(self, **props: Any) -> Chart:
        return self._mark("bar", props)

    def mark_circle(self, **props: Any) -> Chart:
        return self._mark("circle", props)

    def mark_line(self, **props: Any) -> Chart:
        return self._mark("line", props)

    def mark_point(self, **props: Any) -> Chart:
        return self._mark("point", props)

    def mark_rule(self, **props: Any) -> Chart:
        return self._mark("rule", props)

    def mark_text(self, **props: Any) -> Chart:
        return self._mark("text", props)


def _lift_data(data: Data | None, charts: list[TopLevel]) -> tuple[Data | None, list[TopLevel]]:
    """Data held by every subchart (the same object) moves to the parent, as Altair does."""
    if not charts:
        return data, charts
    if data is None:
        first = charts[0].data
        if first is None or any(c.data is not first for c in charts):
            return data, charts
        data = first
    elif any(c.data is not None and c.data is not data for c in charts):
        return data, charts
    return data, [c._without("data") if c.data is not None else c for c in charts]


def _check_layerable(charts: list[TopLevel]) -> None:
    if not all(isinstance(c, Chart | LayerChart) for c in charts):
        raise ValueError("only charts and layers can be layered")


def _compound(cls: type[T], key: str, charts: list[TopLevel], props: dict[str, Any], call: Call) -> T:
    """A chart of subcharts (``key``: layer, vconcat, hconcat), their shared data lifted to it."""
    data, charts = _lift_data(props.get("data"), charts)
    return cls._new({**props, key: charts, **({"data": data} if data is not None else {})}, call)


class LayerChart(TopLevel):
    """Charts drawn over one another in one view."""

    _first = ("layer",)

    @classmethod
    def _of(cls, charts: list[TopLevel], props: dict[str, Any], call: Call) -> LayerChart:
        """Altair's ``LayerChart(layer=charts)``: shared data lifted, then the size and view of
        the subcharts (equal where given) taken by the layer."""
        _check_layerable(charts)
        chart = _compound(cls, "layer", charts, props, call)
        layers, own = chart._props["layer"], dict(chart._props)
        for prop in LAYER_PROPS:
            values = ([own[prop]] if prop in own else []) + [c._props[prop] for c in layers if prop in c._props]
            if any(v != values[0] for v in values[1:]):
                raise ValueError(f"There are inconsistent values {values} for {prop}")
            if values:
                own[prop] = values[0]
                layers = [c._without(prop) if prop in c._props else c for c in layers]
        chart._props = {**own, "layer": layers}
        return chart

    def __add__(self, other: TopLevel) -> LayerChart:
        _check_layerable([other])
        data, layers = _lift_data(self.data, [*self._props["layer"], other])
        return self._made((self, "__add__", (other,), {}), layer=layers, **({"data": data} if data is not None else {}))


class VConcatChart(TopLevel):
    """Charts one above the other."""

    _first = ("vconcat",)


class HConcatChart(TopLevel):
    """Charts side by side."""

    _first = ("hconcat",)



def layer(*charts: TopLevel, **props: Any) -> LayerChart:
    return LayerChart._of(list(charts), props, (None, "layer", charts, props))


def vconcat(*charts: TopLevel, **props: Any) -> VConcatChart:
    return _compound(VConcatChart, "vconcat", list(charts), props, (None, "vconcat", charts, props))


def hconcat(*charts: TopLevel, **props: Any) -> HConcatChart:
    return _compound(HConcatChart, "hconcat", list(charts), props, (None, "hconcat", charts, props))


# --- the same chart in Altair -------------------------------------------------------------------
def to_altair(built: Any) -> Any:
    """The Altair object made by the calls that made ``built`` (a chart or anything built here),
    each object once (so shared data stays shared); anything else inside is passed as it is."""
    import altair as alt

    made: dict[int, Any] = {}

    def again(value: Any) -> Any:
        if isinstance(value, Made):
            if id(value) not in made:
                owner, name, args, kwargs = value._call
                function = getattr(alt if owner is None else again(owner), name)
                made[id(value)] = function(*again(list(args)), **again(kwargs))
            return made[id(value)]
        if isinstance(value, list | tuple):
            return type(value)(again(v) for v in value)
        if isinstance(value, dict):
            return {k: again(v) for k, v in value.items()}
        return value

    return again(built)
