"""A trace's events decoded by msgspec, where it is installed (the ``fast`` extra), into structs of
the fields the reader uses: three times the standard library's decoder on a big trace, and the
fields it never reads (``queued``, ``context``, ``est. achieved occupancy %``...) never become
Python objects.

Enters: the text of a JSON list of events (the whole events of a chunk, as
:mod:`ncu_roof.read.trace.kineto` cuts them). Leaves: a list of :class:`Event`, or None where
msgspec is not installed or refuses the text: then the standard library decodes it as before.
What msgspec accepts the standard library accepts as the same values: numbers with a fraction or
an exponent stay text (``float_hook=str``, as ``parse_float=str``), the last of a repeated key
wins; NaN, control characters in strings, lone surrogates and nesting past the recursion limit
are refused. An event that is no object, or whose ``args`` is no object, refuses the whole list
(the standard library reads it).

The structs keep the launch arguments read as numbers as float (NaN where absent: no JSON value
decodes as NaN; one that is no number refuses the list), the grid, block and input shapes as their
JSON text (``Raw``), which :mod:`ncu_roof.read.trace.fields` reads once per distinct text, and the
time ``ts`` as its JSON text too, read a batch at a time by :mod:`ncu_roof.read.trace.times`.
"""

from __future__ import annotations

from typing import Any

try:
    import msgspec
except ImportError:  # the standard library's decoder reads every trace without it
    msgspec = None  # type: ignore[assignment]

TOP = ("ph", "cat", "name", "pid", "tid", "id")  # as decoded (numbers with a fraction as text); ``ts`` as its text
# launch arguments read as numbers (float: an int, or a number with a fraction, as float() reads its text;
# anything else refuses the list) -> their attribute; NaN where absent (no JSON value decodes as NaN)
NUMBERS = {"correlation": "correlation", "device": "device", "stream": "stream",
           "registers per thread": "registers", "shared memory": "shared", "bytes": "nbytes"}
# arguments kept as their JSON text (b"" where absent), decoded once per distinct text
TEXTS = {"grid": "grid", "block": "block", "Input Dims": "dims", "Input type": "types"}
NAN = float("nan")

if msgspec is not None:
    from msgspec import Raw, Struct, field

    class Args(Struct, gc=False, frozen=True):
        """The ``args`` of an event: the launch arguments and input shapes the reader uses."""

        correlation: float = NAN
        device: float = NAN
        stream: float = NAN
        registers: float = field(default=NAN, name="registers per thread")
        shared: float = field(default=NAN, name="shared memory")
        nbytes: float = field(default=NAN, name="bytes")
        grid: Raw = Raw()
        block: Raw = Raw()
        dims: Raw = field(default=Raw(), name="Input Dims")
        types: Raw = field(default=Raw(), name="Input type")

    NO_ARGS = Args()  # shared by the events without ``args`` (flows: no Args made, nor a call, for each)

    class Event(Struct, gc=False):
        """One event: the fields the reader uses (None where missing; ``dur`` NaN)."""

        ph: Any = None
        cat: Any = None
        name: Any = None
        pid: Any = None
        tid: Any = None
        ts: Raw = Raw()  # its JSON text: read a batch at a time (read.trace.times), no float_hook call an event
        dur: float = NAN
        id: Any = None
        args: Args = NO_ARGS

    _DECODER: Any = msgspec.json.Decoder(list[Event], float_hook=str)
    _REFUSED: tuple[type[BaseException], ...] = (msgspec.DecodeError, RecursionError)
else:  # pragma: no cover - the tests run with msgspec installed, and with this module's decoder off
    _DECODER = None
    _REFUSED = ()


def decode_events(text: str) -> list[Any] | None:
    """The events of ``text`` as :class:`Event` structs; None without msgspec or where it refuses."""
    if _DECODER is None:
        return None
    try:
        return _DECODER.decode(text)  # type: ignore[no-any-return]
    except _REFUSED:
        return None


def is_struct_batch(events: list[Any]) -> bool:
    return _DECODER is not None and bool(events) and type(events[0]) is Event
