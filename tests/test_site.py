"""The website as readers meet it: the built book in a real browser, with no network.

The site in ``_build/html`` is served on 127.0.0.1 and opened in Debian's
``chromium-headless-shell`` (:mod:`headless_chromium`), driven by the ``playwright`` package
through its executable path (never ``playwright install``). Every
request to another host is counted as a failure, and the browser cannot make it (its resolver
knows no host but 127.0.0.1), so a page that still reaches for a CDN (a script, a style sheet, a
font, MathJax, the widget manager) fails here rather than on a reader's firewalled laptop.

The pages share one browser context, and so its cache, as a reader's tab does: the theme's
scripts (MathJax and the icon font's script are 1.2 and 1.5 MB) are compiled once, not once per
page. (Playwright's request interception, the other way to stop off-host requests, turns the
cache off; with it every page was a cold load and the tour took twice the CPU.)

This module builds nothing. ``make test`` builds the book, then runs it with
``ROOFLINE_SITE_REQUIRED=1``; run alone without a built site it skips and says why.
Screenshots of the landing page and chapter 1 land in ``_build/screenshots/``.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
import tempfile
import threading
import time
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import headless_chromium
import pytest
from playwright.sync_api import Error as PlaywrightError

import roofline_lib as rl

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("ROOFLINE_SITE_DIR", ROOT / "_build" / "html"))
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # V8's optimizing compiler (TurboFan) off: each page's scripts (axe above all) run for a second or
    # two in a fresh renderer, too briefly for its compile work, done on other threads, to pay back.
    # Measured, this test alone on 2 cores, two runs each: 102.5 and 116.8 CPU-seconds with it, 94.1
    # and 106.3 without. The pages' JavaScript computes the same; only its speed differs.
    "--js-flags=--no-opt",
    # no host but the test server resolves: an off-host request fails in the browser itself
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
CHAPTER_1 = "notebooks/01_two_speed_limits.html"
CHAPTER_3 = "notebooks/03_counting_flops.html"
CHAPTER_5 = "notebooks/05_mfu.html"
CHAPTER_9 = "notebooks/09_parallelism.html"
CHAPTER_11 = "notebooks/11_energy.html"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
DESKTOP = {"width": 1280, "height": 900}
TOUR_BATCH = 2  # pages loading at once in the tour (more gains nothing on 2 cores)
NOT_PAGES = ("_static", "_sources", "_images", "vendor", "reports")  # assets, not pages


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def site() -> Path:
    if (SITE / "index.html").exists():
        return SITE
    if os.environ.get("ROOFLINE_SITE_REQUIRED"):
        pytest.fail(
            f"no built site at {SITE}: `make test` builds the book before this test; the build must have failed"
        )
    pytest.skip(
        "no built site in _build/html; run `make book` first (`make test` builds it and "
        "sets ROOFLINE_SITE_REQUIRED so that this test cannot be skipped there)"
    )


def _pages(site: Path) -> list[str]:
    return sorted(
        p.relative_to(site).as_posix() for p in site.rglob("*.html") if p.relative_to(site).parts[0] not in NOT_PAGES
    )


@pytest.fixture(scope="module")
def pages(site) -> list[str]:
    found = _pages(site)
    assert CHAPTER_1 in found and "search.html" in found, found
    return found


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output for failures
        pass

    def end_headers(self):
        self.send_header("Cache-Control", "max-age=600")  # as a static host serves a site
        super().end_headers()


@pytest.fixture(scope="module")
def server(site):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(site):
    if why := headless_chromium.missing():
        pytest.fail(why)
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        chromium = pw.chromium.launch(executable_path=headless_chromium.CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()
    finally:
        pw.stop()


@pytest.fixture(scope="module")
def context(browser):
    """The one browser context every page of this module opens in (one cache, as in a reader's tab)."""
    ctx = browser.new_context(viewport=DESKTOP)
    yield ctx
    ctx.close()


class Visit:
    """One page opened in the shared context, every off-host request and every problem written down."""

    def __init__(self, context, base: str, path: str, *, settle: bool = True):
        self.path = path
        self.problems: list[str] = []
        self._host = urlsplit(base).netloc
        self.page = context.new_page()
        page = self.page
        self._in_flight: set = set()  # requests asked for and not yet answered
        page.on("request", self._requested)
        page.on("requestfinished", lambda r: self._in_flight.discard(r))
        page.on("requestfailed", lambda r: self._in_flight.discard(r))
        page.on("console", lambda m: m.type == "error" and self.problems.append(f"console error: {m.text}"))
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("requestfailed", self._failed)
        page.on("response", lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"))
        page.goto(f"{base}/{path}", wait_until="commit")
        if settle:
            self.settle()

    def settle(self, timeout_s: float = 30.0):
        """Wait until the page has loaded, MathJax has typeset it, its fonts are in and no request
        is still open. (Playwright's "networkidle" waits a further 500 ms on every page.)"""
        page = self.page
        for _ in range(3):  # a page that redirects (the root index.html) loads twice
            page.wait_for_load_state("load")
            try:
                # MathJax typesets after load and then asks for its fonts: wait for both to finish.
                page.evaluate("""async () => {
                    if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
                    await document.fonts.ready;
                }""")
                break
            except PlaywrightError as err:
                if "navigation" not in str(err):
                    raise
        deadline = time.monotonic() + timeout_s
        while self._in_flight:
            assert time.monotonic() < deadline, (
                f"{self.path}: requests still open: {sorted(r.url for r in self._in_flight)}"
            )
            page.wait_for_timeout(25)

    def _requested(self, request):
        self._in_flight.add(request)
        url = request.url
        if not url.startswith(("data:", "blob:")) and urlsplit(url).netloc != self._host:
            self.problems.append(f"request to another host (it cannot resolve): {url}")

    def _failed(self, request):
        if urlsplit(request.url).netloc == self._host:
            self.problems.append(f"failed request: {request.url} ({request.failure})")

    def close(self):
        self.page.close()


@pytest.fixture(scope="module")
def tour(context, server, pages) -> dict[str, Visit]:
    """Every page opened once and kept open for the checks that only read it. Pages open a few at
    a time, so one page's wait for its network to fall quiet overlaps the others' loading."""
    visits: dict[str, Visit] = {}
    for start in range(0, len(pages), TOUR_BATCH):
        batch = [Visit(context, server, path, settle=False) for path in pages[start : start + TOUR_BATCH]]
        for v in batch:
            v.settle()
            visits[v.path] = v
    yield visits
    for v in visits.values():
        v.close()


@pytest.fixture
def visit(context, server):
    opened: list[Visit] = []

    def _open(path: str) -> Visit:
        v = Visit(context, server, path)
        opened.append(v)
        return v

    yield _open
    for v in opened:
        v.close()


# --------------------------------------------------------------------------- the static HTML


class _Assets(HTMLParser):
    """Collect what a page makes the browser load (not what it merely links to) and its images."""

    LOADS = {
        "script": "src",
        "img": "src",
        "iframe": "src",
        "embed": "src",
        "source": "src",
        "audio": "src",
        "video": "src",
        "object": "data",
        "track": "src",
    }

    def __init__(self):
        super().__init__()
        self.loads: list[str] = []
        self.images: list[dict] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in self.LOADS and a.get(self.LOADS[tag]):
            self.loads.append(a[self.LOADS[tag]])
        if tag == "img":
            self.images.append(a)
        if tag == "link" and (a.get("rel") or "") not in (
            "canonical",
            "alternate",
            "index",
            "search",
            "next",
            "prev",
            "author",
            "license",
        ):
            self.loads.append(a.get("href") or "")
        if a.get("style"):
            self.styles.append(a["style"])
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.styles.append(data)


_REMOTE = re.compile(r"^(https?:)?//", re.I)
_CSS_REMOTE = re.compile(r"""(url\(\s*["']?|@import\s+["'])(https?:)?//""", re.I)
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def _parse(site: Path, page: str) -> _Assets:
    parser = _Assets()
    parser.feed((site / page).read_text(encoding="utf-8"))
    return parser


def test_no_built_page_loads_anything_from_another_host(site, pages):
    offenders = []
    for page in pages:
        parsed = _parse(site, page)
        offenders += [f"{page}: {url}" for url in parsed.loads if _REMOTE.match(url)]
        offenders += [f"{page}: inline style {s[:80]!r}" for s in parsed.styles if _CSS_REMOTE.search(s)]
    for css in [*site.glob("_static/**/*.css"), *site.glob("vendor/**/*.css")]:
        if _CSS_REMOTE.search(_CSS_COMMENT.sub("", css.read_text(encoding="utf-8", errors="replace"))):
            offenders.append(f"{css.relative_to(site)}: url() or @import of another host")
    assert not offenders, "\n".join(offenders)


def _machine_paths(text: str, places: tuple[str, ...]) -> list[str]:
    """The paths under ``places`` (folders of the machine that built the site) that ``text`` shows."""
    # one alternation, longest place first: a path under two places (a checkout in /tmp) is found once
    either = "|".join(re.escape(place.rstrip("/")) for place in sorted(places, key=len, reverse=True))
    return sorted(m.rstrip(",.;:)") for m in re.findall(rf"(?:{either})/[^\s\"'<>]*", text))


#: Folders of the machine that built the site, which a published page must never show: the
#: checkout, the environment, the home folder and the temporary folder (chapter 6 printed its
#: trace's path there, /tmp/roofline-trace-.../tiny_decoder_step.json, until this test).
BUILD_MACHINE = tuple(sorted({str(ROOT), sys.prefix, os.path.expanduser("~"), tempfile.gettempdir(), "/tmp"}))


def test_the_path_check_finds_a_path_of_the_build_machine_and_nothing_else():
    shown = f"trace: {tempfile.gettempdir()}/roofline-trace-x1/step.json, 1.8 MB; see {ROOT}/README.md"
    assert _machine_paths(shown, BUILD_MACHINE) == sorted(
        [f"{tempfile.gettempdir()}/roofline-trace-x1/step.json", f"{ROOT}/README.md"]
    )
    # a checkout inside the temporary folder: its paths are under two places, and found once
    assert _machine_paths("see /tmp/clone/README.md.", ("/tmp", "/tmp/clone")) == ["/tmp/clone/README.md"]
    assert _machine_paths("step.json: 1.8 MB; /v1/completions and 3/4 of the time", BUILD_MACHINE) == []


def test_no_page_shows_a_path_of_the_machine_that_built_it(site, pages):
    """Published pages (and the notebooks the site offers for download) show no folder of the build
    machine: a cell that prints a path prints a name relative to the chapter, or none."""
    offenders = []
    for page in [*pages, *(p.relative_to(site).as_posix() for p in site.glob("_sources/**/*.ipynb"))]:
        offenders += [
            f"{page}: {found}" for found in _machine_paths((site / page).read_text(encoding="utf-8"), BUILD_MACHINE)
        ]
    assert not offenders, "\n".join(offenders[:20])


def test_no_page_shows_a_widget_that_cannot_work(site, pages):
    """A page has no kernel: no widget view and no widget manager, only the explorers' still figures."""
    for page in pages:
        text = (site / page).read_text(encoding="utf-8")
        assert WIDGET_VIEW not in text, f"{page} shows an ipywidget whose controls would change nothing"
        assert "html-manager" not in text and "embed-amd" not in text, page


def test_each_frozen_explorer_is_a_figure_that_says_where_it_is_live(site, pages):
    snapshot = re.compile(
        r'<figure class="roofline-snapshot"><img src="data:image/png;base64,[^"]+" '
        r'alt="([^"]+)"><figcaption>([^<]*(?:<code>[^<]*</code>[^<]*)*)</figcaption>'
    )
    found = {}
    for page in pages:
        shots = snapshot.findall((site / page).read_text(encoding="utf-8"))
        if shots:
            found[page] = shots
    assert CHAPTER_1 in found, "chapter 1's explorer left no still figure on the site"
    for page, shots in found.items():
        text = (site / page).read_text(encoding="utf-8")
        # each still figure is followed at once by the element its widget wrote for the live one
        followed = re.findall(r'</figure><div class="roofline-explorer" data-mode="[a-z]+"[^>]*></div>', text)
        assert len(followed) == len(shots), f"{page}: a still explorer and no live one after it"
        for alt, caption in shots:
            assert len(alt) > 40 and re.search(r"\d", alt), alt  # the readout's sentence, not a file name
            assert "live in the notebook" in caption and "make lab" in caption, caption
    alt = found[CHAPTER_1][0][0]
    # 2.039e12 B/s * 10 FLOP/byte = 20.4 TFLOP/s at the build's settings
    assert "A100" in alt and "20.4 TFLOP/s" in alt and "memory-bound" in alt, alt


_SITE_EXPLORER = re.compile(r'<div class="roofline-explorer"((?: data-[a-z-]+="[^"]*")*)></div>')


def _site_explorers(text: str) -> list[dict[str, str]]:
    """The attributes of every website-explorer element in a built page."""
    return [dict(re.findall(r' (data-[a-z-]+)="([^"]*)"', m.group(1))) for m in _SITE_EXPLORER.finditer(text)]


def test_each_chapter_has_one_live_explorer_written_by_its_widget(site, pages):
    """One explorer per chapter, right after its widget's still figure, starting where the widget did."""
    from roofline_lib import scenarios as sc

    chapters = [p for p in pages if re.fullmatch(r"notebooks/\d\d_[a-z0-9_]+\.html", p)]
    assert len(chapters) >= 8, chapters
    found = {}
    for page in chapters:
        text = (site / page).read_text(encoding="utf-8")
        explorers = _site_explorers(text)
        assert len(explorers) == 1 == text.count('class="roofline-explorer"'), (page, explorers)
        assert text.count('</figure><div class="roofline-explorer"') == 1, f"{page}: not in its widget's output"
        found[page] = explorers[0]
    mfu = found[CHAPTER_5]  # scenarios.MFU_EXAMPLE: Llama-2-7B's exact N, 1.5e6 tokens/s on 256 A100s
    run = sc.MFU_EXAMPLE
    assert mfu["data-mode"] == "mfu" and mfu["data-gpu"] == rl.gpu(run.gpu).key
    assert mfu["data-n-params"] == str(run.model.n_params())  # 6738415616, all digits
    assert float(mfu["data-tokens-per-s"]) == run.tokens_per_s and int(mfu["data-n-gpus"]) == run.n_gpus
    decode = found["notebooks/04_inference_regimes.html"]  # scenarios.DECODE_EXPLORER
    start = sc.DECODE_EXPLORER
    assert (decode["data-mode"], decode["data-gpu"]) == ("decode", rl.gpu(start.gpu).key)
    assert int(decode["data-n-params"]) == start.n_params() and int(decode["data-batch"]) == start.batch
    assert rl.bytes_per_element(decode["data-precision"]) == start.bytes_per_param
    par = found[CHAPTER_9]  # widgets_parallel.parallel_explorer's start: a layout the planner accepts
    assert par["data-mode"] == "parallel" and par["data-model"] in rl.shipped_models(), par
    n, tp, pp = (int(par[f"data-{k}"]) for k in ("n-gpus", "tp", "pp"))
    rl.plan(
        par["data-model"],
        rl.cluster(par["data-node"], n),
        dp=n // (tp * pp),
        tp=tp,
        pp=pp,
        zero=int(par["data-zero"]),
        global_batch=int(par["data-global-batch"]),
        seq_len=int(par["data-seq-len"]),
        recompute=par["data-recompute"],
    )


def test_figures_carry_alt_text(site, pages):
    """An image's alt must describe it; Sphinx's fallback (the file's own path) does not count."""
    missing = []
    for page in pages:
        for img in _parse(site, page).images:
            alt, src = (img.get("alt") or "").strip(), img.get("src") or ""
            if not alt or alt == src or Path(alt).name == Path(src).name:
                missing.append(f"{page}: <img src={src!r} alt={alt!r}>")
    assert not missing, (
        "figures without alt text (set it in the cell's `mystnb: image: alt:` "
        "metadata or the figure's :alt: option):\n" + "\n".join(missing)
    )


def test_landing_page_says_what_the_course_is_and_where_numbers_come_from(site):
    text = re.sub(r"<[^>]+>", " ", (site / "book" / "index.html").read_text(encoding="utf-8"))
    text = " ".join(text.split())
    assert "roofline" in text.lower()
    assert "Three ways to use it" in text
    for way in ("Read it as a website", "Work through the notebooks", "Grade your exercise answers"):
        assert way in text, way
    assert "Where the hardware numbers come from" in text and "datasheet" in text


# --------------------------------------------------------------------------- in the browser


def test_a_request_to_another_host_is_counted_and_cannot_reach_it(context, server):
    """The tour's offline check, tried on a page that reaches for a CDN: the request is written
    down as a problem and fails in the browser, which resolves no host but the test server."""
    v = Visit(context, server, "book/glossary.html")
    try:
        failures = []
        v.page.on("requestfailed", lambda r: failures.append((r.url, r.failure)))
        v.page.evaluate("""() => new Promise(done => {
            const img = document.createElement('img');
            img.onerror = img.onload = done;
            img.src = 'https://cdn.example.com/pixel.png';
            document.body.append(img);
        })""")
        assert any("cdn.example.com" in p and "another host" in p for p in v.problems), v.problems
        assert failures and "cdn.example.com" in failures[0][0], failures
        assert "NAME_NOT_RESOLVED" in (failures[0][1] or ""), failures
    finally:
        v.close()


def test_every_page_loads_offline_with_no_errors(tour, pages):
    assert list(tour) == pages
    problems = [f"{page}: {p}" for page, v in tour.items() for p in v.problems]
    assert not problems, "\n".join(problems)


# At 390 px a chapter's figure is drawn at no less than 42rem (or its own width, if narrower) and
# scrolls in its box: shrunk to the screen, a 911 px roofline drew its labels about 4 px high. The
# smallest label is 9 pt at 100 dpi (12.5 px in the PNG); drawn at 672 of 911 px, about 9 px.
_PHONE_FIGURES = """() => Array.from(document.querySelectorAll('.bd-article .cell_output figure img'))
    .filter(img => img.naturalWidth > 0)
    .map(img => ({src: img.getAttribute('src').slice(-24), natural: img.naturalWidth,
                  drawn: img.getBoundingClientRect().width,
                  box: getComputedStyle(img.closest('.cell_output')).overflowX}))"""


def test_no_page_scrolls_sideways_on_a_phone_and_figures_stay_legible(tour, site):
    """At 390 px (a phone) no page is wider than the screen; wide tables and figures scroll in their
    own box, and no chapter's figure is shrunk below legibility."""
    too_wide, shrunk, figures_seen = [], [], 0
    for path, visit in tour.items():
        if 'http-equiv="refresh"' in (site / path).read_text(encoding="utf-8").lower():
            continue  # the root index.html only redirects to the landing page
        page = visit.page
        page.set_viewport_size({"width": 390, "height": 844})
        try:
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > 390:
                culprits = page.evaluate("""() => Array.from(document.querySelectorAll('.bd-article *'))
                    .filter(e => e.getBoundingClientRect().right > 391 && !e.closest('.pst-scrollable-table-container, .roofline-table-scroll, pre, .highlight, mjx-container, .MathJax, .cell_output'))
                    .slice(0, 3).map(e => e.tagName + '.' + e.className)""")
                too_wide.append(f"{path}: {width} px wide ({culprits})")
            if path.startswith("notebooks/"):
                for fig in page.evaluate(_PHONE_FIGURES):
                    figures_seen += 1
                    if fig["drawn"] < min(fig["natural"], 672) - 1 or fig["box"] not in ("auto", "scroll"):
                        shrunk.append(f"{path} {fig}")
            if path == CHAPTER_1:
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SHOTS / "chapter-01-390px.png"))
        finally:
            page.set_viewport_size(DESKTOP)  # the tour's other checks read the desktop layout
    assert not too_wide, "\n".join(too_wide)
    assert figures_seen >= 10, f"only {figures_seen} figures found on the chapters"
    assert not shrunk, "figures shrunk below legibility at 390 px:\n" + "\n".join(shrunk)


