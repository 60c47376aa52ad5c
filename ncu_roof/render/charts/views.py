"""The other views of a diagnosis: time share, extra bytes, size sweeps, speed of light.

A diagnosis in, a chart built by :mod:`.vegalite` out (or ``None`` where there is nothing to draw);
:func:`all_charts` lists a report page's charts in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from ncu_roof.fmt import plural
from ncu_roof.render.charts import vegalite as vl
from ncu_roof.render.charts.points import (
    HEIGHT,
    MAX_BARS,
    MAX_LABELS,
    MAX_SWEEPS,
    WIDTH,
    _decades,
    _finite,
    finite_mask,
    kernel_points,
    script_json,
    short_device_name,
    truncate_name,
)
from ncu_roof.render.charts.roofline import (
    _bound_color,
    _configure,
    _tooltip_fields,
    placeable_kernels,
    roofline_chart,
)
from ncu_roof.render.charts.roofs import Look
from ncu_roof.render.summary import fmt_pct, fmt_seconds, fmt_si

if TYPE_CHECKING:
    from ncu_roof.diagnosis import Diagnosis


# --- other views ---------------------------------------------------------------------------------
def time_unit(seconds: list[float]) -> tuple[str, float]:
    """The unit (s, ms or µs) that suits the largest of some durations, and its scale."""
    top = max([t for t in seconds if _finite(t)], default=1.0)
    return ("s", 1.0) if top >= 1.0 else ("ms", 1e3) if top >= 1e-3 else ("µs", 1e6)


def _time_share_panel(points: pd.DataFrame, title: str, subtitle: str) -> Any:
    rows = []
    for _, k in points.head(MAX_BARS).iterrows():
        rows.append({"key": str(k["kernel"]), "name": k["short"], "time_s": k["time_s"], "bound": k["bound"],
                     "share": f"{fmt_pct(k['share'] * 100)} · {plural(int(k['launches']), 'launch')}",
                     **_tooltip_fields(k)})
    rest = points.iloc[MAX_BARS:]
    if len(rest):
        share = rest["share"].sum()
        rows.append({"key": "(other kernels)", "name": f"other ({len(rest)} kernels)", "time_s": rest["time_s"].sum(),
                     "bound": "unknown", "share": fmt_pct(share * 100), "Kernel": f"{len(rest)} more kernels",
                     "Time": fmt_seconds(rest["time_s"].sum()), "Share of time": fmt_pct(share * 100)})
    unit, scale = time_unit([r["time_s"] for r in rows])
    for r in rows:
        r["time"] = r.pop("time_s") * scale
    labels = {r["key"]: r["name"] for r in rows}
    base = vl.Chart(vl.Data(values=rows)).encode(  # keyed on the whole kernel name, labelled with the cut one
        y=vl.Y("key:N", sort=[r["key"] for r in rows], title=None,
                axis=vl.Axis(labelLimit=320, labelExpr=f"{script_json(labels)}[datum.value]")),
        x=vl.X("time:Q", title=f"GPU time ({unit})", axis=vl.Axis(tickCount=6),
                scale=vl.Scale(domain=[0, max([r["time"] for r in rows], default=1.0) * 1.25])))
    bars = base.mark_bar().encode(color=_bound_color([r["bound"] for r in rows] or ["unknown"]),
                                  tooltip=[vl.Tooltip(f"{t}:N") for t in
                                           ("Kernel", "Time", "Share of time", "Bound", "% of roof")])
    text = base.mark_text(align="left", dx=4, fontSize=11).encode(text="share:N")
    return (bars + text).properties(width=WIDTH - 200, height=max(60, 22 * len(rows)),
                                    title=vl.TitleParams(title, subtitle=subtitle, anchor="start"))


def time_share_chart(d: Diagnosis, points: pd.DataFrame | None = None) -> vl.TopLevel:
    """Time per kernel (most first, the rest as 'other'), coloured by the bound that holds the time;
    one panel per device, shares of that device's time (``points``: the :func:`kernel_points` with
    shares per device, where the caller has them)."""
    if points is None:
        points = kernel_points(d.placed, share_per_device=True)
    devices = list(dict.fromkeys(points["device"])) if len(points) else []
    if len(devices) <= 1:
        return _configure(_time_share_panel(points, "Where the time goes", "GPU time per kernel, coloured by bound"))
    panels = [_time_share_panel(points[points["device"] == dev].reset_index(drop=True), f"Where the time goes: {dev}",
                                "GPU time per kernel on this device (shares of its time), coloured by bound")
              for dev in devices]
    return _configure(vl.vconcat(*panels).resolve_scale(color="independent", x="independent"))


def extra_bytes_chart(d: Diagnosis) -> vl.TopLevel | None:
    """Measured DRAM bytes over algorithmic bytes per region (1x is ideal); None without regions."""
    regions = d.regions
    if regions is None or regions.empty or "extra_bytes_factor" not in regions:
        return None
    known = regions[finite_mask(regions["extra_bytes_factor"])]
    if known.empty:
        return None
    rows: list[dict[str, Any]] = [{"region": str(r["name"]), "factor": float(r["extra_bytes_factor"]),
             "Region": str(r["name"]), "Extra bytes": f"{r['extra_bytes_factor']:.3g}x",
             "Time": fmt_seconds(r.get("time_s")), "Time at stake": fmt_seconds(r.get("time_at_stake_s")),
             "label": f"{r['extra_bytes_factor']:.2g}x", "one": 1.0} for _, r in known.iterrows()]
    rows.sort(key=lambda r: -r["factor"])
    hi = max(10.0, max(r["factor"] for r in rows) * 2)
    base = vl.Chart(vl.Data(values=rows)).encode(
        y=vl.Y("region:N", sort=[r["region"] for r in rows], title=None,
                axis=vl.Axis(labelLimit=320, labelExpr="truncate(datum.label, 40)")),
        x=vl.X("factor:Q", title="DRAM bytes moved / algorithmic bytes (log)",
                scale=vl.Scale(type="log", domain=[min(0.5, min(r["factor"] for r in rows) / 2), hi])))
    bars = base.mark_bar(color="#9467bd").encode(
        x2="one:Q", tooltip=[vl.Tooltip(f"{t}:N") for t in ("Region", "Extra bytes", "Time", "Time at stake")])
    text = base.mark_text(align="left", dx=4, fontSize=11).encode(text="label:N")
    ideal = vl.Chart(vl.Data(values=[{"factor": 1.0}])).mark_rule(color="#2ca02c", strokeDash=[4, 3]).encode(
        x="factor:Q")
    return _configure((bars + text + ideal).properties(
        width=WIDTH - 200, height=max(60, 22 * len(rows)),
        title=vl.TitleParams("Extra bytes per region", subtitle="1x (green) moves only the bytes the "
                              "algorithm needs", anchor="start")))


def _throughput(group: pd.DataFrame) -> tuple[pd.Series, str]:
    if group["flops"].notna().all() and (group["flops"] > 0).any():
        return group["flops"] / group["time_s"], "FLOP/s"
    if group["dram_bytes"].notna().all() and (group["dram_bytes"] > 0).any():
        return group["dram_bytes"] / group["time_s"], "DRAM bytes/s"
    return group["grid_size"] * group["block_size"] / group["time_s"], "threads/s"


def _sweep_rows(placed: pd.DataFrame) -> tuple[list[dict[str, Any]], str]:
    ok = placed[finite_mask(placed["grid_size"]) & finite_mask(placed["time_s"])]
    counts = ok.groupby("kernel")["grid_size"].nunique()
    kernels = counts[counts >= 3].index
    if not len(kernels):
        return [], ""
    swept = ok[ok["kernel"].isin(kernels)]
    top = swept.groupby("kernel")["time_s"].sum().sort_values(ascending=False).head(MAX_SWEEPS).index
    swept = swept[swept["kernel"].isin(top)].copy()
    swept["thr"], unit = _throughput(swept)
    agg = swept.groupby(["kernel", "grid_size"]).agg(time_s=("time_s", "median"), thr=("thr", "median"),
                                                     launches=("time_s", "size")).reset_index()
    rows = [{"kernel": str(r["kernel"]), "Kernel": str(r["kernel"]),
             "grid_size": float(r["grid_size"]), "time_us": float(r["time_s"]) * 1e6, "thr": float(r["thr"]),
             "Time": fmt_seconds(r["time_s"]), "Throughput": fmt_si(r["thr"], unit), "Launches": int(r["launches"])}
            for _, r in agg.iterrows()]
    return rows, unit


def sweep_chart(d: Diagnosis) -> vl.TopLevel | None:
    """Time and throughput against grid size for kernels launched at 3+ sizes; None without any.

    Flat time at small sizes (throughput rising in proportion) is the overhead regime; where
    throughput levels off the kernel fills the GPU: the decode batch dial.
    """
    rows, unit = _sweep_rows(d.placed)
    if not rows:
        return None
    sizes = [r["grid_size"] for r in rows]
    grid = vl.X("grid_size:Q", title="Grid size (blocks)", scale=vl.Scale(type="log"),
                 axis=vl.Axis(values=_decades(min(sizes) / 1.01, max(sizes) * 10), format="~s"))
    color = vl.Color("kernel:N", title="Kernel", legend=vl.Legend(labelExpr="truncate(datum.label, 30)"))
    tips = [vl.Tooltip(f"{t}:N") for t in ("Kernel", "Time", "Throughput", "Launches")]
    base = vl.Chart(vl.Data(values=rows)).encode(x=grid, color=color, tooltip=tips)
    times = [r["time_us"] for r in rows] + [10.0]
    time = base.mark_line(point=True).encode(y=vl.Y("time_us:Q", title="Time per launch (µs)",
                                                     scale=vl.Scale(type="log"),
                                                     axis=vl.Axis(values=_decades(min(times) / 10, max(times) * 10),
                                                                   format="~g")))
    overhead = vl.Chart(vl.Data(values=[{"y": 10.0, "t": "~10 µs: launch overhead"}])).encode(
        y=vl.Y("y:Q", scale=vl.Scale(type="log")))
    time_panel = (time + overhead.mark_rule(strokeDash=[4, 3], color="#888")
                  + overhead.mark_text(align="left", x=4, dy=-6, color="#666", fontSize=10).encode(text="t:N")
                  ).properties(width=320, height=260, title="Time vs size")
    thrs = [r["thr"] for r in rows if _finite(r["thr"])] or [1.0]
    thr = base.mark_line(point=True).encode(y=vl.Y("thr:Q", title=f"Throughput ({unit})",
                                                    scale=vl.Scale(type="log"), axis=vl.Axis(
                                                        format="~s", values=_decades(min(thrs) / 10, max(thrs) * 10))))
    return _configure(vl.hconcat(time_panel, thr.properties(width=320, height=260, title="Throughput vs size"))
                      .properties(title=vl.TitleParams("Size sweep", subtitle="flat time at small sizes = "
                                                        "overhead regime; throughput levelling off = GPU full",
                                                        anchor="start")))


def sol_points(placed: pd.DataFrame) -> pd.DataFrame:
    """Per (device, kernel): time-weighted compute and memory speed-of-light %, share of the device's time."""
    cols = ["sm_throughput_pct", "memory_throughput_pct"]
    if placed.empty or not all(c in placed for c in cols):
        return pd.DataFrame()
    t = placed.assign(device=placed["device"].fillna("unknown device").astype(str), kernel=placed["kernel"].astype(str))
    t = t[finite_mask(t["time_s"])]
    rows = []
    for (device, kernel), g in t.groupby(["device", "kernel"], sort=False):
        ok = g[g[cols].notna().all(axis=1)]
        if ok.empty:
            continue
        w = ok["time_s"]
        rows.append({"device": device, "kernel": kernel, "time_s": float(g["time_s"].sum()), "launches": len(g),
                     "sm": float((ok["sm_throughput_pct"] * w).sum() / w.sum()),
                     "mem": float((ok["memory_throughput_pct"] * w).sum() / w.sum())})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    total = t.groupby("device")["time_s"].sum()
    out["share"] = out["time_s"] / out["device"].map(total)
    return out.sort_values("time_s", ascending=False, kind="stable").reset_index(drop=True)


