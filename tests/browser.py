"""A real headless browser for the HTML tests: Debian's chromium, every host unresolvable.

``dump(path, profile)`` returns chromium's DOM and log of a local HTML file; ``probe(path, profile,
width, js)`` runs a script in the page (in a window ``width`` px wide) and returns what it reported;
``measure(path, profile, width)`` waits for the charts to render and returns where they landed (the
page's width and each chart's box, its legends' and its points').
Tests skip where :data:`CHROMIUM` is missing (``.ci/run`` installs it).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
SKIP_REASON = "no /usr/bin/chromium (Debian: apt-get install chromium); .ci/run installs it"

_MEASURE_JS = """
function (done) {
  function box(el) { var r = el.getBoundingClientRect();
    return {left: r.left, right: r.right, width: r.width, top: r.top, bottom: r.bottom}; }
  var tries = 0;
  function measure() {
    var charts = document.querySelectorAll('.chart');
    var svgs = document.querySelectorAll('.chart svg.marks');
    if (svgs.length < charts.length && tries++ < 200) { setTimeout(measure, 50); return; }
    var out = {viewport: window.innerWidth, charts: []};
    charts.forEach(function (c) {
      var svg = c.querySelector('svg.marks');
      out.charts.push({id: c.id, svg: svg ? box(svg) : null,
        legends: svg ? Array.prototype.map.call(svg.querySelectorAll('g.role-legend'), box) : [],
        points: svg ? Array.prototype.map.call(svg.querySelectorAll('g.mark-symbol path'), box) : []});
    });
    done(out);
  }
  measure();
}
"""


def dump(path: Path, profile: Path, width: int | None = None) -> tuple[str, str]:
    """Chromium's DOM and log (stderr) of a local HTML file, in a window ``width`` px wide."""
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
           "--virtual-time-budget=15000", "--dump-dom"]
    if width is not None:
        cmd.insert(-1, f"--window-size={width},1200")
    proc = subprocess.run([*cmd, path.as_uri()], capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def probe(path: Path, profile: Path, width: int, js: str) -> Any:
    """What ``js`` (a JavaScript ``function (done) {...}``, called once the page has loaded) passed
    to ``done``, as JSON; the browser opens a copy of the page with the script added."""
    page = path.read_text(encoding="utf-8")
    report = ("<script>window.addEventListener('load', function () { (" + js + ")(function (result) {"
              "var pre = document.createElement('pre'); pre.id = 'ncu-roof-probe';"
              "pre.textContent = JSON.stringify(result); document.body.appendChild(pre); }); });</script>")
    copy = profile.parent / f"{path.stem}-probe-{width}.html"
    head, _, tail = page.rpartition("</body>")  # the last one: the inlined Vega has the string too
    copy.write_text(f"{head}{report}</body>{tail}", encoding="utf-8")
    dom, log = dump(copy, profile, width)
    found = re.search(r'<pre id="ncu-roof-probe">(.*?)</pre>', dom, re.S)
    assert found, log[-2000:]
    return json.loads(html.unescape(found.group(1)))


def measure(path: Path, profile: Path, width: int) -> dict[str, Any]:
    """Where each ``.chart`` of an HTML page landed in a window ``width`` px wide."""
    result: dict[str, Any] = probe(path, profile, width, _MEASURE_JS)
    return result