# At 390 px: every control of an explorer inside the explorer's box (a select as wide as its longest
# option stuck out of it), and no word of a readout split over two lines (a value squeezed beside a
# long label broke as "memor-y-bound").
_PHONE_EXPLORER_PROBE = """() => Array.from(document.querySelectorAll('.roofline-explorer')).map(ex => {
    const box = ex.getBoundingClientRect(), clipped = [], broken = [];
    for (const c of ex.querySelectorAll('select, input, output, .roofline-explorer__field')) {
        const r = c.getBoundingClientRect();
        if (r.width > 0 && (r.left < box.left - 0.5 || r.right > box.right + 0.5)) {
            clipped.push(`${c.tagName.toLowerCase()} ${c.name || c.className}: ${Math.round(r.left)}-${Math.round(r.right)} px in ${Math.round(box.left)}-${Math.round(box.right)}`);
        }
    }
    for (const cell of ex.querySelectorAll('.roofline-explorer__readout dt, .roofline-explorer__readout dd')) {
        const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let n = walk.nextNode(); n; n = walk.nextNode()) {
            for (const m of n.data.matchAll(/\\S+/g)) {
                const range = document.createRange();
                range.setStart(n, m.index);
                range.setEnd(n, m.index + m[0].length);
                const lines = new Set(Array.from(range.getClientRects(), r => Math.round(r.top)));
                if (lines.size > 1) broken.push(`${cell.tagName.toLowerCase()} ${cell.dataset.quantity || ''}: ${m[0]}`);
            }
        }
    }
    return {mode: ex.dataset.mode, clipped, broken, readouts: ex.querySelectorAll('.roofline-explorer__readout dd').length};
})"""
PHONE_CHAPTERS = (
    "notebooks/08_communication.html",
    "notebooks/09_parallelism.html",
    CHAPTER_11,
    "notebooks/10_serving.html",
)