def why_no_roofline(placed: pd.DataFrame) -> str:
    """Why no launch can be placed on a roofline, from what was measured: FP instruction counters
    present and 0 (integer-only kernels: nothing to place, whatever the set), FLOP counters absent
    (a basic-set capture), both (each counted), or FLOPs without the bytes."""
    flops = pd.to_numeric(placed.get("flops", pd.Series(dtype="float64")), errors="coerce")
    counted, zero = flops.notna(), flops.eq(0)
    if len(flops) and zero.all():
        return ("no FLOPs to place on a roofline: no kernel does floating-point work (its FP add, multiply "
                "and FMA instruction counters are present and 0)")
    if not counted.any():
        return "no kernel has the FLOP counters a roofline needs (basic set? --set full collects them)"
    if zero.any() and not flops.gt(0).any():
        idle, blind = int(zero.sum()), int((~counted).sum())
        return (f"no FLOPs to place on a roofline: {plural(idle, 'launch')} do{'es' if idle == 1 else ''} no "
                f"floating-point work (FP instruction counters 0), {plural(blind, 'launch')} "
                f"lack{'s' if blind == 1 else ''} the FLOP counters (basic set?)")
    return "no kernel with FLOPs has the bytes a roofline needs (no DRAM, L2 or L1 bytes measured)"


