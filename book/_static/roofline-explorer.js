/* The Roofline Course: a live roofline explorer for the static website, no kernel needed.
 *
 * It reads window.ROOFLINE_REGISTRY, which the book's Sphinx extension (book/_ext/roofline_site.py)
 * writes from roofline_lib.export at build time, so the page and the library share one registry.
 * It draws into every element with class "roofline-explorer" and does nothing on a page without
 * one. Markup (one line in a chapter):
 *
 *   <div class="roofline-explorer" data-mode="intensity" data-gpu="A100" data-precision="bf16" data-intensity="10"></div>
 *   <div class="roofline-explorer" data-mode="decode" data-gpu="H100" data-precision="bf16" data-n-params="7e9" data-batch="1"></div>
 *
 * The arithmetic mirrors roofline_lib and is tested against it (tests/test_explorer_js.py):
 *   ridge       = peak / bandwidth                                  (roofline.ridge_point)
 *   attainable  = min(peak, bandwidth * intensity)                  (roofline.attainable_flops_per_s)
 *   decode step = max(N * b / bandwidth, 2 * N * batch / peak)       (inference.decode_roofline)
 *   tokens/s    = batch / step
 * Everything is SI inside; the readouts convert to TFLOP/s, TB/s, GB and ms, 3 significant digits.
 */