def test_on_a_phone_no_explorer_control_is_clipped_and_no_readout_word_is_broken(tour):
    problems, seen = [], 0
    for path in PHONE_CHAPTERS:
        page = tour[path].page
        page.set_viewport_size({"width": 390, "height": 844})
        try:
            page.wait_for_timeout(100)  # the layout at the new width
            for ex in page.evaluate(_PHONE_EXPLORER_PROBE):
                seen += 1
                assert ex["readouts"] >= 3, (path, ex)  # the probe read a drawn explorer
                problems += [f"{path} ({ex['mode']}): clipped {c}" for c in ex["clipped"]]
                problems += [f"{path} ({ex['mode']}): broken {b}" for b in ex["broken"]]
            if path == PHONE_CHAPTERS[-1]:
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.locator(".roofline-explorer").first.screenshot(path=str(SHOTS / "chapter-10-explorer-390px.png"))
        finally:
            page.set_viewport_size(DESKTOP)
    assert seen == len(PHONE_CHAPTERS), seen  # one explorer on each
    assert not problems, "\n".join(problems)


def test_the_serving_chart_has_a_legend_and_a_colour_for_each_policy(tour):
    from roofline_lib.present.widgets import _POLICY_LABELS

    page = tour["notebooks/10_serving.html"].page
    chart = page.locator('.roofline-explorer[data-mode="serving"] svg').first
    legend = chart.locator(".roofline-explorer__legend text").all_text_contents()
    for label in _POLICY_LABELS.values():
        assert any(text.startswith(label) for text in legend), (label, legend)
    assert "TPOT objective" in legend and "best under the SLO" in legend
    strokes = chart.locator("polyline[data-policy]").evaluate_all(
        "els => els.map(e => [e.dataset.policy, getComputedStyle(e).stroke, getComputedStyle(e).strokeWidth])"
    )
    assert len(strokes) >= 3 and len({s for _, s, _ in strokes}) == len(strokes), strokes  # no two alike
    chosen = page.locator('.roofline-explorer[data-mode="serving"]').first.get_attribute("data-current-policy")
    widths = {policy: float(w.rstrip("px")) for policy, _, w in strokes}
    assert widths[chosen] == max(widths.values()) > min(widths.values()), widths  # the chosen one bold


