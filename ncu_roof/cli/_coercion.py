"""Option values converted without pydantic where typer's own functions do all the work.

typer 0.29 converts every parameter's value through a pydantic ``TypeAdapter`` built on first use,
for the parameters left out too: importing pydantic and building the adapters took 0.1-0.2 s of
every command, while the pool already reads a big report. A value left out needs no adapter (typer
gives None or an empty tuple before using it); for a choice (an ``Enum``), a path, or a list of
either, the adapter only calls typer's ``coerce_cli_choice`` or ``coerce_cli_path`` (the path made
from the text first, as pydantic's path validator does: ``Path(text)``). :class:`DirectParam` does
that itself and builds typer's adapter only for any other value, and for any value typer's functions
refuse, so every conversion and every error is typer's own. Nothing is changed where typer has no
adapters (before 0.29).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin


def install() -> None:
    """Give typer's parameters :class:`DirectParam` where it applies (typer >= 0.29)."""
    try:
        from typer.core import _TyperParameter
    except ImportError:  # typer before 0.29: no adapters to spare
        return
    if not hasattr(_TyperParameter, "get_runtime_param") or hasattr(_TyperParameter, "_ncu_roof_direct"):
        return
    original = _TyperParameter.get_runtime_param
    try:
        direct = _direct_param_class()
    except (ImportError, AttributeError):  # typer's internals moved: its own conversion, as it is
        return

    def get_runtime_param(self: Any) -> Any:
        try:
            if self._runtime_param is None and self.type_descriptor.file_annotation is None:  # files: typer's
                self._runtime_param = direct(self.type_descriptor, direct_leaf(self.type_descriptor))
        except Exception:  # noqa: BLE001 - a typer whose parameters changed shape: its own conversion
            self._runtime_param = None
        return original(self)

    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
    _TyperParameter._ncu_roof_direct = True  # type: ignore[attr-defined]


def _direct_param_class() -> type:
    """:class:`DirectParam`, a typer ``RuntimeParam``."""
    from typer import _coercion, _param_types

    base: Any = _coercion.RuntimeParam

    class DirectParam(base):  # type: ignore[misc,valid-type]
        """A parameter's conversion: by typer's own choice and path functions where ``leaf`` says
        so; else, and for a value they refuse, by typer's adapter, built then."""

        def __init__(self, descriptor: Any, leaf: Any) -> None:
            super().__init__(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)
            object.__setattr__(self, "descriptor", descriptor)
            object.__setattr__(self, "leaf", leaf)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                if self.leaf is None:
                    raise LookupError("no direct conversion")
                if get_origin(self.annotation) is list:
                    items = value if isinstance(value, (list, tuple)) else [value]
                    return [self._leaf(item, param, ctx) for item in items]
                return self._leaf(value, param, ctx)
            except Exception:  # noqa: BLE001 - typer's adapter converts it again and says what is wrong
                adapted = _coercion.build_runtime_param(self.descriptor)
                param._runtime_param = adapted
                return adapted._coerce_value(value, param=param, ctx=ctx)

        def _leaf(self, value: Any, param: Any, ctx: Any) -> Any:
            info = self.parameter_info
            if self.leaf is not Path:
                return _param_types.coerce_cli_choice(value, choices=tuple(self.leaf),
                                                      case_sensitive=info.case_sensitive, ctx=ctx)
            annotation = get_args(self.annotation)[0] if get_origin(self.annotation) is list else self.annotation
            path_type = info.path_type or annotation
            if isinstance(value, str):
                value = path_type(value)  # pydantic's path validator: the path type of the text
            return _param_types.coerce_cli_path(value, info, path_type=path_type, param=param, ctx=ctx)

    return DirectParam


def direct_leaf(descriptor: Any) -> Any:
    """What :class:`DirectParam` converts the parameter to: its ``Enum`` (a choice), ``Path`` (a
    path type, the path made from text), or None where typer's adapter must (any other annotation, a
    parser, a file, a path type that is not a ``Path``)."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or getattr(info, "parser", None) is not None:
        return None
    annotation = descriptor.annotation
    if get_origin(annotation) is list:
        args = get_args(annotation)
        if len(args) != 1 or get_origin(args[0]) is not None:
            return None
        annotation = args[0]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return annotation
    path_type = info.path_type or annotation
    if isinstance(annotation, type) and issubclass(annotation, Path) and isinstance(path_type, type) \
            and issubclass(path_type, Path):
        return Path
    return None