(function (root) {
  "use strict";

  var FLOP_PER_MAC = 2; // one multiply plus one add

  // ------------------------------------------------------------------ the math (pure functions)

  function registry() {
    var reg = root.ROOFLINE_REGISTRY;
    if (!reg || !reg.gpus) {
      throw new Error("the GPU registry (roofline-registry.js) is not loaded on this page");
    }
    return reg;
  }

  function normalise(name) {
    return String(name).trim().toLowerCase().replace(/_/g, "-").split(/\s+/).join(" ");
  }

  /** The registry record for a key, a name or an alias, as roofline_lib.gpu() resolves it. */
  function findGpu(name) {
    var gpus = registry().gpus;
    var norm = normalise(name);
    var candidates = [norm, norm.replace(/ /g, "-"), norm.replace(/-/g, " ")];
    var keys = Object.keys(gpus);
    for (var c = 0; c < candidates.length; c++) {
      for (var k = 0; k < keys.length; k++) {
        var rec = gpus[keys[k]];
        var names = [rec.key, rec.name.toLowerCase()].concat(rec.aliases.map(function (a) {
          return a.toLowerCase();
        }));
        if (names.indexOf(candidates[c]) >= 0) return rec;
      }
    }
    throw new Error("unknown GPU " + JSON.stringify(name) + "; known GPUs: " + keys.join(", "));
  }

  function asGpu(gpu) {
    return typeof gpu === "string" ? findGpu(gpu) : gpu;
  }

  function positive(value, what, unit) {
    if (typeof value !== "number" || !isFinite(value) || value <= 0) {
      throw new Error(what + " must be a positive finite number of " + unit + ", got " + value);
    }
    return value;
  }

  /** Dense peak FLOP/s of a GPU in a precision; an error if the chip has no such mode. */
  function peakFlopsPerS(gpu, precision) {
    var rec = asGpu(gpu);
    var peak = rec.dense_flops_per_s[precision];
    if (peak === undefined) {
      throw new Error(rec.name + " has no " + precision + "; it has: " + rec.precisions.join(", "));
    }
    return peak;
  }

  function ridgePoint(gpu, precision) {
    var rec = asGpu(gpu);
    return peakFlopsPerS(rec, precision) / rec.hbm_bytes_per_s;
  }

  function attainableFlopsPerS(gpu, precision, intensity) {
    var rec = asGpu(gpu);
    positive(intensity, "intensity", "FLOP/byte");
    return Math.min(peakFlopsPerS(rec, precision), rec.hbm_bytes_per_s * intensity);
  }

  /** The decode ceiling of inference.decode_roofline: every step streams all weights once. */
  function decodeCeiling(gpu, precision, nParams, batch, bytesPerParam) {
    var rec = asGpu(gpu);
    positive(nParams, "n_params", "parameters");
    if (!(Number.isInteger(batch) && batch > 0)) {
      throw new Error("batch must be a positive whole number of sequences, got " + batch);
    }
    var bytes = bytesPerParam === undefined ? registry().bytes_per_element[precision] : bytesPerParam;
    positive(bytes, "bytes_per_param", "bytes per parameter");
    var peak = peakFlopsPerS(rec, precision);
    var weightBytes = nParams * bytes;
    var flopsPerToken = FLOP_PER_MAC * nParams;
    var memorySeconds = weightBytes / rec.hbm_bytes_per_s;
    var computeSeconds = (flopsPerToken * batch) / peak;
    var secondsPerStep = Math.max(memorySeconds, computeSeconds);
    var tokensPerS = batch / secondsPerStep;
    var achieved = flopsPerToken * tokensPerS;
    return {
      weightBytes: weightBytes,
      bytesPerParam: bytes,
      capacityBytes: rec.hbm_capacity_bytes,
      fitsInMemory: weightBytes <= rec.hbm_capacity_bytes,
      memorySeconds: memorySeconds,
      computeSeconds: computeSeconds,
      secondsPerStep: secondsPerStep,
      msPerToken: secondsPerStep * 1e3,
      tokensPerS: tokensPerS,
      tokensPerSPerSequence: tokensPerS / batch,
      achievedFlopsPerS: achieved,
      peakFlopsPerS: peak,
      shareOfPeak: achieved / peak,
      bound: memorySeconds >= computeSeconds ? "memory" : "compute",
    };
  }

  /** Round to 3 significant digits and print with thousands separators: 12345 -> "12,300". */
  function sig3(x) {
    if (x === 0) return "0";
    var rounded = Number(x.toPrecision(3));
    var digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(rounded))));
    return rounded.toLocaleString("en-US", {
      minimumFractionDigits: 0,
      maximumFractionDigits: digits,
      useGrouping: true,
    });
  }

  var api = {
    findGpu: findGpu,
    peakFlopsPerS: peakFlopsPerS,
    ridgePoint: ridgePoint,
    attainableFlopsPerS: attainableFlopsPerS,
    decodeCeiling: decodeCeiling,
    sig3: sig3,
  };
  root.RooflineExplorer = api;

  if (typeof document === "undefined") return; // loaded outside a browser (the test runs it in node)

  // ------------------------------------------------------------------ the page

  var SVG_NS = "http://www.w3.org/2000/svg"; // the SVG namespace name, not a network address
  var INTENSITY_LOG10 = [-1, 4]; // the slider spans 0.1 to 10,000 FLOP/byte
  var BATCH_LOG2_MAX = 12; // batch 1 to 4096 in powers of two
  var MODEL_SIZES = [1e9, 7e9, 13e9, 70e9, 405e9];
  var counter = 0;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      node.appendChild(c);
    });
    return node;
  }

  function svgEl(tag, attrs) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) {
      node.setAttribute(k, attrs[k]);
    });
    return node;
  }

  /** A snapped intensity: 10^v rounded to 3 significant digits, so the label is the exact input. */
  function intensityFromSlider(v) {
    return Number(Math.pow(10, Number(v)).toPrecision(3));
  }

  function field(labelText, control) {
    return el("label", { class: "roofline-explorer__field" }, [
      el("span", { class: "roofline-explorer__label", text: labelText }),
      control,
    ]);
  }

  function readout(dl, name, labelText) {
    var dd = el("dd", { "data-quantity": name });
    dl.appendChild(el("dt", { text: labelText }));
    dl.appendChild(dd);
    return dd;
  }

  function show(dd, value, text) {
    dd.setAttribute("data-value", String(value));
    dd.textContent = text;
  }

  /** A short axis label for a power of ten: 0.1, 1, 100, 10k, 1M. */
  function tick(v) {
    if (v >= 1e6) return sig3(v / 1e6) + "M";
    if (v >= 1e4) return sig3(v / 1e3) + "k";
    return sig3(v);
  }

  /** Draw y = min(slope * x, flat) on log-log axes with a marker at x; returns nothing. */
  function drawRoof(svg, o) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var W = 420, H = 250, L = 60, R = 20, T = 10, B = 38;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var lx0 = Math.log10(o.xMin), lx1 = Math.log10(o.xMax);
    var lyTop = Math.ceil(Math.log10(o.flat * 2));
    var lyBot = Math.min(Math.floor(Math.log10(o.slope * o.xMin)), lyTop - 3);
    function px(x) { return L + ((Math.log10(x) - lx0) / (lx1 - lx0)) * (W - L - R); }
    function py(y) { return T + ((lyTop - Math.log10(y)) / (lyTop - lyBot)) * (H - T - B); }
    var g = svgEl("g", { class: "roofline-explorer__axes" });
    for (var e = Math.ceil(lx0); e <= lx1; e++) {
      var x = px(Math.pow(10, e));
      g.appendChild(svgEl("line", { x1: x, x2: x, y1: T, y2: H - B, class: "grid" }));
      var t = svgEl("text", { x: x, y: H - B + 14, "text-anchor": "middle" });
      t.textContent = tick(Math.pow(10, e));
      g.appendChild(t);
    }
    for (var f = lyBot; f <= lyTop; f++) {
      var y = py(Math.pow(10, f));
      g.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y, y2: y, class: "grid" }));
      if (f === lyBot) continue; // the corner belongs to the x axis's first label
      var u = svgEl("text", { x: L - 4, y: y + 4, "text-anchor": "end" });
      u.textContent = tick(Math.pow(10, f) / o.yScale);
      g.appendChild(u);
    }
    var xl = svgEl("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" });
    xl.textContent = o.xLabel;
    g.appendChild(xl);
    var yl = svgEl("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (T + H - B) / 2 + ")" });
    yl.textContent = o.yLabel;
    g.appendChild(yl);
    svg.appendChild(g);
    var knee = o.flat / o.slope;
    var pts = [[o.xMin, o.slope * o.xMin]];
    if (knee > o.xMin && knee < o.xMax) pts.push([knee, o.flat]);
    pts.push([o.xMax, Math.min(o.flat, o.slope * o.xMax)]);
    svg.appendChild(svgEl("polyline", {
      class: "roofline-explorer__roof",
      points: pts.map(function (p) { return px(p[0]) + "," + py(p[1]); }).join(" "),
    }));
    if (knee > o.xMin && knee < o.xMax) {
      svg.appendChild(svgEl("line", { class: "roofline-explorer__ridge", x1: px(knee), x2: px(knee),
        y1: py(o.flat), y2: H - B }));
    }
    svg.appendChild(svgEl("circle", { class: "roofline-explorer__point", r: 5,
      cx: px(o.x), cy: py(Math.min(o.flat, o.slope * o.x)) }));
  }

  function fillSelect(select, items, selected) {
    while (select.firstChild) select.removeChild(select.firstChild);
    items.forEach(function (item) {
      var option = el("option", { value: item.value, text: item.text });
      if (item.value === selected) option.selected = true;
      select.appendChild(option);
    });
    select.value = selected;
  }

  function mount(host) {
    if (host.getAttribute("data-roofline-mounted")) return; // draw each explorer once
    host.setAttribute("data-roofline-mounted", "true");
    var reg = registry();
    var id = "roofline-explorer-" + ++counter;
    var mode = host.getAttribute("data-mode") === "decode" ? "decode" : "intensity";
    var gpu = findGpu(host.getAttribute("data-gpu") || "A100");
    var precision = host.getAttribute("data-precision") || "bf16";
    if (gpu.precisions.indexOf(precision) < 0) {
      throw new Error("roofline explorer: " + gpu.name + " has no " + precision);
    }

    host.setAttribute("role", "group");
    host.setAttribute("aria-labelledby", id + "-title");
    host.appendChild(el("p", { class: "roofline-explorer__title", id: id + "-title",
      text: mode === "decode"
        ? "Decode explorer (runs in this page, no kernel needed)"
        : "Roofline explorer (runs in this page, no kernel needed)" }));

    var gpuSelect = el("select", { name: "gpu" });
    fillSelect(gpuSelect, Object.keys(reg.gpus).map(function (k) {
      return { value: k, text: reg.gpus[k].name };
    }), gpu.key);
    var precisionSelect = el("select", { name: "precision" });
    var controls = el("div", { class: "roofline-explorer__controls" }, [
      field("GPU", gpuSelect), field("Precision", precisionSelect),
    ]);

    // The starting point is the one the markup asks for; moving the slider then steps on its grid.
    var slider, sliderValue, modelSelect, current;
    if (mode === "intensity") {
      var start = Number(host.getAttribute("data-intensity") || "10");
      current = Number(positive(start, "data-intensity", "FLOP/byte").toPrecision(3));
      slider = el("input", { type: "range", name: "intensity", min: String(INTENSITY_LOG10[0]),
        max: String(INTENSITY_LOG10[1]), step: "0.01", value: String(Math.log10(start)),
        "aria-label": "Arithmetic intensity, FLOP per byte (logarithmic)" });
      sliderValue = el("output", { class: "roofline-explorer__slider-value" });
      controls.appendChild(field("Intensity (FLOP/byte)", el("span", {}, [slider, sliderValue])));
    } else {
      var nParams = Number(host.getAttribute("data-n-params") || "7e9");
      var sizes = MODEL_SIZES.indexOf(nParams) < 0 ? MODEL_SIZES.concat([nParams]) : MODEL_SIZES;
      modelSelect = el("select", { name: "n_params" });
      fillSelect(modelSelect, sizes.slice().sort(function (a, b) { return a - b; }).map(function (n) {
        return { value: String(n), text: sig3(n / 1e9) + "B parameters" };
      }), String(nParams));
      controls.appendChild(field("Model", modelSelect));
      var batch0 = Number(host.getAttribute("data-batch") || "1");
      if (!(Number.isInteger(batch0) && batch0 > 0)) {
        throw new Error("data-batch must be a positive whole number of sequences, got " + batch0);
      }
      current = batch0;
      slider = el("input", { type: "range", name: "batch", min: "0", max: String(BATCH_LOG2_MAX),
        step: "1", value: String(Math.round(Math.log2(batch0))),
        "aria-label": "Decode batch size, sequences per step (powers of two)" });
      sliderValue = el("output", { class: "roofline-explorer__slider-value" });
      controls.appendChild(field("Batch (sequences)", el("span", {}, [slider, sliderValue])));
    }
    host.appendChild(controls);

    var body = el("div", { class: "roofline-explorer__body" });
    var svg = svgEl("svg", { class: "roofline-explorer__chart", role: "img" });
    var svgTitle = svgEl("title", {});
    var dl = el("dl", { class: "roofline-explorer__readout", "aria-live": "polite" });
    body.appendChild(svg);
    body.appendChild(dl);
    host.appendChild(body);
    var note = el("p", { class: "roofline-explorer__note" });
    host.appendChild(note);

    var out = {};
    if (mode === "intensity") {
      out.peak = readout(dl, "peak_flops_per_s", "Compute roof");
      out.bw = readout(dl, "hbm_bytes_per_s", "Memory roof");
      out.ridge = readout(dl, "ridge_flops_per_byte", "Ridge point");
      out.intensity = readout(dl, "intensity", "Intensity");
      out.attainable = readout(dl, "attainable_flops_per_s", "Ceiling");
      out.bound = readout(dl, "bound", "Bound");
    } else {
      out.weights = readout(dl, "weight_bytes", "Weights");
      out.memory = readout(dl, "memory_seconds", "Weight stream");
      out.compute = readout(dl, "compute_seconds", "Arithmetic");
      out.tokens = readout(dl, "tokens_per_s", "Ceiling");
      out.perSeq = readout(dl, "tokens_per_s_per_sequence", "Per sequence");
      out.bound = readout(dl, "bound", "Bound");
    }

    function syncPrecisions() {
      var rec = reg.gpus[gpuSelect.value];
      if (rec.precisions.indexOf(precision) < 0) {
        precision = rec.precisions.indexOf("bf16") >= 0 ? "bf16" : rec.precisions[0];
      }
      fillSelect(precisionSelect, rec.precisions.map(function (p) {
        return { value: p, text: p };
      }), precision);
    }

    function update() {
      var rec = reg.gpus[gpuSelect.value];
      precision = precisionSelect.value;
      var peak = peakFlopsPerS(rec, precision);
      host.setAttribute("data-current-gpu", rec.key);
      host.setAttribute("data-current-precision", precision);
      if (mode === "intensity") {
        var intensity = current;
        var ridge = ridgePoint(rec, precision);
        var attainable = attainableFlopsPerS(rec, precision, intensity);
        sliderValue.textContent = sig3(intensity);
        show(out.peak, peak, sig3(peak / 1e12) + " TFLOP/s dense " + precision);
        show(out.bw, rec.hbm_bytes_per_s, sig3(rec.hbm_bytes_per_s / 1e12) + " TB/s " + rec.memory_kind);
        show(out.ridge, ridge, sig3(ridge) + " FLOP/byte");
        show(out.intensity, intensity, sig3(intensity) + " FLOP/byte");
        show(out.attainable, attainable, sig3(attainable / 1e12) + " TFLOP/s");
        var bound = intensity < ridge ? "memory" : "compute";
        show(out.bound, bound, bound + " (" + sig3((100 * attainable) / peak) + " % of peak)");
        svgTitle.textContent = rec.name + " " + precision + " roofline; a kernel at " + sig3(intensity) +
          " FLOP/byte can reach at most " + sig3(attainable / 1e12) + " TFLOP/s";
        drawRoof(svg, { xMin: Math.pow(10, INTENSITY_LOG10[0]), xMax: Math.pow(10, INTENSITY_LOG10[1]),
          slope: rec.hbm_bytes_per_s, flat: peak, x: intensity, yScale: 1e12,
          xLabel: "intensity (FLOP/byte)", yLabel: "TFLOP/s" });
        note.textContent = "Below the ridge the slanted roof (bandwidth × intensity) sets the ceiling; " +
          "above it the flat roof (the dense " + precision + " peak) does. Source: " + rec.source + ".";
      } else {
        var batch = current;
        var n = Number(modelSelect.value);
        var d = decodeCeiling(rec, precision, n, batch);
        sliderValue.textContent = String(batch);
        var fits = d.fitsInMemory ? "fits in " : "too big for ";
        show(out.weights, d.weightBytes, sig3(d.weightBytes / 1e9) + " GB (" + fits +
          sig3(d.capacityBytes / 1e9) + " GB)");
        show(out.memory, d.memorySeconds, sig3(d.memorySeconds * 1e3) + " ms per step");
        show(out.compute, d.computeSeconds, sig3(d.computeSeconds * 1e3) + " ms per step");
        show(out.tokens, d.tokensPerS, sig3(d.tokensPerS) + " tokens/s");
        show(out.perSeq, d.tokensPerSPerSequence, sig3(d.tokensPerSPerSequence) + " tokens/s");
        show(out.bound, d.bound, d.bound + " (" + sig3(100 * d.shareOfPeak) + " % of peak)");
        svgTitle.textContent = rec.name + " decode ceiling for a " + sig3(n / 1e9) + "B-parameter model in " +
          precision + ": " + sig3(d.tokensPerS) + " tokens/s at batch " + batch;
        drawRoof(svg, { xMin: 1, xMax: Math.pow(2, BATCH_LOG2_MAX),
          slope: rec.hbm_bytes_per_s / d.weightBytes, flat: peak / (FLOP_PER_MAC * n),
          x: batch, yScale: 1, xLabel: "batch (sequences per step)", yLabel: "tokens/s" });
        note.textContent = (d.fitsInMemory ? "" : "The weights do not fit on one card, so this ceiling " +
          "is unreachable there. ") + "Each step streams every weight once and serves one token per " +
          "sequence; the KV cache is not counted. Source: " + rec.source + ".";
      }
      svg.insertBefore(svgTitle, svg.firstChild);
    }

    gpuSelect.addEventListener("change", function () { syncPrecisions(); update(); });
    precisionSelect.addEventListener("change", update);
    slider.addEventListener("input", function () {
      current = mode === "intensity" ? intensityFromSlider(slider.value) : Math.pow(2, Number(slider.value));
      update();
    });
    if (modelSelect) modelSelect.addEventListener("change", update);
    syncPrecisions();
    update();
  }

  function init() {
    var hosts = document.querySelectorAll(".roofline-explorer");
    if (!hosts.length) return; // no explorer on this page: nothing to do
    Array.prototype.forEach.call(hosts, function (host) {
      try {
        mount(host);
      } catch (err) {
        // say so on the page and in the console (the site test fails on console errors)
        host.textContent = "This roofline explorer could not start: " + err.message;
        console.error("roofline explorer:", err);
      }
    });
  }

  api.mount = mount;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})(typeof window !== "undefined" ? window : globalThis);