def test_the_tpot_slider_moves_the_best_point_over_its_whole_range(visit):
    # the objective spanned 1 ms to 10 s and the best point moved between 4.7 and 12 ms of it: the
    # slider's span is now the frontier's (widgets._tpot_span, tpotSpan), on a phone as on a desktop
    v = visit("notebooks/10_serving.html")
    v.page.set_viewport_size({"width": 390, "height": 844})
    slider = v.page.locator('.roofline-explorer[data-mode="serving"] input[name="slo_tpot_s"]').first
    seen = slider.evaluate("""input => {
        const lo = Number(input.min), hi = Number(input.max), out = [];
        for (let i = 0; i <= 40; i++) {
            input.value = String(lo + (hi - lo) * i / 40);
            input.dispatchEvent(new Event('input'));
            out.push(input.closest('.roofline-explorer').querySelector('dd[data-quantity="batch"]').dataset.value);
        }
        return out;
    }""")
    nothing = sum(b == "" for b in seen)  # below the fastest TPOT no batch meets the objective
    assert nothing <= 6 and len(set(seen)) >= 28, seen
    assert not v.problems, "\n".join(v.problems)


def test_the_hardware_table_scrolls_in_its_box_with_the_gpu_names_in_view(context, server):
    page = context.new_page()
    try:
        page.goto(f"{server}/book/hardware.html", wait_until="load")
        table = page.locator(".bd-article table").first
        box = table.locator("xpath=..")
        info = box.evaluate("""b => ({overflow: getComputedStyle(b).overflowX, client: b.clientWidth,
                                      scroll: b.scrollWidth, page: document.documentElement.scrollWidth,
                                      viewport: window.innerWidth})""")
        assert info["overflow"] in ("auto", "scroll"), info
        assert info["page"] <= info["viewport"], info  # the page itself never scrolls sideways
        first = table.locator("tbody tr td").first
        assert first.evaluate("e => getComputedStyle(e).position") == "sticky"
        if info["scroll"] > info["client"]:  # too wide for the column: scroll it, the names stay put
            left = first.bounding_box()["x"]
            box.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
            assert abs(first.bounding_box()["x"] - left) < 1, "the GPU name column scrolled away"
            last = table.locator("thead th").last
            assert last.bounding_box()["x"] + last.bounding_box()["width"] <= info["viewport"] + 1
    finally:
        page.close()


def test_math_is_typeset_by_the_vendored_mathjax(tour):
    v = tour[CHAPTER_1]
    src = v.page.evaluate("document.querySelector('script[src*=\"tex-mml-chtml\"]').src")
    assert "/vendor/mathjax/" in src, src
    assert v.page.locator("mjx-container").count() >= 2  # the ridge-point and roofline equations
    assert not v.problems, "\n".join(v.problems)


AXE = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"  # vendored, test-only (its README says whence)
COURSE_PAGES = ("notebooks/", "exercises/", "book/")  # the course's own content, not search or the index
# axe.run starts on a timer, so the pages run it side by side; AXE_RESULT waits for each page's result
AXE_START = """() => { window.rooflineAxe = new Promise(done => setTimeout(() => done(axe.run(
    document.querySelector('.bd-article') || document, {resultTypes: ['violations']})), 0)); }"""
AXE_RESULT = """async () => (await window.rooflineAxe).violations
    .filter(v => v.impact === 'critical' || v.impact === 'serious')
    .map(v => ({id: v.id, impact: v.impact, count: v.nodes.length,
                targets: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))"""


def test_course_pages_have_no_critical_or_serious_axe_violations(tour):
    """axe-core on the article of every chapter, exercise and book page (the theme's chrome is not
    the course's): no violation of impact critical or serious. One run per page, on the tour's
    already open pages (about 15 s for the 22 pages)."""
    checked = [path for path in tour if path.startswith(COURSE_PAGES)]
    for path in checked:
        tour[path].page.add_script_tag(path=str(AXE))
        tour[path].page.evaluate(AXE_START)
    failures = [
        f"{path}: {f['id']} ({f['impact']}, {f['count']} nodes): {'; '.join(f['targets'])}"
        for path in checked
        for f in tour[path].page.evaluate(AXE_RESULT)
    ]
    assert {"book/glossary.html", "book/references.html", "book/hardware.html", "book/index.html"} <= set(checked)
    assert sum(p.startswith("notebooks/") for p in checked) >= 10 and any(p.startswith("exercises/") for p in checked)
    assert not failures, "\n".join(failures)


def _sig3_close(shown: str, expected: float) -> bool:
    """Does a readout printed to 3 significant digits agree with the library's value?"""
    value = float(shown.replace(",", ""))
    if expected == 0:
        return value == 0
    half_step = 0.5 * 10 ** (math.floor(math.log10(abs(expected))) - 2)  # half a unit in the 3rd digit
    return abs(value - expected) <= half_step * (1 + 1e-9)


def _leading_number(text: str) -> str:
    return re.match(r"\s*([-\d.,]+)", text).group(1)