def sol_chart(d: Diagnosis) -> vl.TopLevel | None:
    """Speed of light: compute SOL % against memory SOL % per kernel (time-weighted), sized by share
    of the device's time; the view when no kernel has the FLOPs and bytes a roofline needs."""
    points = sol_points(d.placed)
    if points.empty:
        return None
    from ncu_roof.model.roofline import Thresholds

    busy = Thresholds().sol_busy_pct
    rows = [{"key": f"{k['device']}|{k['kernel']}", "device": short_device_name(k["device"]), "sm": k["sm"],
             "mem": k["mem"], "share": float(k["share"]), "Kernel": k["kernel"], "Device": k["device"],
             "Launches": int(k["launches"]), "Time": fmt_seconds(k["time_s"]),
             "Share of time": fmt_pct(k["share"] * 100), "Compute SOL": fmt_pct(k["sm"]),
             "Memory SOL": fmt_pct(k["mem"])} for _, k in points.iterrows()]
    x = vl.X("mem:Q", title="Memory throughput (% of speed of light)", scale=vl.Scale(domain=[0, 100]))
    y = vl.Y("sm:Q", title="Compute (SM) throughput (% of speed of light)", scale=vl.Scale(domain=[0, 100]))
    several = points["device"].nunique() > 1
    color = vl.Color("device:N", title="Device") if several else vl.value("#1f77b4")
    dots = vl.Chart(vl.Data(values=rows)).mark_circle(opacity=0.75, stroke="white", strokeWidth=0.6).encode(
        x=x, y=y, detail="key:N", color=color,
        size=vl.Size("share:Q", title="Share of time", scale=vl.Scale(domain=[0, 1], range=[30, 900]),
                      legend=vl.Legend(format=".0%", values=[0.1, 0.5, 1.0])),
        tooltip=[vl.Tooltip(f"{t}:N") for t in ("Kernel", "Device", "Launches", "Time", "Share of time",
                                                 "Compute SOL", "Memory SOL")])
    guides = vl.Chart(vl.Data(values=[{"v": busy}]))
    lines = guides.mark_rule(strokeDash=[4, 3], color="#999").encode(x="v:Q") + \
        guides.mark_rule(strokeDash=[4, 3], color="#999").encode(y="v:Q")
    corner: list[dict[str, Any]] = [{"mem": 98, "sm": 98, "t": "both busy", "a": "right"},
              {"mem": 98, "sm": 2, "t": "memory-busy", "a": "right"},
              {"mem": 2, "sm": 98, "t": "compute-busy", "a": "left"},
              {"mem": 2, "sm": 2, "t": "neither busy: latency or launch-bound", "a": "left"}]
    corners = [vl.Chart(vl.Data(values=[c])).mark_text(align=c["a"], baseline="middle", color="#888",
                                                         fontSize=11).encode(x=x, y=y, text="t:N") for c in corner]
    named: list[dict[str, Any]] = []
    for _, k in points.head(MAX_LABELS).iterrows():  # the biggest, where no label is already near
        if k["share"] >= 0.02 and not any(abs(n["mem"] - k["mem"]) < 12 and abs(n["sm"] - k["sm"]) < 4 for n in named):
            named.append({"mem": k["mem"], "sm": k["sm"],
                          "t": f"{truncate_name(k['kernel'], 36)} ({fmt_pct(k['share'] * 100)})"})
    names = vl.Chart(vl.Data(values=named)).mark_text(align="left", dx=9, dy=-7, fontSize=11, fontWeight="bold",
                                                        color="#333").encode(x=x, y=y, text="t:N")
    total = float(points["time_s"].sum())
    import textwrap

    from ncu_roof.render.charts.labels import CHAR_W

    subtitle = [*textwrap.wrap(why_no_roofline(d.placed), int((WIDTH - 120) / CHAR_W), subsequent_indent="  "),
                f"{plural(len(points), 'kernel')}, {fmt_seconds(total)}; time-weighted speed-of-light % per kernel, "
                "size = share of its device's time", f"dashed: {busy:.0f}% (busy)"]
    return _configure(vl.layer(lines, *corners, dots, names).properties(
        width=WIDTH - 120, height=HEIGHT,
        title=vl.TitleParams("Speed of light", subtitle=subtitle, anchor="start")))


def _main_chart(d: Diagnosis, look: Look = Look(), points: pd.DataFrame | None = None) -> tuple[str, Any]:
    """The roofline, or the speed-of-light view where no kernel can be placed on a roofline."""
    if points is None:
        points = kernel_points(d.placed, share_per_device=True)
    if placeable_kernels(d, points) == 0:
        sol = sol_chart(d)
        if sol is not None:
            return "Speed of light", sol
    return "Roofline", roofline_chart(d, look, points)


def all_charts(d: Diagnosis, look: Look = Look()) -> list[tuple[str, Any]]:
    """The charts of a report page, in order, with a heading each (those with something to show);
    ``look`` sizes the roofline."""
    points = kernel_points(d.placed, share_per_device=True)  # the same for the roofline and the time share
    charts = [_main_chart(d, look, points), ("Time share", time_share_chart(d, points)),
              ("Extra bytes", extra_bytes_chart(d)), ("Size sweep", sweep_chart(d))]
    return [(title, c) for title, c in charts if c is not None]