_SI_PREFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Z": 1e21}


def _check_prefixed(text: str, unit: str, expected: float) -> None:
    """A readout such as "60.3 PFLOP/s" (3 significant digits, an SI prefix) against a value."""
    m = re.match(rf"\s*([\d.,]+) ([kMGTPEZ]?){re.escape(unit)}\b", text)
    assert m, (text, unit)
    assert _sig3_close(m.group(1), expected / _SI_PREFIX[m.group(2)]), (text, expected)


def _readouts(explorer) -> dict:
    return {
        dd.get_attribute("data-quantity"): (dd.get_attribute("data-value"), dd.inner_text())
        for dd in explorer.locator("dd").all()
    }


def _int_attr(explorer, name: str, default: int) -> int:
    raw = explorer.get_attribute(name)
    return default if raw is None else int(raw)


def _check_flop_shares(explorer) -> dict:
    """The flops mode against rl.transformer_flops_per_token at the sliders' current values."""
    shown = _readouts(explorer)
    seq_len = int(explorer.get_attribute("data-current-seq-len"))
    d_model = int(explorer.get_attribute("data-current-d-model"))
    ratio = float(explorer.get_attribute("data-ffn-ratio") or 4)
    d_ff = max(1, round(ratio * d_model))  # what widgets.flop_share_explorer uses
    f = rl.transformer_flops_per_token(
        d_model,
        d_ff,
        _int_attr(explorer, "data-n-layers", 32),
        seq_len,
        _int_attr(explorer, "data-vocab", 32000),
        gated=explorer.get_attribute("data-gated") == "true",
        causal=explorer.get_attribute("data-causal") != "false",
    )
    assert int(shown["d_ff"][0]) == d_ff
    assert int(shown["fwd_per_token"][0]) == f.fwd_per_token
    _check_prefixed(shown["fwd_per_token"][1], "FLOP", f.fwd_per_token)
    for key in ("ffn_total", "qkvo_total", "scores_total", "unembed"):
        raw, text = shown[key]
        assert int(raw) == f[key], (key, raw, f[key])
        assert _sig3_close(_leading_number(text), 100 * f.share(key)), (key, text)  # "60.6 % (8.66 GFLOP)"
        _check_prefixed(text.split("(")[1], "FLOP", f[key])
    return {name: text for name, (_, text) in shown.items()}


def _check_mfu(explorer, spec, precision: str) -> dict:
    """The mfu mode against rl.mfu: the same fraction, or the same refusal in place of a number."""
    shown = _readouts(explorer)
    rate = float(explorer.get_attribute("data-current-tokens-per-s"))
    n_gpus = int(explorer.get_attribute("data-current-n-gpus"))
    n_params = float(explorer.get_attribute("data-n-params") or 7e9)
    convention = explorer.get_attribute("data-convention") or "6N"
    shape = {
        k: int(explorer.get_attribute(f"data-{k.replace('_', '-')}"))
        for k in ("n_layers", "d_model", "seq_len")
        if explorer.get_attribute(f"data-{k.replace('_', '-')}")
    }
    per_token = rl.training_flops_per_token(n_params, convention=convention, **shape)
    expected = {
        "flops_per_token": (per_token, "FLOP"),
        "achieved_flops_per_s": (per_token * rate, "FLOP/s"),  # global tokens/s, every card together
        "peak_flops_per_s": (n_gpus * spec.peak_flops_per_s(precision), "FLOP/s"),
    }
    for name, (value, unit) in expected.items():
        raw, text = shown[name]
        assert math.isclose(float(raw), value, rel_tol=1e-12), (name, raw, value)
        _check_prefixed(text, unit, value)
    note = explorer.locator(".roofline-explorer__note").inner_text()
    try:
        value = rl.mfu(n_params, rate, n_gpus, spec, precision, convention, **shape)
    except rl.ImplausibleMeasurement as exc:
        assert shown["mfu"] == ("refused", "impossible: above 100 %")  # words, not a number
        assert note == str(exc)  # the library's reason, word for word
    else:
        raw, text = shown["mfu"]
        assert math.isclose(float(raw), value, rel_tol=1e-12), (raw, value)
        assert text.endswith(" %") and _sig3_close(_leading_number(text), 100 * value), (text, value)
        assert "likely causes" not in note
    return {name: text for name, (_, text) in shown.items()}


def _check_comms(explorer) -> dict:
    """The comms mode against rl.collective_cost and rl.latency_crossover_bytes at its current values."""
    shown = _readouts(explorer)
    args = (
        explorer.get_attribute("data-current-collective"),
        float(explorer.get_attribute("data-current-message-bytes")),
        int(explorer.get_attribute("data-current-n-ranks")),
        float(explorer.get_attribute("data-alpha-seconds") or 5e-6),
        explorer.get_attribute("data-current-link"),
    )
    algorithm = explorer.get_attribute("data-current-algorithm")
    cost = rl.collective_cost(*args, algorithm=algorithm)
    crossover = rl.latency_crossover_bytes(args[0], args[2], args[3], args[4], algorithm)
    for name, value in (
        ("seconds", cost.seconds),
        ("latency_share", cost.latency_share),
        ("algorithm_bytes_per_s", cost.algorithm_bytes_per_s),
        ("bus_bytes_per_s", cost.bus_bytes_per_s),
        ("crossover_bytes", crossover),
        ("bytes_per_s", cost.bytes_per_s),
    ):
        assert math.isclose(float(shown[name][0]), value, rel_tol=1e-12), (name, shown[name], value)
    _check_prefixed(shown["crossover_bytes"][1], "B", crossover)
    assert _sig3_close(_leading_number(shown["bus_bytes_per_s"][1]), cost.bus_bytes_per_s / 1e9)
    return {name: text for name, (_, text) in shown.items()}


def _check_serving(explorer) -> dict:
    """The serving mode against rl.steady_frontier and rl.best_steady_state at its current controls."""
    from roofline_lib import widgets

    shown = _readouts(explorer)
    gpu = explorer.get_attribute("data-current-gpu")
    name = explorer.get_attribute("data-model-name")
    (cfg,) = [rl.model_config(k) for k in rl.shipped_models() if rl.model_config(k).name == name]
    server = rl.serving_server(cfg, gpu, precision=widgets._serving_precision(rl.gpu(gpu)))
    points = rl.steady_frontier(
        server,
        explorer.get_attribute("data-current-policy"),
        int(explorer.get_attribute("data-prompt-len")),
        int(explorer.get_attribute("data-output-len")),
        chunk_tokens=int(explorer.get_attribute("data-chunk-tokens")),
    )
    ttft = float(explorer.get_attribute("data-current-slo-ttft-s"))
    best = rl.best_steady_state(points, ttft, float(explorer.get_attribute("data-current-slo-tpot-s")))
    assert int(shown["batch"][0]) == best.batch and shown["decode_bound"][0] == best.decode_bound
    for name, value in (("tokens_per_s", best.tokens_per_s), ("tpot_s", best.tpot_s), ("ttft_s", best.ttft_s)):
        assert math.isclose(float(shown[name][0]), value, rel_tol=1e-12), (name, shown[name], value)
    assert _sig3_close(_leading_number(shown["tpot_s"][1]), best.tpot_s * 1e3)
    return {name: text for name, (_, text) in shown.items()}


def _duration_close(text: str, seconds: float) -> bool:
    """A readout such as "1.77 s", "668 ms" or "12.3 µs" (the page's duration) against seconds."""
    m = re.fullmatch(r"([\d.,]+) (s|ms|µs|ns)", text)
    assert m, text
    return _sig3_close(m.group(1), seconds / {"s": 1, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}[m.group(2)])


def _check_parallel(explorer) -> dict:
    """The parallel mode against rl.plan at its current controls, dp and the batch as the widget
    (widgets_parallel.parallel_explorer) derives them; a refusal in the library's words."""
    shown = _readouts(explorer)
    cur = {k: explorer.get_attribute(f"data-current-{k.replace('_', '-')}") for k in ("model", "node", "recompute")}
    n, tp, pp, zero = (int(explorer.get_attribute(f"data-current-{k}")) for k in ("n-gpus", "tp", "pp", "zero"))
    global_batch, seq_len = (int(explorer.get_attribute(f"data-{k}")) for k in ("global-batch", "seq-len"))
    note = explorer.locator(".roofline-explorer__note").inner_text()
    dp = n // (tp * pp)
    try:
        if n % (tp * pp):
            raise ValueError(f"tp x pp = {tp * pp} GPUs must divide n_gpus = {n} GPUs")  # the widget's own check
        p = rl.plan(
            cur["model"],
            rl.cluster(cur["node"], n),
            dp=dp,
            tp=tp,
            pp=pp,
            zero=zero,
            global_batch=max(global_batch, dp) // dp * dp,
            seq_len=seq_len,
            recompute=cur["recompute"],
        )
    except ValueError as exc:
        assert shown["binding"] == ("refused", "layout refused") and note == str(exc), (shown["binding"], note)
        return {name: text for name, (_, text) in shown.items()}
    assert int(shown["dp"][0]) == dp and explorer.get_attribute("data-current-dp") == str(dp)
    assert shown["binding"] == (p.binding, f"{p.binding} binds")
    for name, value in (("step_seconds", p.step_seconds), ("serial_seconds", p.serial_seconds)):
        assert math.isclose(float(shown[name][0]), value, rel_tol=1e-12), (name, shown[name], value)
        assert _duration_close(shown[name][1], value), (name, shown[name], value)
    for name in ("compute", "hbm", "tp", "cp", "dp", "ep", "pp"):
        raw, text = shown[f"roof_{name}"]
        if name in p.roofs:
            assert math.isclose(float(raw), p.roofs[name], rel_tol=1e-12) and _duration_close(text, p.roofs[name])
        else:
            assert raw == "" and "no traffic" in text, (name, raw, text)
    assert math.isclose(float(shown["mfu"][0]), p.mfu, rel_tol=1e-12)
    assert _sig3_close(_leading_number(shown["mfu"][1]), 100 * p.mfu), shown["mfu"]
    m = p.memory
    for name, value in (
        ("weights", m.weights),
        ("gradients", m.gradients),
        ("optimizer", m.optimizer),
        ("activations", m.activations),
        ("memory_total", m.total),
    ):
        raw, text = shown[name]
        assert math.isclose(float(raw), value, rel_tol=1e-12), (name, raw, value)
        assert text.endswith(" GiB") and _sig3_close(_leading_number(text), value / 2**30), (name, text)
    assert shown["fits"][0] == ("true" if p.fits else "false")
    assert shown["fits"][1].startswith("fits in" if p.fits else "does not fit in"), shown["fits"]
    return {name: text for name, (_, text) in shown.items()}


def _check_energy(explorer) -> dict:
    """The energy mode against rl.decode_energy (no cap and under the cap) and rl.cost_per_million_tokens at
    its current controls, as widgets_energy.energy_point prices them; a refusal in the library's words."""
    from roofline_lib import widgets_energy
    from roofline_lib.core.formatting import energy_text, power_text

    shown = _readouts(explorer)
    cur = {k: explorer.get_attribute(f"data-current-{k}") for k in ("gpu", "bytes-per-param", "cap-watts", "batch")}
    context = int(explorer.get_attribute("data-current-context-len"))
    name = explorer.get_attribute("data-model-name")
    (cfg,) = [rl.model_config(k) for k in rl.shipped_models() if rl.model_config(k).name == name]
    note = explorer.locator(".roofline-explorer__note").inner_text()
    try:
        price = rl.gpu_hour_price(cur["gpu"])
    except ValueError:
        price = None
    try:
        server = rl.serving_server(cfg, cur["gpu"], bytes_per_param=int(cur["bytes-per-param"]))
        p = widgets_energy.energy_point(server, int(cur["batch"]), context, float(cur["cap-watts"]), price)
    except ValueError as exc:
        assert shown["joules_per_token"] == ("refused", "refused") and note == str(exc), (shown, note)
        return {name: text for name, (_, text) in shown.items()}
    for key, value in (
        ("joules_per_token", p.free.joules_per_token),
        ("average_watts", p.free.average_watts),
        ("step_seconds", p.free.seconds),
        ("capped_joules_per_token", p.capped.joules_per_token),
        ("capped_step_seconds", p.capped.seconds),
    ):
        assert math.isclose(float(shown[key][0]), value, rel_tol=1e-12), (key, shown[key], value)
    assert shown["joules_per_token"][1] == energy_text(p.free.joules_per_token)  # "41.9 mJ", as the library writes it
    assert shown["average_watts"][1] == power_text(p.free.average_watts)
    assert shown["capped_joules_per_token"][1].startswith(energy_text(p.capped.joules_per_token))
    assert ("does not bind" in shown["capped_joules_per_token"][1]) == (not p.cap_binds)
    assert shown["parts"][1] == widgets_energy._shares(p.free)
    if price is None:
        assert shown["dollars_per_million"] == ("", "no price on record")
    else:
        assert math.isclose(float(shown["dollars_per_million"][0]), p.dollars_per_million, rel_tol=1e-12)
        assert math.isclose(float(shown["capped_dollars_per_million"][0]), p.capped_dollars_per_million, rel_tol=1e-12)
        assert price.date in note
    assert note.startswith("DOES NOT FIT") == (not p.feasible), note
    return {name: text for name, (_, text) in shown.items()}


def _check_explorer(explorer) -> dict:
    """Compare every readout of one explorer with roofline_lib; return what it showed."""
    mode = explorer.get_attribute("data-mode")
    if mode == "energy":
        return _check_energy(explorer)
    if mode == "flops":
        return _check_flop_shares(explorer)
    if mode == "comms":
        return _check_comms(explorer)
    if mode == "serving":
        return _check_serving(explorer)
    if mode == "parallel":
        return _check_parallel(explorer)
    gpu = explorer.get_attribute("data-current-gpu")
    precision = explorer.get_attribute("data-current-precision")
    spec = rl.gpu(gpu)
    options = explorer.locator("select[name=precision] option").all_inner_texts()
    assert options == list(spec.precisions), (gpu, options)  # only what the chip has
    if mode == "mfu":
        return _check_mfu(explorer, spec, precision)
    shown = _readouts(explorer)
    if mode == "decode":
        choice = explorer.locator("select[name=n_params]").input_value()  # "7e9" or "model:<key>"
        model = rl.model_config(choice[len("model:") :]) if choice.startswith("model:") else float(choice)
        batch = int(explorer.locator("output").inner_text())
        d = rl.decode_roofline(
            model, gpu, bytes_per_param=rl.bytes_per_element(precision), precision=precision, batch=batch
        )
        expected = {
            "weight_bytes": (d.weight_bytes, 1e9),  # shown in GB
            "memory_seconds": (d.memory_seconds, 1e-3),  # shown in ms
            "compute_seconds": (d.compute_seconds, 1e-3),
            "tokens_per_s": (d.tokens_per_s, 1),
            "tokens_per_s_per_sequence": (d.tokens_per_s / batch, 1),
        }
        bound = d.bound
    else:
        intensity = float(shown["intensity"][0])
        assert float(_leading_number(shown["intensity"][1]).replace(",", "")) == intensity
        expected = {
            "peak_flops_per_s": (spec.peak_flops_per_s(precision), 1e12),  # shown in TFLOP/s
            "hbm_bytes_per_s": (spec.hbm_bytes_per_s, 1e12),  # TB/s
            "ridge_flops_per_byte": (rl.ridge_point(spec, precision), 1),
            "attainable_flops_per_s": (rl.attainable_flops_per_s(intensity, spec, precision), 1e12),
        }
        bound = "memory" if intensity < rl.ridge_point(spec, precision) else "compute"
    for name, (value, unit) in expected.items():
        raw, text = shown[name]
        assert math.isclose(float(raw), value, rel_tol=1e-12), (name, raw, value)
        assert _sig3_close(_leading_number(text), value / unit), (name, text, value / unit)
    assert shown["bound"][0] == bound
    return {name: text for name, (_, text) in shown.items()}


def test_every_explorer_agrees_with_the_library(tour, site, pages):
    explorer_pages = [p for p in pages if "roofline-explorer" in (site / p).read_text(encoding="utf-8")]
    assert {CHAPTER_1, CHAPTER_3, CHAPTER_5} <= set(explorer_pages), explorer_pages
    for page in explorer_pages:
        v = tour[page]  # read only: the tests that move a control open a page of their own
        explorers = v.page.locator(".roofline-explorer[data-roofline-mounted]")
        assert explorers.count() == v.page.locator(".roofline-explorer").count() >= 1, page
        for i in range(explorers.count()):
            _check_explorer(explorers.nth(i))
        assert not v.problems, "\n".join(v.problems)


def test_explorer_updates_when_its_controls_move(visit):
    v = visit(CHAPTER_1)
    explorer = v.page.locator('.roofline-explorer[data-mode="intensity"]').first
    attainable = explorer.locator('dd[data-quantity="attainable_flops_per_s"]')
    assert explorer.get_attribute("data-current-gpu") == rl.gpu("A100").key
    # At 10 FLOP/byte the A100 is memory-bound: 2.039e12 B/s * 10 = 20.39e12 -> "20.4 TFLOP/s"
    assert attainable.inner_text() == "20.4 TFLOP/s"
    explorer.locator('input[name="intensity"]').fill("3")  # 10**3 = 1000 FLOP/byte, past the ridge
    # past the A100's bf16 ridge (153) the flat roof binds: 312 TFLOP/s
    assert attainable.inner_text() == "312 TFLOP/s"
    assert explorer.locator('dd[data-quantity="bound"]').get_attribute("data-value") == "compute"
    explorer.locator('select[name="gpu"]').select_option(rl.gpu("H100").key)
    assert attainable.inner_text() == "990 TFLOP/s"  # H100 SXM dense bf16: 1979 / 2 = 989.5 -> 990
    explorer.locator('select[name="precision"]').select_option("fp8")
    _check_explorer(explorer)
    # a chip without fp8 falls back to bf16 instead of inventing a roof
    explorer.locator('select[name="gpu"]').select_option(rl.gpu("A100").key)
    assert explorer.get_attribute("data-current-precision") == "bf16"
    _check_explorer(explorer)
    assert not v.problems, "\n".join(v.problems)


def test_mfu_explorer_updates_and_refuses_an_impossible_rate(visit):
    v = visit(CHAPTER_5)
    explorer = v.page.locator('.roofline-explorer[data-mode="mfu"]').first
    mfu = explorer.locator('dd[data-quantity="mfu"]')
    note = explorer.locator(".roofline-explorer__note")
    # Llama-2-7B's exact N (scenarios.MFU_EXAMPLE): 6 * 6.7384e9 * 1.5e6 = 6.065e16 FLOP/s
    # against 256 * 312e12 = 7.987e16 FLOP/s: 75.9 %
    assert mfu.inner_text() == "75.9 %"
    explorer.locator('input[name="tokens_per_s"]').fill("6.5")  # 10**6.5 -> 3.16e6 tokens/s
    # 6 * 6.7384e9 * 3.16e6 = 1.2776e17 FLOP/s: 160 % of the peak, refused with the reason
    assert explorer.get_attribute("data-current-tokens-per-s") == "3160000"
    assert mfu.get_attribute("data-value") == "refused" and mfu.inner_text() == "impossible: above 100 %"
    assert note.inner_text().startswith("MFU of 160.0% is impossible") and "likely causes" in note.inner_text()
    assert "roofline-explorer__meter--refused" in explorer.locator("rect").first.get_attribute("class")
    _check_explorer(explorer)
    explorer.locator('input[name="n_gpus"]').fill("9")  # the 10th notch: 2**9 = 512 GPUs
    assert explorer.get_attribute("data-current-n-gpus") == "512"
    assert mfu.inner_text() == "80 %"  # 1.2776e17 / (512 * 312e12) = 0.7998, shown to 3 figures
    _check_explorer(explorer)
    explorer.locator('select[name="gpu"]').select_option(rl.gpu("H100").key)
    explorer.locator('select[name="precision"]').select_option("fp8")
    _check_explorer(explorer)  # also: the precision list is the H100's, fp8 included
    explorer.locator('select[name="gpu"]').select_option(rl.gpu("A100").key)
    assert explorer.get_attribute("data-current-precision") == "bf16"  # the A100 has no fp8
    _check_explorer(explorer)
    assert not v.problems, "\n".join(v.problems)


def test_flops_explorer_updates_when_its_sliders_move(visit):
    v = visit(CHAPTER_3)
    explorer = v.page.locator('.roofline-explorer[data-mode="flops"]').first
    scores = explorer.locator('dd[data-quantity="scores_total"]')
    before = _check_explorer(explorer)
    assert explorer.get_attribute("data-current-seq-len") == "4096"
    # Llama-2-7B at s = 4096: scores 32 * 2 * 4096 * 4096 = 1.074e9 of 14.29e9 FLOP = 7.52 %
    assert before["scores_total"] == "7.52 % (1.07 GFLOP)"
    seq = explorer.locator('input[name="seq_len"]')
    seq.fill(seq.get_attribute("max"))  # the last notch: 2**17 = 131,072 tokens
    assert explorer.get_attribute("data-current-seq-len") == "131072"
    after = _check_explorer(explorer)
    assert float(_leading_number(after["scores_total"])) > 50  # the scores take over at long context
    explorer.locator('input[name="d_model"]').fill("0")  # the first notch: d_model = 256
    assert explorer.get_attribute("data-current-d-model") == "256"
    narrow = _check_explorer(explorer)
    assert float(_leading_number(narrow["scores_total"])) > float(_leading_number(after["scores_total"]))
    assert scores.get_attribute("data-share") is not None
    assert explorer.locator("rect.roofline-explorer__bar").count() == 4
    assert not v.problems, "\n".join(v.problems)


def test_parallel_explorer_updates_and_refuses_a_layout(visit):
    v = visit(CHAPTER_9)
    explorer = v.page.locator('.roofline-explorer[data-mode="parallel"]').first
    note = explorer.locator(".roofline-explorer__note")
    start = _check_explorer(explorer)
    # chapter 9's start, Llama-3-70B on 64 H100s with tp = 8, dp = 8, ZeRO-1: the compute and the tp
    # all-reduces it waits for bind (1.77 + 0.668 s), and 16.4 + 16.4 + 12.3 GiB of state + 10.6 GiB of
    # activations = 55.8 GiB of 80 fit
    assert start["binding"] == "compute + tp binds" and start["memory_total"] == "55.8 GiB", start
    assert start["fits"] == "fits in 80 GiB"
    explorer.locator('input[name="tp"]').fill("0")  # the first notch: tp = 1, so dp = 64
    assert explorer.get_attribute("data-current-dp") == "64"
    assert _check_explorer(explorer)["fits"].startswith("does not fit")  # 2 bytes x 70.6e9 of weights each
    explorer.locator('input[name="n_gpus"]').fill("0")  # 8 GPUs
    explorer.locator('input[name="tp"]').fill("3")  # tp = 8
    explorer.locator('input[name="pp"]').fill("1")  # pp = 2: 16 GPUs asked of 8
    assert note.inner_text() == "tp x pp = 16 GPUs must divide n_gpus = 8 GPUs"
    _check_explorer(explorer)
    explorer.locator('input[name="pp"]').fill("0")
    explorer.locator('select[name="model"]').select_option("qwen2-7b")  # 28 heads: tp = 8 refused
    assert note.inner_text().startswith("tp must divide the model's 28 attention heads")
    _check_explorer(explorer)
    explorer.locator('select[name="model"]').select_option("mixtral-8x7b")
    explorer.locator('select[name="node"]').select_option("8x-b200")
    explorer.locator('select[name="zero"]').select_option("3")
    explorer.locator('select[name="recompute"]').select_option("full")
    _check_explorer(explorer)
    assert explorer.locator("rect.roofline-explorer__bar--binding").count() == 1
    assert not v.problems, "\n".join(v.problems)


def test_energy_explorer_updates_and_refuses_bad_input(visit):
    v = visit(CHAPTER_11)
    explorer = v.page.locator('.roofline-explorer[data-mode="energy"]').first
    note = explorer.locator(".roofline-explorer__note")
    start = _check_explorer(explorer)
    # chapter 11's start, Llama-3-8B in bf16 on an H100 at batch 64 and 2,048 keys: 2.68 J a step over 64
    # tokens at 279 W, $4.916 an hour over 6,660 tokens/s; under the 250 W cap the step's dynamic 1.513 J
    # take 1.513 / (250 - 121.7) W = 11.8 ms
    assert start["joules_per_token"] == "41.9 mJ" and start["average_watts"] == "279 W", start
    assert start["capped_joules_per_token"] == "46.1 mJ" and start["capped_step_seconds"] == "11.8 ms", start
    assert start["dollars_per_million"] == "$0.205" and start["capped_dollars_per_million"] == "$0.252", start
    assert explorer.locator("polyline[data-line=capped]").count() == 2  # a dashed line in each panel
    cap = explorer.locator('input[name="cap_watts"]')
    cap.fill("200")  # the step slows to 1.513 J / (200 - 121.7) W = 19.3 ms
    moved = _check_explorer(explorer)
    assert moved["capped_joules_per_token"] == "60.4 mJ" and moved["capped_step_seconds"] == "19.3 ms", moved
    cap.fill("400")  # above the step's 279 W: the cap does not bind
    assert _check_explorer(explorer)["capped_joules_per_token"] == "41.9 mJ (the cap does not bind)"
    cap.fill("110")  # below the H100's static power: refused in the library's words
    assert note.inner_text().startswith("cap_watts=110 W is at or below the H100 SXM's static power of 121.7 W")
    _check_explorer(explorer)
    explorer.locator('select[name="gpu"]').select_option("a100-80gb-sxm")  # 80 W static: 110 W is a cap again
    no_price = _check_explorer(explorer)
    assert no_price["dollars_per_million"] == "no price on record"
    explorer.locator('select[name="bytes_per_param"]').select_option("1")  # the A100 has no fp8
    assert note.inner_text().startswith("A100 80GB SXM has no fp8")
    _check_explorer(explorer)
    explorer.locator('select[name="bytes_per_param"]').select_option("2")
    cap.fill("300")
    explorer.locator('select[name="gpu"]').select_option("h200")
    _check_explorer(explorer)
    explorer.locator('input[name="batch"]').fill("10")  # the last notch: 1,024 sequences of 2,048 keys, 275 GB of KV
    assert note.inner_text().startswith("DOES NOT FIT: Llama-3-8B with 1024 sequences")
    _check_explorer(explorer)
    explorer.locator('input[name="context_len"]').fill("0")  # 256 keys
    cap.fill("1000")
    _check_explorer(explorer)
    assert not v.problems, "\n".join(v.problems)


def test_search_from_disk_lists_results_and_says_snippets_need_make_serve(context, site):
    page = context.new_page()
    try:
        errors = []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((site / "search.html").resolve().as_uri() + "?q=ridge", wait_until="load")
        results = page.locator("#search-results ul.search li")
        results.first.wait_for(timeout=15000)
        assert any("speed limits" in t.lower() for t in results.all_inner_texts())
        assert "make serve" in page.locator(".roofline-search-note").inner_text()
        page.wait_for_timeout(500)
        assert not errors, errors  # no CORS error per result: no snippet is fetched from disk
    finally:
        page.close()


def test_search_returns_results(visit):
    v = visit("search.html?q=ridge")
    results = v.page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=15000)
    assert results.count() >= 1
    assert any("speed limits" in t.lower() for t in results.all_inner_texts())
    assert not v.problems, "\n".join(v.problems)


def test_footer_shows_the_year_and_the_authors(tour):
    v = tour["book/index.html"]
    footer = " ".join(v.page.locator("footer").all_inner_texts())
    assert "The Roofline Course authors" in footer
    assert "2026" in footer
    assert not v.problems


def test_screenshots_of_the_landing_page_and_chapter_1(tour):
    SHOTS.mkdir(parents=True, exist_ok=True)
    for path, name in (("book/index.html", "landing.png"), (CHAPTER_1, "chapter-01.png")):
        v = tour[path]
        if path == CHAPTER_1:  # bring the live explorer into the shot
            v.page.locator(".roofline-explorer").first.scroll_into_view_if_needed()
        target = SHOTS / name
        v.page.screenshot(path=str(target), full_page=False)
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and target.stat().st_size > 10_000
        assert not v.problems, "\n".join(v.problems)


def test_explorer_works_from_a_file_url(context, site):
    """The registry is a script, not a fetched file, so the explorer also runs from disk."""
    page = context.new_page()
    try:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((site / CHAPTER_1).resolve().as_uri(), wait_until="load")
        explorer = page.locator(".roofline-explorer[data-roofline-mounted]").first
        explorer.wait_for(timeout=10000)
        assert explorer.locator('dd[data-quantity="ridge_flops_per_byte"]').inner_text() == "153 FLOP/byte"
        assert not errors, errors
    finally:
        page.close()
