/* The Roofline Course: live explorers for the static website, no kernel needed.
 *
 * It reads window.ROOFLINE_REGISTRY, which the book's Sphinx extension (book/_ext/roofline_site.py)
 * writes from roofline_lib.present.export at build time, so the page and the library share one registry.
 * It draws into every element with class "roofline-explorer" and does nothing on a page without
 * one. Markup (a chapter's widget writes it after its still figure, roofline_lib.present.widgets.Explorer.site_html;
 * book/_static/README.md lists every attribute):
 *
 *   <div class="roofline-explorer" data-mode="intensity" data-gpu="A100" data-precision="bf16" data-intensity="10"></div>
 *   <div class="roofline-explorer" data-mode="decode" data-gpu="H100" data-precision="bf16" data-n-params="7e9" data-batch="1"></div>
 *   <div class="roofline-explorer" data-mode="mfu" data-gpu="A100" data-precision="bf16" data-n-params="6.7e9" data-tokens-per-s="1.5e6" data-n-gpus="256"></div>
 *   <div class="roofline-explorer" data-mode="flops" data-d-model="4096" data-seq-len="4096" data-n-layers="32" data-vocab="32000" data-ffn-ratio="2.6875" data-gated="true"></div>
 *   <div class="roofline-explorer" data-mode="comms" data-link="NVLink 4" data-n-ranks="8" data-message-bytes="1e8" data-alpha-seconds="5e-6" data-collective="all_reduce"></div>
 *   <div class="roofline-explorer" data-mode="serving" data-gpu="H100" data-policy="chunked" data-slo-ttft-s="0.5" data-slo-tpot-s="0.01"
 *        data-prompt-len="1024" data-output-len="256" data-chunk-tokens="2048" data-body-flops="..." (serving.step_counts's fields)></div>
 *   <div class="roofline-explorer" data-mode="parallel" data-model="llama-3-70b" data-node="8x-h100" data-n-gpus="64" data-tp="8"
 *        data-pp="1" data-zero="1" data-recompute="selective" data-global-batch="64" data-seq-len="4096"></div>
 *   <div class="roofline-explorer" data-mode="energy" data-gpu="h100-sxm" data-bytes-per-param="2" data-cap-watts="400"
 *        data-batch="64" data-context-len="2048" data-model-name="Llama-3-8B" data-body-flops="..." (widgets_energy._site_counts)></div>
 *
 * The arithmetic mirrors roofline_lib and is tested against it (tests/test_explorer_js.py):
 *   ridge       = peak / bandwidth                                  (roofline.ridge_point)
 *   attainable  = min(peak, bandwidth * intensity)                  (roofline.attainable_flops_per_s)
 *   decode step = max(N * b / bandwidth, 2 * N * batch / peak)       (inference.decode_roofline)
 *   a shipped model reads (fixed + batch * gather + E (1 - (1 - k/E)^batch) * expert) params
 *                                                                   (inference.decode_step_bytes_of)
 *   tokens/s    = batch / step
 *   MFU         = (6N or 6N + 6 L s d) * tokens/s / (n_gpus * peak)  (training.mfu; refused above 1)
 *   forward     = L * (8 d^2 + 2 s d causal or 4 s d + 4 d d_ff or 6 gated) + 2 d V
 *                                                                   (transformer.transformer_flops_per_token)
 *   collective  = steps * alpha + bytes_per_rank / link bytes/s;
 *   bus bw      = size / time * (2(n-1)/n all-reduce, (n-1)/n gather/scatter/all-to-all, 1 p2p)
 *                                                                   (comms.collective_cost)
 *   serving     = a step of T tokens, K keys, R logits rows, C cached tokens: max(FLOPs / peak, bytes / bw),
 *                 FLOPs = T body + K key + R unembed, bytes = fixed + T per token + (C + T) KV per token;
 *                 the steady state of each policy at batch 1, 2, 4, ... up to the paged KV cache's limit
 *                                                                   (serving.steady_frontier, best_steady_state)
 *   parallel    = roofs of one training step, seconds: compute = busiest stage's FLOPs / peak x (1 + (pp-1)/(v m)),
 *                 hbm = state and activations through HBM, one per dp/tp/cp/ep/pp collective (hierarchical);
 *                 the longest binds, MFU = model FLOPs / (GPUs x peak x step); memory per GPU after ZeRO
 *                                                                   (parallel.plan, train_memory)
 *   energy      = a decode step's FLOPs x e_flop + bytes x e_byte + static watts x seconds, per token; e_flop =
 *                 (TDP - static - bandwidth x e_byte) / peak; under a cap the step takes at least its dynamic
 *                 joules / (cap - static watts); $ per million tokens = price per hour / (tokens/s x 3600) x 1e6
 *                                                                   (energy.decode_energy, energy_cost)
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

  /** The record of `table` that `name` spells (its key, its name or an alias), "-" and a space
   * interchangeable, as roofline_lib's registries resolve it; `what` ("GPU", "link") names the kind
   * in the error. */
  function lookup(table, name, what) {
    var norm = normalise(name);
    var candidates = [norm, norm.replace(/ /g, "-"), norm.replace(/-/g, " ")];
    var keys = Object.keys(table);
    for (var c = 0; c < candidates.length; c++) {
      for (var k = 0; k < keys.length; k++) {
        var rec = table[keys[k]];
        var names = [rec.key, rec.name.toLowerCase()].concat(rec.aliases.map(function (a) {
          return a.toLowerCase();
        }));
        if (names.indexOf(candidates[c]) >= 0) return rec;
      }
    }
    throw new Error("unknown " + what + " " + JSON.stringify(name) + "; known " + what + "s: " + keys.join(", "));
  }

  /** The registry record for a key, a name or an alias, as roofline_lib.gpu() resolves it. */
  function findGpu(name) {
    return lookup(registry().gpus, name, "GPU");
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
    return decodeSteps(rec, peak, bytes, batch, weightBytes, weightBytes, flopsPerToken);
  }

  /** A shipped model's decode ceiling (inference.decode_roofline given its config): the step reads
   *  one embedding row per sequence and, for a mixture of experts, the experts the batch touches
   *  under uniform routing; the FLOPs are the active matmuls'. */
  function modelDecodeCeiling(gpu, precision, modelKey, batch, bytesPerParam) {
    var rec = asGpu(gpu);
    var models = registry().models || {};
    var m = models[modelKey];
    if (!m) {
      throw new Error("unknown model " + JSON.stringify(modelKey) + "; shipped models: " + Object.keys(models).join(", "));
    }
    if (!(Number.isInteger(batch) && batch > 0)) {
      throw new Error("batch must be a positive whole number of sequences, got " + batch);
    }
    var bytes = bytesPerParam === undefined ? registry().bytes_per_element[precision] : bytesPerParam;
    positive(bytes, "bytes_per_param", "bytes per parameter");
    var peak = peakFlopsPerS(rec, precision);
    var touched = m.n_experts > 1 ? m.n_experts * (1 - Math.pow(1 - m.experts_per_token / m.n_experts, batch)) : 0;
    var readParams = m.fixed_params + batch * m.gather_params_per_sequence + touched * m.params_per_expert;
    return decodeSteps(rec, peak, bytes, batch, readParams * bytes, m.n_params * bytes, m.flops_per_token);
  }

  /** The named steps shared by both decode ceilings. */
  function decodeSteps(rec, peak, bytes, batch, weightBytes, storedBytes, flopsPerToken) {
    var memorySeconds = weightBytes / rec.hbm_bytes_per_s;
    var computeSeconds = (flopsPerToken * batch) / peak;
    var secondsPerStep = Math.max(memorySeconds, computeSeconds);
    var tokensPerS = batch / secondsPerStep;
    var achieved = flopsPerToken * tokensPerS;
    return {
      weightBytes: weightBytes,
      bytesPerParam: bytes,
      capacityBytes: rec.hbm_capacity_bytes,
      fitsInMemory: rec.hbm_capacity_bytes === null || storedBytes <= rec.hbm_capacity_bytes,
      flopsPerToken: flopsPerToken,
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

  // -- training: MFU (roofline_lib.workloads.training.mfu, roofline_lib.models.transformer.training_flops_per_token)

  // transformer.TRAINING_CONVENTIONS, in its order; "palm" is the library's alias for full-square
  var CONVENTIONS = ["6N", "three-term", "full-square"];
  var CONVENTION_ALIASES = { palm: "full-square", kaplan: "three-term" };
  // The same words as roofline_lib.workloads.training's refusal; tests/test_explorer_js.py holds them equal.
  var MFU_CAUSES = "likely causes: a sparse (2:4) peak used instead of the dense one, the wrong GPU " +
    "count, tokens/s counted per GPU but divided by every GPU (or global tokens/s divided by one), " +
    "the wrong parameter count N, or tokens counted twice (e.g. once per data-parallel rank and " +
    "again globally)";

  function wholeNumber(value, what, unit) {
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
      throw new Error(what + " must be a positive whole number of " + unit + ", got " + value);
    }
    return value;
  }

  function flag(value, what) {
    if (typeof value !== "boolean") throw new Error(what + " must be true or false, got " + value);
    return value;
  }

  /** The registered spelling of a convention name, matched case-insensitively. */
  function conventionKey(convention) {
    var norm = String(convention).trim().toLowerCase();
    norm = CONVENTION_ALIASES[norm] || norm;
    for (var i = 0; i < CONVENTIONS.length; i++) {
      if (CONVENTIONS[i].toLowerCase() === norm) return CONVENTIONS[i];
    }
    throw new Error("convention must be one of '6N', 'three-term', 'full-square', got " + JSON.stringify(convention));
  }

  /** Training FLOP per token: 6 N ("6N"), 6 N + 6 L s d ("three-term", the causal scores x3) or
   *  6 N + 12 L s d ("full-square", PaLM's count of the whole score square), with d the attention
   *  width (d_model here: the page has no separate heads x head size). */
  function trainingFlopsPerToken(nParams, convention, nLayers, dModel, seqLen) {
    var n = positive(nParams, "n_params", "parameters");
    var key = conventionKey(convention === undefined ? "6N" : convention);
    var shape = { n_layers: [nLayers, "layers"], d_model: [dModel, "features"], seq_len: [seqLen, "tokens"] };
    var missing = [];
    Object.keys(shape).forEach(function (name) {
      var value = shape[name][0];
      if (value === undefined || value === null) missing.push(name);
      else wholeNumber(value, name, shape[name][1]); // checked when given, as the library does
    });
    if (key === "6N") return 6 * n; // 2N forward + 4N backward
    if (missing.length) {
      throw new Error("convention '" + key + "' needs n_layers, d_model and seq_len; missing: " + missing.join(", "));
    }
    var squares = key === "full-square" ? 2 : 1; // the whole square is twice the causal half
    return 6 * n + 3 * squares * (2 * nLayers * seqLen * dModel); // + 3 x (causal 2 s d per layer, or twice it)
  }

  /** The steps of an MFU: FLOP per token, model FLOP/s, the dense peak of every card, their ratio. */
  function mfuParts(nParams, tokensPerS, nGpus, gpu, precision, convention, nLayers, dModel, seqLen) {
    var flopsPerToken = trainingFlopsPerToken(nParams, convention, nLayers, dModel, seqLen);
    var rec = asGpu(gpu);
    positive(tokensPerS, "tokens_per_s", "tokens per second");
    wholeNumber(nGpus, "n_gpus", "GPUs");
    var peakPerGpu = peakFlopsPerS(rec, precision);
    var achieved = flopsPerToken * tokensPerS; // tokens/s of all cards together
    var peak = nGpus * peakPerGpu; // dense peak of every card
    return {
      convention: conventionKey(convention === undefined ? "6N" : convention),
      flopsPerToken: flopsPerToken,
      achievedFlopsPerS: achieved,
      peakFlopsPerGpu: peakPerGpu,
      peakFlopsPerS: peak,
      mfu: achieved / peak,
      gpuName: rec.name,
    };
  }

  /** MFU as a fraction; above the peak by more than the registry's plausibility tolerance, an error
   *  naming the usual mistakes, as roofline_lib.mfu raises (the one rule, roofline.check_plausible). */
  function mfu(nParams, tokensPerS, nGpus, gpu, precision, convention, nLayers, dModel, seqLen) {
    var m = mfuParts(nParams, tokensPerS, nGpus, gpu, precision, convention, nLayers, dModel, seqLen);
    if (m.achievedFlopsPerS > m.peakFlopsPerS * (1 + registry().plausibility_tolerance)) {
      throw new Error("MFU of " + percentLikePython(m.mfu, 1) + " is impossible: " +
        generalLikePython(m.achievedFlopsPerS / 1e15, 4) + " PFLOP/s against " + nGpus + " x " +
        m.gpuName + " at a dense " + precision + " peak of " + generalLikePython(m.peakFlopsPerS / 1e15, 4) +
        " PFLOP/s; " + MFU_CAUSES);
    }
    return m.mfu;
  }

  // -- forward FLOPs of a token, by component (roofline_lib.models.transformer.transformer_flops_per_token)

  /** Per layer: qkvo 8 d^2, scores 4 s d (2 s d causal), FFN 4 d d_ff (6 gated); once: 2 d V. */
  function transformerFlopsPerToken(dModel, dFf, nLayers, seqLen, vocab, gated, causal) {
    var d = wholeNumber(dModel, "d_model", "features");
    var dff = wholeNumber(dFf, "d_ff", "features");
    var layers = wholeNumber(nLayers, "n_layers", "layers");
    var s = wholeNumber(seqLen, "seq_len", "tokens");
    var v = wholeNumber(vocab, "vocab", "tokens in the vocabulary");
    flag(gated, "gated");
    flag(causal, "causal");
    var qkvo = 4 * FLOP_PER_MAC * d * d; // four d x d projections
    var scores = 2 * FLOP_PER_MAC * s * d; // Q K^T and P V, s d MACs each
    if (causal) scores = Math.floor(scores / 2); // a query sees s/2 keys on average
    var ffn = (gated ? 3 : 2) * FLOP_PER_MAC * d * dff; // gate, up, down (or up, down): d x d_ff each
    var unembed = FLOP_PER_MAC * d * v;
    return {
      fwdPerToken: layers * (qkvo + scores + ffn) + unembed,
      ffnTotal: layers * ffn,
      qkvoTotal: layers * qkvo,
      scoresTotal: layers * scores,
      unembed: unembed,
    };
  }

  /** Python's round() of a float: the nearest whole number, an exact half to the even one. */
  function roundHalfEven(x) {
    var floor = Math.floor(x);
    if (x - floor !== 0.5) return Math.round(x);
    return floor % 2 === 0 ? floor : floor + 1;
  }

  /** The flop_share_explorer's model: d_ff = round(ffn_ratio * d_model), shares of the forward. */
  function flopShares(dModel, seqLen, nLayers, vocab, ffnRatio, gated, causal) {
    positive(ffnRatio, "ffn_ratio", "d_ff per d_model");
    var dFf = Math.max(1, roundHalfEven(ffnRatio * dModel));
    var f = transformerFlopsPerToken(dModel, dFf, nLayers, seqLen, vocab, gated, causal);
    f.dFf = dFf;
    f.shares = {
      ffn: f.ffnTotal / f.fwdPerToken,
      qkvo: f.qkvoTotal / f.fwdPerToken,
      scores: f.scoresTotal / f.fwdPerToken,
      unembed: f.unembed / f.fwdPerToken,
    };
    return f;
  }

  // -- Python's number formats, so that the refusal reads exactly as the library's does

  /** True when the digits after the kept ones are a 5 and then only zeros: an exact half. */
  function isTie(rest) {
    return /^50*$/.test(rest);
  }

  /** Python's f"{x:.{decimals}f}" for x >= 0: JavaScript breaks an exact tie upwards, Python to even. */
  function fixedLikePython(x, decimals) {
    var exact = x.toFixed(100); // every digit of the double, for the magnitudes shown here
    var cut = exact.indexOf(".") + 1 + decimals;
    var kept = exact.slice(0, decimals ? cut : cut - 1);
    if (isTie(exact.slice(cut)) && Number(kept.charAt(kept.length - 1)) % 2 === 0) return kept;
    return x.toFixed(decimals);
  }

  /** Python's f"{x:.{sig}g}" for x >= 0: sig significant digits, trailing zeros dropped. */
  function generalLikePython(x, sig) {
    if (x === 0) return "0";
    var exact = x.toExponential(100).split("e"); // every significant digit, and the exponent
    var digits = exact[0].replace(".", "");
    var rounded = Number(x.toPrecision(sig));
    if (isTie(digits.slice(sig)) && Number(digits.charAt(sig - 1)) % 2 === 0) {
      rounded = Number(digits.slice(0, sig) + "e" + (Number(exact[1]) - sig + 1)); // cut, not rounded up
    }
    var parts = rounded.toExponential(sig - 1).split("e");
    var exponent = Number(parts[1]);
    var strip = function (t) { return t.indexOf(".") < 0 ? t : t.replace(/0+$/, "").replace(/\.$/, ""); };
    if (exponent < -4 || exponent >= sig) {
      var e = String(Math.abs(exponent));
      return strip(parts[0]) + "e" + (exponent < 0 ? "-" : "+") + (e.length < 2 ? "0" : "") + e;
    }
    return strip(rounded.toFixed(sig - 1 - exponent));
  }

  /** Python's f"{x:.{decimals}%}": the fraction times 100, then fixed decimals and a percent sign. */
  function percentLikePython(x, decimals) {
    return fixedLikePython(x * 100, decimals) + "%";
  }

  /**
   * The bus-bandwidth chart's y axis, in decades (log10 of B/s): from just above the link's limit
   * `flat` down six decades, or further where latency holds the smallest message's bus bandwidth
   * `smallest` lower still (100 bytes on 512 ranks), so the curve is never clamped to the axis.
   * `every` labels every other decade on a tall axis.
   */
  function busAxis(flat, smallest) {
    var top = Math.ceil(Math.log10(flat * 2));
    var bottom = Math.min(top - 6, Math.floor(Math.log10(smallest)));
    return { top: top, bottom: bottom, every: top - bottom > 7 ? 2 : 1 };
  }

  /** A duration in s, ms, µs or ns with three significant digits, as roofline_lib.core.formatting.seconds: 0.0123 -> "12.3 ms". */
  function duration(s) {
    if (s >= 1) return sig3(s) + " s";
    if (s >= 1e-3) return sig3(s * 1e3) + " ms";
    if (s >= 1e-6) return sig3(s * 1e6) + " µs";
    return sig3(s * 1e9) + " ns";
  }

  /** formatting.energy_text: joules in mJ, J, kJ, MJ, GJ or TJ with three significant figures: 0.0419 -> "41.9 mJ". */
  function energyText(joules) {
    var units = [["TJ", 1e12], ["GJ", 1e9], ["MJ", 1e6], ["kJ", 1e3], ["J", 1]];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(joules) >= units[i][1]) return generalLikePython(joules / units[i][1], 3) + " " + units[i][0];
    }
    return generalLikePython(joules / 1e-3, 3) + " mJ";
  }

  /** formatting.power_text: watts in W, kW or MW with three significant figures: 279.4 -> "279 W". */
  function powerText(watts) {
    if (Math.abs(watts) >= 1e6) return generalLikePython(watts / 1e6, 3) + " MW";
    if (Math.abs(watts) >= 1e3) return generalLikePython(watts / 1e3, 3) + " kW";
    return generalLikePython(watts, 3) + " W";
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

  // -- communication: the alpha-beta model of roofline_lib.workloads.comms, on the links of roofline_lib.core.interconnect

  var COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "point_to_point"];

  /** The registry record of a link, by key, name or alias, as roofline_lib.link() resolves it. */
  function findLink(name) {
    var links = registry().links;
    if (!links) throw new Error("the registry on this page has no links (re-run roofline_lib.present.export)");
    return lookup(links, name, "link");
  }

  function collectiveKey(collective) {
    var squashed = String(collective).toLowerCase().replace(/[^a-z0-9]/g, "");
    var spellings = { allreduce: "all_reduce", allgather: "all_gather", reducescatter: "reduce_scatter",
      alltoall: "all_to_all", pointtopoint: "point_to_point", p2p: "point_to_point", sendrecv: "point_to_point" };
    if (Object.prototype.hasOwnProperty.call(spellings, squashed)) return spellings[squashed];
    throw new Error("collective must be one of " + COLLECTIVES.join(", ") + ", got " + JSON.stringify(collective));
  }

  function commsArgs(collective, nRanks, algorithm) {
    var c = collectiveKey(collective);
    var a = algorithm === undefined ? "ring" : algorithm;
    if (a !== "ring" && a !== "tree") throw new Error("algorithm must be one of ring, tree, got " + JSON.stringify(a));
    if (a === "tree" && c !== "all_reduce") {
      throw new Error("algorithm 'tree' is modelled for all_reduce only, got collective " + JSON.stringify(c));
    }
    if (!(Number.isInteger(nRanks) && nRanks >= 2)) {
      throw new Error("n_ranks must be at least 2 ranks for a " + c + ", got " + nRanks);
    }
    return { c: c, n: nRanks, a: a };
  }

  /** Messages sent one after another (comms.collective_steps). */
  function collectiveSteps(collective, nRanks, algorithm) {
    var x = commsArgs(collective, nRanks, algorithm);
    if (x.c === "point_to_point") return 1;
    if (x.c === "all_reduce") return x.a === "ring" ? 2 * (x.n - 1) : 2 * Math.ceil(Math.log2(x.n));
    return x.n - 1;
  }

  /** Bytes each rank sends per byte of message (comms.collective_bytes_per_rank / message_bytes). */
  function bytesPerRankPerByte(collective, nRanks, algorithm) {
    var x = commsArgs(collective, nRanks, algorithm);
    if (x.c === "point_to_point") return 1;
    if (x.c === "all_reduce") return x.a === "ring" ? (2 * (x.n - 1)) / x.n : 2 * Math.ceil(Math.log2(x.n));
    return (x.n - 1) / x.n;
  }

  /** The NCCL tests' factor from algorithm to bus bandwidth (comms.bus_bandwidth_factor). */
  function busBandwidthFactor(collective, nRanks) {
    var x = commsArgs(collective, nRanks, "ring");
    if (x.c === "all_reduce") return (2 * (x.n - 1)) / x.n;
    if (x.c === "point_to_point") return 1;
    return (x.n - 1) / x.n;
  }

  /** comms.collective_cost: steps * alpha + bytes_per_rank / bandwidth, and the two bandwidths. */
  function collectiveCost(collective, messageBytes, nRanks, alphaSeconds, link, algorithm) {
    positive(messageBytes, "message_bytes", "bytes");
    if (typeof alphaSeconds !== "number" || !isFinite(alphaSeconds) || alphaSeconds < 0) {
      throw new Error("alpha_seconds must be a non-negative finite number of seconds, got " + alphaSeconds);
    }
    var bw = typeof link === "number" ? positive(link, "bytes_per_s", "bytes per second (one direction)")
      : (typeof link === "string" ? findLink(link) : link).bytes_per_s;
    var steps = collectiveSteps(collective, nRanks, algorithm);
    var perRank = bytesPerRankPerByte(collective, nRanks, algorithm) * messageBytes;
    var latency = steps * alphaSeconds;
    var wire = perRank / bw;
    var seconds = latency + wire;
    var algbw = messageBytes / seconds;
    return {
      steps: steps,
      bytesPerRank: perRank,
      bytesPerS: bw,
      latencySeconds: latency,
      bandwidthSeconds: wire,
      seconds: seconds,
      algorithmBytesPerS: algbw,
      busBytesPerS: algbw * busBandwidthFactor(collective, nRanks),
      latencyShare: latency / seconds,
    };
  }

  /** comms.latency_crossover_bytes: the size where latency time equals wire time. */
  function latencyCrossoverBytes(collective, nRanks, alphaSeconds, link, algorithm) {
    positive(alphaSeconds, "alpha_seconds", "seconds");
    var bw = typeof link === "number" ? link : (typeof link === "string" ? findLink(link) : link).bytes_per_s;
    return (collectiveSteps(collective, nRanks, algorithm) * alphaSeconds * bw) /
      bytesPerRankPerByte(collective, nRanks, algorithm);
  }

  // -- serving: roofline_lib.workloads.serving's steady state, from the counts serving.step_counts gives

  var SERVING_POLICIES = ["static", "continuous", "chunked", "disaggregated"];
  var KV_BLOCK_TOKENS = 16; // serving.kv_capacity's default block of a paged KV cache

  // -- the feasibility rule (roofline_lib.workloads.feasibility), in its words
  var GIB_BYTES = Math.pow(2, 30);

  /** formatting.gib: bytes in GiB, four significant figures. */
  function gibText(bytes) {
    return generalLikePython(bytes / GIB_BYTES, 4) + " GiB";
  }

  /** formatting.memory_size: GiB, or MiB below one GiB. */
  function memorySize(bytes) {
    if (Math.abs(bytes) >= GIB_BYTES || bytes === 0) return generalLikePython(bytes / GIB_BYTES, 4) + " GiB";
    return generalLikePython(bytes / Math.pow(2, 20), 3) + " MiB";
  }

  /** feasibility.fewest_devices: the fewest devices whose memory together holds `need` bytes. */
  function fewestDevices(need, capacity) {
    return Math.max(1, Math.ceil((need / capacity) * (1 - 1e-12)));
  }

  /** feasibility.context_problem: why `contextLen` is beyond the model's reach, or null. */
  function contextProblem(modelName, maxContext, slidingWindow, contextLen) {
    if (!maxContext || contextLen === null || contextLen === undefined || contextLen <= maxContext) return null;
    var window = slidingWindow ? " (its sliding window of " + grouped(slidingWindow) + " tokens does not lift that limit)" : "";
    return "a context of " + grouped(contextLen) + " tokens is beyond " + modelName + "'s maximum position of " +
      grouped(maxContext) + " tokens" + window + "; the largest context it takes is " + grouped(maxContext) + " tokens";
  }

  /** feasibility.memory_fit: `parts` ([name, bytes] pairs) against `capacity`, and the context. `o`
   *  holds device, what, contextLen, modelName, maxContext, slidingWindow, largestContext, wouldFit. */
  function memoryFit(parts, capacity, o) {
    var items = parts.filter(function (p) { return p[1]; });
    var need = 0;
    items.forEach(function (p) { need += p[1]; });
    var reasons = [];
    var context = contextProblem(o.modelName, o.maxContext, o.slidingWindow, o.contextLen);
    if (context) reasons.push(context);
    var devices = fewestDevices(need, capacity);
    if (need > capacity) {
      var split = items.map(function (p) { return p[0] + " " + memorySize(p[1]); }).join(" + ");
      var advice = o.wouldFit;
      if (advice === undefined) {
        advice = "the fewest such devices whose memory holds it: " + devices;
        if (o.largestContext !== undefined && o.largestContext !== null && o.largestContext >= 1) {
          advice += "; on one, the largest context that fits is " + grouped(Math.floor(o.largestContext)) + " tokens";
        }
      }
      reasons.push(o.what + " needs " + gibText(need) + " (" + split + ") and the " + o.device + " has " +
        gibText(capacity) + "; " + advice);
    }
    var reason = reasons.length ? reasons.join("; and ") : null;
    return {
      feasible: !reasons.length, needBytes: need, capacityBytes: capacity, minDevices: devices, reason: reason,
      headline: reasons.length ? "DOES NOT FIT: " + reason : "fits: " + gibText(need) + " of " + gibText(capacity),
    };
  }

  var COUNT_FIELDS = ["body_flops", "key_flops", "unembed_flops", "weight_bytes_fixed", "weight_bytes_per_token",
    "kv_bytes_per_token", "stored_weight_bytes", "activation_bytes_per_token", "activation_bytes_per_row",
    "max_context_tokens"];

  /** serving.StepCounts as the markup carries it: every field a finite number, none negative. */
  function servingCounts(counts) {
    COUNT_FIELDS.forEach(function (name) {
      var v = counts[name];
      if (typeof v !== "number" || !isFinite(v) || v < 0) {
        throw new Error("serving count " + name + " must be a finite number of 0 or more, got " + v);
      }
    });
    return counts;
  }

  /** The precision a chip serves in: bf16, else fp16 (widgets._serving_precision). */
  function servingPrecision(gpu) {
    return asGpu(gpu).precisions.indexOf("bf16") >= 0 ? "bf16" : "fp16";
  }

  /** serving.step_time of a step with `tokens` new tokens attending to `keys` keys in all, `rows`
   *  logits rows and `cached` tokens read from the KV cache (a dense model, no sliding window), on the
   *  peak of `precision` (default: the chip's serving precision). */
  function servingStep(counts, gpu, tokens, keys, rows, cached, precision) {
    var rec = asGpu(gpu);
    precision = precision === undefined ? servingPrecision(rec) : precision;
    var peak = peakFlopsPerS(rec, precision);
    var flops = tokens * counts.body_flops + keys * counts.key_flops + rows * counts.unembed_flops;
    var weights = counts.weight_bytes_fixed + tokens * counts.weight_bytes_per_token;
    var kv = (cached + tokens) * counts.kv_bytes_per_token;
    var total = weights + kv;
    var intensity = flops / total;
    return {
      flops: flops, bytesMoved: total, intensity: intensity,
      seconds: Math.max(flops / peak, total / rec.hbm_bytes_per_s),
      bound: intensity < peak / rec.hbm_bytes_per_s ? "memory" : "compute",
    };
  }

  function causalKeys(tokens, offset) { // serving._keys without a window
    return tokens * offset + (tokens * (tokens + 1)) / 2;
  }

  /** serving.decode_step: one token for each of `batch` sequences at `context` keys. */
  function servingDecode(counts, gpu, batch, context) {
    return servingStep(counts, gpu, batch, batch * context, batch, batch * (context - 1));
  }

  /** serving.prefill_step: `batch` prompts of `promptLen` tokens in one step. */
  function servingPrefill(counts, gpu, promptLen, batch) {
    return servingStep(counts, gpu, batch * promptLen, batch * causalKeys(promptLen, 0), batch, 0);
  }

  /** serving.steady_state: `batch` requests always in flight under `policy`, no queue. */
  function steadyState(counts, gpu, policy, batch, promptLen, outputLen, chunkTokens) {
    servingCounts(counts);
    if (SERVING_POLICIES.indexOf(policy) < 0) {
      throw new Error("policy must be one of " + SERVING_POLICIES.join(", ") + ", got " + JSON.stringify(policy));
    }
    var b = wholeNumber(batch, "batch", "sequences");
    var p = wholeNumber(promptLen, "prompt_len", "tokens");
    var o = wholeNumber(outputLen, "output_len", "tokens");
    var context = p + Math.floor(o / 2);
    var decode = servingDecode(counts, gpu, b, context);
    var prefill = servingPrefill(counts, gpu, p, 1);
    var devices = 1, sustainable = true, tpot, ttft, tps;
    if (policy === "static") {
      var batchPrefill = servingPrefill(counts, gpu, p, b).seconds;
      var roundS = batchPrefill + (o - 1) * decode.seconds;
      tpot = decode.seconds;
      ttft = batchPrefill + roundS / 2;
      tps = (b * o) / roundS;
    } else if (policy === "continuous") {
      tpot = decode.seconds + (b / o) * prefill.seconds;
      ttft = prefill.seconds;
      tps = b / tpot;
    } else if (policy === "chunked") {
      var budget = wholeNumber(chunkTokens, "chunk_tokens", "tokens");
      var room = budget - b;
      var needed = Math.max(1, Math.ceil((b * p) / o));
      sustainable = room >= needed;
      var n = Math.min(needed, Math.max(room, 1));
      var offset = Math.floor(p / 2);
      var step = servingStep(counts, gpu, b + n, b * context + causalKeys(n, offset), b, b * (context - 1) + offset);
      tpot = step.seconds;
      tps = b / step.seconds;
      ttft = Math.ceil(p / Math.max(room, 1)) * step.seconds;
    } else {
      devices = 2;
      tpot = decode.seconds + 0 / Math.max(o - 1, 1); // no KV transfer time in the closed form
      var requestsPerS = Math.min(b / (o * decode.seconds), 1 / prefill.seconds);
      sustainable = 1 / prefill.seconds >= b / (o * decode.seconds);
      ttft = prefill.seconds;
      tps = (requestsPerS * o) / devices;
    }
    var largestStep = policy === "static" ? b * p : policy === "chunked" ? wholeNumber(chunkTokens, "chunk_tokens", "tokens") : p;
    var fit = servingFit(counts, gpu, p + o, b, largestStep, 1);
    return { policy: policy, batch: b, tpotS: tpot, ttftS: ttft, tokensPerS: tps, decodeBound: decode.bound,
      devices: devices, sustainable: sustainable, feasible: fit.feasible, fitHeadline: fit.headline };
  }

  /** serving.server_fit for `sequences` sequences of `context` tokens each (a dense model, no window):
   *  weights, their KV cache and a step of `newTokens` tokens' activations with `rows` logits rows. */
  function servingFit(counts, gpu, context, sequences, newTokens, rows) {
    var rec = asGpu(gpu);
    var kv = sequences * context * counts.kv_bytes_per_token;
    var activations = newTokens * counts.activation_bytes_per_token + rows * counts.activation_bytes_per_row;
    var room = rec.hbm_capacity_bytes - counts.stored_weight_bytes - activations;
    var largest = room > 0 ? Math.floor(room / (sequences * counts.kv_bytes_per_token)) : 0;
    if (counts.max_context_tokens) largest = Math.min(largest, counts.max_context_tokens);
    var name = counts.model_name || "the model";
    return memoryFit([["weights", counts.stored_weight_bytes], ["KV cache", kv], ["activations", activations]],
      rec.hbm_capacity_bytes, {
        device: rec.name, modelName: name, maxContext: counts.max_context_tokens, contextLen: context,
        what: name + " with " + sequences + " sequence" + (sequences === 1 ? "" : "s") +
          (sequences > 1 ? " of up to " : " of ") + grouped(context) + " tokens",
        largestContext: largest,
      });
  }

  /** serving.kv_capacity (paged): how many requests' KV caches fit beside the weights, and its fit
   *  for one request alone (maxRequests 0, feasible false, when not even that fits). */
  function kvCapacity(counts, gpu, promptLen, outputLen) {
    var rec = asGpu(gpu);
    servingCounts(counts);
    var used = wholeNumber(promptLen, "prompt_len", "tokens") + wholeNumber(outputLen, "output_len", "tokens");
    var reserved = Math.ceil(used / KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS;
    var available = Math.max(0, rec.hbm_capacity_bytes - counts.stored_weight_bytes);
    var name = counts.model_name || "the model";
    var fit = memoryFit([["weights", counts.stored_weight_bytes], ["KV cache", reserved * counts.kv_bytes_per_token]],
      rec.hbm_capacity_bytes, {
        device: rec.name, modelName: name, maxContext: counts.max_context_tokens, contextLen: used,
        what: name + " with one request of " + grouped(used) + " tokens",
        largestContext: Math.floor(available / counts.kv_bytes_per_token),
      });
    var tokens = fit.feasible ? Math.floor(available / counts.kv_bytes_per_token) : 0;
    return { maxRequests: Math.floor(tokens / reserved), feasible: fit.feasible, fitHeadline: fit.headline };
  }

  /** serving.kv_capacity(paged)'s max_requests: 0 when not one request fits. */
  function kvMaxRequests(counts, gpu, promptLen, outputLen) {
    return kvCapacity(counts, gpu, promptLen, outputLen).maxRequests;
  }

  var FRONTIER_MAX_BATCH = 1024; // serving.FRONTIER_MAX_BATCH: a server's cap on running sequences

  /** serving.steady_frontier: the steady state at every batch 1, 2, 3, ... up to what the KV cache holds
   *  and FRONTIER_MAX_BATCH (serving.frontier_batches); empty when not one request fits. */
  function steadyFrontier(counts, gpu, policy, promptLen, outputLen, chunkTokens) {
    var limit = Math.min(kvMaxRequests(counts, gpu, promptLen, outputLen), FRONTIER_MAX_BATCH);
    var out = [];
    for (var b = 1; b <= limit; b++) out.push(steadyState(counts, gpu, policy, b, promptLen, outputLen, chunkTokens));
    return out;
  }

  var TPOT_MARGIN_LOG10 = 0.03; // widgets._TPOT_MARGIN_LOG10: 7 % past the TPOTs between which the best point moves

  /** widgets._tpot_span: log10 of the TPOT objective slider's ends for one policy's frontier and the TTFT
   *  objective: from just below the fastest TPOT of the sustainable points within the TTFT objective to
   *  just above the TPOT of the one with the most tokens/s (the first on a tie), on the 0.01 grid,
   *  inside SLO_LOG10; the whole of SLO_LOG10 when no point qualifies. */
  function tpotSpan(points, ttftS) {
    var ok = points.filter(function (p) { return p.sustainable && p.feasible && p.ttftS <= ttftS; });
    if (!ok.length) return SLIDER_LOG10.slo_s.slice();
    var fastest = Infinity, top = null;
    ok.forEach(function (p) {
      if (p.tpotS < fastest) fastest = p.tpotS;
      if (top === null || p.tokensPerS > top.tokensPerS) top = p;
    });
    var lo = Math.floor((Math.log10(fastest) - TPOT_MARGIN_LOG10) * 100) / 100;
    var hi = Math.ceil((Math.log10(top.tpotS) + TPOT_MARGIN_LOG10) * 100) / 100;
    return [Math.max(lo, SLIDER_LOG10.slo_s[0]), Math.min(hi, SLIDER_LOG10.slo_s[1])];
  }

  /** serving.best_steady_state: the fastest sustainable point within both parts of the SLO (the first, on a tie). */
  function bestSteadyState(points, ttftS, tpotS) {
    positive(ttftS, "ttft_s", "seconds");
    positive(tpotS, "tpot_s", "seconds");
    if (!points.length) throw new Error("points is empty: not one request fits on the server (see kv_capacity(...).fit)");
    if (!points.some(function (pt) { return pt.feasible; })) throw new Error("no point can run: " + points[0].fitHeadline);
    var best = null;
    points.forEach(function (pt) {
      if (pt.feasible && pt.sustainable && pt.ttftS <= ttftS && pt.tpotS <= tpotS && (best === null || pt.tokensPerS > best.tokensPerS)) {
        best = pt;
      }
    });
    if (best === null) {
      throw new Error("no batch meets the SLO (TTFT <= " + generalLikePython(ttftS * 1e3, 4) + " ms, TPOT <= " +
        generalLikePython(tpotS * 1e3, 4) + " ms): loosen it, or change the policy, the GPU or the model");
    }
    return best;
  }

  // -- energy: roofline_lib.workloads.energy's decode_energy and energy_cost's cost_per_million_tokens, on the
  //    energy registry the export carries (each GPU's TDP, static power and joules per HBM byte; dated prices)

  var ENERGY_DATA_FILE = "roofline_lib/core/data/energy.json"; // where the library's refusals point
  var WIDTH_PRECISION = { 2: "bf16", 1: "fp8" }; // inference.precision_for_bytes, for the explorer's two widths
  var SECONDS_PER_HOUR = 3600;
  //: The model's counts per byte of width (widgets_energy._site_counts): the byte counts scale with the width.
  var ENERGY_COUNT_FIELDS = ["body_flops", "key_flops", "unembed_flops", "weight_params_fixed", "weight_params_per_token",
    "kv_elements_per_token", "stored_params", "activation_bytes_per_token", "activation_bytes_per_row",
    "max_context_tokens"];

  function energyRegistry() {
    var energy = registry().energy;
    if (!energy || !energy.gpus || !energy.prices) {
      throw new Error("the energy registry (roofline-registry.js's energy) is not loaded on this page");
    }
    return energy;
  }

  /** energy.power_spec's figures of a GPU (TDP and static watts, joules per HBM and link byte, sources);
   *  a GPU without them is refused in the library's words, naming those that have them. */
  function powerSpec(gpu) {
    var rec = asGpu(gpu);
    var table = energyRegistry().gpus;
    if (!Object.prototype.hasOwnProperty.call(table, rec.key)) {
      var have = Object.keys(table).map(function (k) { return registry().gpus[k].name; }).join(", ");
      throw new Error("gpu " + pyRepr(rec.name) + " has no power and energy figures in the registry (" +
        ENERGY_DATA_FILE + "); GPUs that have them: " + have);
    }
    return table[rec.key];
  }

  /** energy.joules_per_flop_at_tdp: a GEMM at the ridge draws the whole TDP, so
   *  e_flop = (tdp - idle - bandwidth * e_byte) / peak. */
  function joulesPerFlopAtTdp(tdpWatts, idleWatts, peakFlopsPerS, hbmBytesPerS, joulesPerHbmByte) {
    var memoryWatts = hbmBytesPerS * joulesPerHbmByte; // the ridge moves bytes at the full bandwidth
    var computeWatts = tdpWatts - idleWatts - memoryWatts;
    if (computeWatts <= 0) {
      throw new Error("tdp_watts=" + generalLikePython(tdpWatts, 6) + " W leaves no power for FLOPs after idle_watts=" +
        generalLikePython(idleWatts, 6) + " W and the bytes' " + generalLikePython(memoryWatts, 4) +
        " W (hbm_bytes_per_s * joules_per_hbm_byte): check the units (watts, joules per byte)");
    }
    return computeWatts / peakFlopsPerS;
  }

  /** energy._cap: a cap in watts above the GPU's static power, refused in the library's words otherwise. */
  function capWattsOf(capWatts, power, gpuName) {
    positive(capWatts, "cap_watts", "watts");
    if (capWatts <= power.idle_watts) {
      throw new Error("cap_watts=" + generalLikePython(capWatts, 6) + " W is at or below the " + gpuName +
        "'s static power of " + generalLikePython(power.idle_watts, 6) + " W (idle_watts): no power would be left " +
        "to compute with; give a cap in watts above it");
    }
    return capWatts;
  }

  /** The serving counts (serving.step_counts) of a model whose weights and KV cache are `bytesPerParam` wide,
   *  from its counts per byte of width. */
  function widthCounts(perByte, bytesPerParam) {
    ENERGY_COUNT_FIELDS.forEach(function (name) {
      var v = perByte[name];
      if (typeof v !== "number" || !isFinite(v) || v < 0) {
        throw new Error("energy count " + name + " must be a finite number of 0 or more, got " + v);
      }
    });
    if (!Object.prototype.hasOwnProperty.call(WIDTH_PRECISION, bytesPerParam)) {
      throw new Error("bytes_per_param must be 2 (bf16) or 1 (fp8) bytes per parameter, got " + pyRepr(bytesPerParam));
    }
    var b = bytesPerParam;
    return {
      body_flops: perByte.body_flops, key_flops: perByte.key_flops, unembed_flops: perByte.unembed_flops,
      weight_bytes_fixed: b * perByte.weight_params_fixed, weight_bytes_per_token: b * perByte.weight_params_per_token,
      kv_bytes_per_token: b * perByte.kv_elements_per_token, stored_weight_bytes: b * perByte.stored_params,
      activation_bytes_per_token: perByte.activation_bytes_per_token,
      activation_bytes_per_row: perByte.activation_bytes_per_row,
      max_context_tokens: perByte.max_context_tokens, model_name: perByte.model_name,
    };
  }

  /** energy.decode_energy(rl.serving_server(cfg, gpu, bytes_per_param=b), batch, context_len, cap_watts=cap):
   *  one decode step's FLOPs at the joules per FLOP of the server's peak, its bytes at the joules per HBM byte,
   *  and static power for its seconds; under a cap the step runs no faster than its dynamic joules over
   *  (cap - static watts). `capWatts` null: no cap. */
  function decodeEnergy(perByte, gpu, bytesPerParam, batch, contextLen, capWatts) {
    var rec = asGpu(gpu);
    var counts = widthCounts(perByte, bytesPerParam);
    var precision = WIDTH_PRECISION[bytesPerParam];
    if (rec.precisions.indexOf(precision) < 0) { // the words of GPUSpec.peak_flops_per_s
      throw new Error(rec.name + " has no " + precision + " (precision=" + pyRepr(precision) + "); it has: " +
        rec.precisions.join(", "));
    }
    var b = wholeNumber(batch, "batch", "sequences");
    var c = wholeNumber(contextLen, "context_len", "tokens");
    var step = servingStep(counts, rec, b, b * c, b, b * (c - 1), precision);
    var fit = servingFit(counts, rec, c, b, b, b);
    var power = powerSpec(rec);
    var eFlop = joulesPerFlopAtTdp(power.tdp_watts, power.idle_watts, peakFlopsPerS(rec, precision),
      rec.hbm_bytes_per_s, power.joules_per_hbm_byte);
    var flopJoules = step.flops * eFlop;
    var byteJoules = step.bytesMoved * power.joules_per_hbm_byte;
    var seconds = step.seconds;
    if (capWatts !== null && capWatts !== undefined) {
      var cap = capWattsOf(capWatts, power, rec.name);
      seconds = Math.max(step.seconds, (flopJoules + byteJoules) / (cap - power.idle_watts));
    }
    var staticJoules = power.idle_watts * seconds;
    var joules = flopJoules + byteJoules + staticJoules;
    return {
      tokens: b, seconds: seconds, flopJoules: flopJoules, byteJoules: byteJoules, staticJoules: staticJoules,
      joules: joules, joulesPerToken: joules / b, averageWatts: joules / seconds, feasible: fit.feasible,
      fitHeadline: fit.headline, capWatts: capWatts === undefined ? null : capWatts,
    };
  }

  /** energy_cost.gpu_hour_price: the listed price of a GPU-hour, with its source and date. */
  function gpuHourPrice(gpu) {
    var rec = asGpu(gpu);
    var prices = energyRegistry().prices;
    if (!Object.prototype.hasOwnProperty.call(prices, rec.key)) {
      var have = Object.keys(prices).map(function (k) { return registry().gpus[k].name; }).join(", ");
      throw new Error("gpu " + pyRepr(rec.name) + " has no GPU-hour price on record (" + ENERGY_DATA_FILE +
        "); GPUs that have one: " + have + ". Pass your own dollars_per_hour to cost_per_million_tokens");
    }
    return prices[rec.key];
  }

  /** energy_cost.cost_per_million_tokens: dollars per 1e6 tokens of one GPU at `tokensPerS` and a GPU-hour price. */
  function costPerMillionTokens(tokensPerS, dollarsPerHour) {
    positive(tokensPerS, "tokens_per_s", "tokens per second");
    nonNegative(dollarsPerHour, "dollars_per_hour", "US dollars per GPU-hour");
    var tokensPerHour = tokensPerS * SECONDS_PER_HOUR;
    return (dollarsPerHour / tokensPerHour) * 1e6; // per million tokens
  }

  // The energy mode's sliders, widgets_energy's (tests/test_explorer_js.py holds the two equal):
  var ENERGY_SLIDERS = {
    batch_log2: [0, 10], // BATCH_LOG2: the x axis and the batch slider, 1 to 1,024 sequences
    context_log2: [8, 15], // CONTEXT_LOG2: 256 to 32,768 keys
    cap_watts: [100, 1000, 10], // CAP_WATTS: the power cap slider's from, to and step
  };
  var ENERGY_BATCHES = powersOfTwo(ENERGY_SLIDERS.batch_log2[0], ENERGY_SLIDERS.batch_log2[1]);
  var ENERGY_CONTEXTS = powersOfTwo(ENERGY_SLIDERS.context_log2[0], ENERGY_SLIDERS.context_log2[1]);
  var ENERGY_CAP_WATTS = ENERGY_SLIDERS.cap_watts;

  /** widgets_energy.energy_point: one batch with no cap and under the cap, and each one's cost (null with no price). */
  function energyPoint(perByte, gpu, bytesPerParam, batch, contextLen, capWatts) {
    var rec = asGpu(gpu);
    var prices = energyRegistry().prices;
    var price = Object.prototype.hasOwnProperty.call(prices, rec.key) ? prices[rec.key].dollars_per_hour : null;
    var free = decodeEnergy(perByte, rec, bytesPerParam, batch, contextLen, null);
    var capped = decodeEnergy(perByte, rec, bytesPerParam, batch, contextLen, capWatts);
    function dollars(e) { return price === null ? null : costPerMillionTokens(e.tokens / e.seconds, price); }
    return { batch: batch, free: free, capped: capped, dollarsPerMillion: dollars(free),
      cappedDollarsPerMillion: dollars(capped), feasible: free.feasible, capBinds: capped.seconds > free.seconds };
  }

  // -- parallelism: roofline_lib.workloads.parallel.plan and roofline_lib.workloads.train_memory, on the registry's nodes and models

  var WIRE_BYTES = 2; // parallel._WIRE_BYTES: activations, keys/values and gradients cross the wire in bf16
  var ACTIVATION_RECOMPUTE = ["none", "selective", "full"]; // train_memory.ACTIVATION_RECOMPUTE
  // train_memory's Korthikanti et al. (2022) bytes per layer, s b h factored out (16-bit activations):
  var ATTN_BLOCK = 11; // QKV input 2, Q and K 4, V 2, output-projection input 2, dropout mask 1
  var MLP_BLOCK = 19; // input 2, first linear's output 8, GeLU's output 8, dropout mask 1
  var NORMS_BLOCK = 4; // two LayerNorm inputs, 2 each
  var SCORES_BLOCK = 5; // per a s / h: softmax output 2, its dropout mask 1, dropout output 2
  var HIERARCHICAL = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]; // node_collectives._HIERARCHICAL

  /** A value as Python's repr writes it in a refusal: 'text' in single quotes, a number as is. */
  function pyRepr(value) {
    return typeof value === "string" ? "'" + value + "'" : String(value);
  }

  /** _checks._positive(allow_zero=True): a finite number of `unit`, zero allowed. */
  function nonNegative(value, what, unit) {
    if (typeof value !== "number") throw new Error(what + " must be a number of " + unit + ", got " + pyRepr(value));
    if (!isFinite(value)) throw new Error(what + " must be a finite number of " + unit + ", got " + value);
    if (value < 0) throw new Error(what + " must be a non-negative number of " + unit + ", got " + value);
    return value;
  }

  /** train_memory._key: one of a table's names, trimmed and lower-cased. */
  function tableKey(value, table, what) {
    var keys = Array.isArray(table) ? table : Object.keys(table);
    var norm = typeof value === "string" ? value.trim().toLowerCase() : null;
    if (norm === null || keys.indexOf(norm) < 0) {
      throw new Error(what + " must be one of " + keys.join(", ") + ", got " + pyRepr(value));
    }
    return norm;
  }

  /** train_memory._stage: a ZeRO stage, 0 to 3. */
  function zeroStage(value) {
    if ([0, 1, 2, 3].indexOf(value) < 0) {
      throw new Error("zero must be a ZeRO stage, one of 0, 1, 2, 3, got " + pyRepr(value));
    }
    return value;
  }

  /** The registry record of a node, by key, name or alias, as roofline_lib.node() resolves it. */
  function findNode(name) {
    var nodes = registry().nodes;
    if (!nodes) throw new Error("the registry on this page has no nodes (re-run roofline_lib.present.export)");
    return lookup(nodes, name, "node");
  }

  /** A shipped model's record (roofline_lib.model_config(name) for a shipped name). */
  function findModel(key) {
    var models = registry().models;
    if (!models || !Object.prototype.hasOwnProperty.call(models, key)) {
      throw new Error("unknown model " + pyRepr(key) + "; shipped models: " + Object.keys(models || {}).join(", "));
    }
    return models[key];
  }

  /** interconnect.NodeSpec's bandwidths: one GPU's NVLink, and one GPU's share of the node's NICs. */
  function nodeBandwidths(node) {
    var links = registry().links;
    var up = links[node.scale_up], out = links[node.scale_out];
    return {
      scaleUp: up,
      scaleOut: out,
      scaleUpBytesPerS: up.bytes_per_s,
      scaleOutBytesPerSPerGpu: (out.bytes_per_s * node.scale_out_ports) / node.n_gpus, // NICs x port speed / GPUs
    };
  }

  /** node_collectives.node_collective_cost: hierarchical and rail-aligned, the slower of the NVLink phase and
   *  the group's members' NICs; `gpusPerNode` of the group share each node. */
  function nodeCollectiveCost(collective, messageBytes, nGpus, node, alphaSeconds, gpusPerNode) {
    var c = collectiveKey(collective);
    if (HIERARCHICAL.indexOf(c) < 0) {
      throw new Error("collective must be one of " + HIERARCHICAL.join(", ") + " across nodes, got " + pyRepr(collective));
    }
    var spec = typeof node === "string" ? findNode(node) : node;
    var s = positive(messageBytes, "message_bytes", "bytes");
    var n = wholeNumber(nGpus, "n_gpus", "ranks");
    if (n < 2) throw new Error("n_gpus must be at least 2 ranks for a " + c + ", got " + nGpus);
    var alpha = nonNegative(alphaSeconds === undefined ? 0 : alphaSeconds, "alpha_seconds", "seconds");
    var gNode = spec.n_gpus;
    if (gpusPerNode !== undefined && gpusPerNode !== null) {
      gNode = wholeNumber(gpusPerNode, "gpus_per_node", "GPUs of the group in each node");
      if (gNode > spec.n_gpus) {
        throw new Error("gpus_per_node must be at most the node's " + spec.n_gpus + " GPUs, got " + gpusPerNode);
      }
    }
    var g, m;
    if (n <= gNode) {
      g = n; m = 1;
    } else if (n % gNode) {
      throw new Error("n_gpus must fill whole nodes of " + gNode + " GPUs (" + spec.name + ") or fit in one, got " +
        nGpus + ": use a multiple of " + gNode);
    } else {
      g = gNode; m = n / gNode;
    }
    var bw = nodeBandwidths(spec);
    var up = bw.scaleUpBytesPerS;
    var egressBw = bw.scaleOutBytesPerSPerGpu * g; // the group's members' NICs
    var intra, egress, steps;
    if (c === "all_to_all") {
      intra = ((g - 1) / n) * s; // the chunks for the node's other GPUs
      egress = ((g * (n - g)) / n) * s; // every GPU's chunks for the other nodes
      steps = n - 1;
    } else {
      intra = g > 1 ? bytesPerRankPerByte(c, g, "ring") * s : 0;
      egress = m > 1 ? bytesPerRankPerByte(c, m, "ring") * s : 0; // the node's g shards of S / g
      steps = (g > 1 ? collectiveSteps(c, g, "ring") : 0) + (m > 1 ? collectiveSteps(c, m, "ring") : 0);
    }
    var intraS = intra / up, egressS = egress / egressBw;
    var wire = Math.max(intraS, egressS);
    var latency = steps * alpha;
    var seconds = latency + wire;
    return {
      collective: c,
      node: spec.name,
      nGpus: n,
      nNodes: m,
      gpusPerNode: g,
      messageBytes: s,
      intraBytesPerGpu: intra,
      intraBytesPerS: up,
      intraSeconds: intraS,
      egressBytesPerNode: egress,
      egressBytesPerS: egressBw,
      egressSeconds: egressS,
      steps: steps,
      latencySeconds: latency,
      bandwidthSeconds: wire,
      seconds: seconds,
      binding: wire === 0 ? "" : (egressS > intraS ? "node egress" : "NVLink inside the node"),
      bytesPerGpu: bytesPerRankPerByte(c, n, "ring") * s, // a flat ring's bytes: the NCCL tests' accounting
      busBytesPerS: (s / seconds) * busBandwidthFactor(c, n),
    };
  }

  /** parallel.cluster: `nGpus` GPUs in nodes of one kind, part of one node or whole nodes. */
  function parallelCluster(node, nGpus) {
    var spec = typeof node === "string" ? findNode(node) : node;
    var n = wholeNumber(nGpus, "n_gpus", "GPUs");
    if (n > spec.n_gpus && n % spec.n_gpus) {
      throw new Error("n_gpus must fill whole nodes of " + spec.n_gpus + " GPUs (" + spec.name +
        ") or fit in one, got " + nGpus);
    }
    var nodes = Math.ceil(n / spec.n_gpus);
    return { node: spec, gpu: registry().gpus[spec.gpu], nGpus: n, nNodes: nodes,
      name: n + " GPUs in " + nodes + " x " + spec.name };
  }

  /** parallel.pipeline_bubble_fraction: the 1F1B pipeline's idle over busy time, (pp - 1) / (v m). */
  function pipelineBubbleFraction(pp, microBatches, virtualStages) {
    var p = wholeNumber(pp, "pp", "pipeline stages");
    var m = wholeNumber(microBatches, "micro_batches", "micro-batches");
    var v = wholeNumber(virtualStages === undefined ? 1 : virtualStages, "virtual_stages", "virtual stages per GPU");
    return (p - 1) / (v * m);
  }

  /** train_memory.state_bytes_per_param: weights, gradients and optimizer state (K) per parameter,
   *  from the registry's copy of train_memory's tables (mixed Adam: 2 + 2 + 12 = 16 bytes). */
  function stateBytesPerParam(optimizer, precision) {
    var tables = registry().train_state;
    if (!tables) throw new Error("the registry on this page has no train_state (re-run roofline_lib.present.export)");
    var opt = tableKey(optimizer === undefined ? "adam" : optimizer, tables.optimizers, "optimizer");
    var rec = tableKey(precision === undefined ? "mixed" : precision, tables.precision_recipes, "precision");
    var recipe = tables.precision_recipes[rec]; // [weight bytes, gradient bytes, bytes per state value, master copy]
    var k = (recipe[3] ? recipe[2] : 0) + tables.optimizers[opt] * recipe[2]; // master copy + the optimizer's values
    return { weights: recipe[0], gradients: recipe[1], optimizer: k, total: recipe[0] + recipe[1] + k };
  }

  /** train_memory.activation_bytes_per_layer: what one layer keeps for its backward pass, per GPU,
   *  s b h (34 + 5 a s / h) bytes, divided by tp under sequence parallelism (Korthikanti et al. 2022). */
  function activationBytesPerLayer(seqLen, microBatch, dModel, nHeads, tp, sequenceParallel, recompute) {
    var s = wholeNumber(seqLen, "seq_len", "tokens");
    var b = wholeNumber(microBatch, "micro_batch", "sequences");
    var h = wholeNumber(dModel, "d_model", "features");
    var a = wholeNumber(nHeads, "n_heads", "attention heads");
    var t = wholeNumber(tp === undefined ? 1 : tp, "tp", "tensor-parallel GPUs");
    var sp = sequenceParallel === undefined ? false : sequenceParallel;
    if (typeof sp !== "boolean") throw new Error("sequence_parallel must be True or False, got " + sp);
    var mode = tableKey(recompute === undefined ? "none" : recompute, ACTIVATION_RECOMPUTE, "recompute");
    var sbh = s * b * h;
    if (mode === "full") return (2 * sbh) / (sp ? t : 1); // only the layer's input is kept
    var scores = mode === "selective" ? 0 : (SCORES_BLOCK * a * s) / h;
    var linear = ATTN_BLOCK + MLP_BLOCK + NORMS_BLOCK; // 34
    if (sp || t === 1) return (sbh / t) * (linear + scores);
    var replicated = 10; // what TP alone leaves whole: norms' inputs 4, attention and MLP inputs 4, masks 2
    return sbh * (replicated + (linear - replicated) / t + scores / t);
  }

  /** parallel.expert_params: the routed experts' parameters, (E - k) / E of them idle per token. */
  function expertParams(model) {
    if (!(model.n_experts > 1) || model.experts_per_token === model.n_experts) return 0;
    var idle = model.n_params - model.active_params;
    return (idle * model.n_experts) / (model.n_experts - model.experts_per_token);
  }

  /** TransformerConfig.training_flops_per_token: 6 N_active, plus 3 x the causal scores 2 L s a
   *  (three-term) or twice them (full-square), with a the model's score width. */
  function modelTrainingFlopsPerToken(model, convention, seqLen) {
    var key = conventionKey(convention);
    if (key === "6N") return 6 * model.active_params; // 2N forward + 4N backward
    var causalScores = 2 * model.n_layers * seqLen * model.score_dim; // 2 s a per layer, forward
    var squares = key === "full-square" ? 2 : 1; // the whole square is twice the causal half
    return 6 * model.active_params + 3 * squares * causalScores; // x3: forward + backward
  }

  /** The dense peak of the cluster's GPU in `precision`, refused as plan refuses compute_precision. */
  function planPeak(gpu, precision) {
    var known = registry().precisions;
    if (typeof precision !== "string") {
      throw new Error("compute_precision: precision must be a string such as 'bf16', got " + pyRepr(precision));
    }
    var key = precision.trim().toLowerCase();
    if (known.indexOf(key) < 0) {
      throw new Error("compute_precision: precision must be one of " + known.join(", ") + ", got " + pyRepr(precision));
    }
    if (!Object.prototype.hasOwnProperty.call(gpu.dense_flops_per_s, key)) {
      throw new Error("compute_precision: " + gpu.name + " has no " + key + " (precision=" + pyRepr(precision) +
        "); it has: " + known.filter(function (p) { return p in gpu.dense_flops_per_s; }).join(", "));
    }
    return gpu.dense_flops_per_s[key];
  }

  /** parallel._members_per_node: how many of a group's GPUs share a node, `stride` ranks apart. */
  function membersPerNode(group, stride, gpusPerNode, dim) {
    if (stride >= gpusPerNode) {
      if (stride % gpusPerNode) {
        throw new Error(dim + "'s inner ranks (" + stride + ") must fill whole nodes of " + gpusPerNode +
          " GPUs or divide one, so each group lies the same way in every node");
      }
      return 1;
    }
    if (gpusPerNode % stride) {
      throw new Error(dim + "'s inner ranks (" + stride + ") must divide the node's " + gpusPerNode + " GPUs");
    }
    var perNode = Math.min(group, gpusPerNode / stride);
    if (group % perNode) {
      throw new Error(dim + " = " + group + " GPUs must be a multiple of the " + perNode + " that share each node " +
        "(or at most " + perNode + "), so its group fills whole nodes");
    }
    return perNode;
  }

  /** parallel._cost: `count` collectives on `group` GPUs `stride` ranks apart: seconds, bytes per GPU
   *  (flat accounting), members per node and the link named. */
  function parallelCost(collective, message, group, stride, c, alpha, count, dim) {
    var perNode = membersPerNode(group, stride, c.node.n_gpus, dim);
    var cost = nodeCollectiveCost(collective, message, group, c.node, alpha, perNode);
    var link = cost.nNodes === 1 ? nodeBandwidths(c.node).scaleUp.name + ", inside a node"
      : cost.nNodes + " nodes, " + perNode + " GPU(s) each; " + cost.binding + " binds";
    return { seconds: count * cost.seconds, sent: count * cost.bytesPerGpu, perNode: perNode, link: link };
  }

  /** parallel._check_layout: the layout's refusals, in the library's order; returns the micro-batches. */
  function checkLayout(model, c, dp, tp, pp, ep, cp, s, gb, mb, v, crossNodeTp) {
    if (dp * tp * pp * cp !== c.nGpus) {
      throw new Error("dp x tp x pp x cp must equal the cluster's " + c.nGpus + " GPUs, got " + dp + " x " + tp +
        " x " + pp + " x " + cp + " = " + dp * tp * pp * cp + " GPUs (ep is a sub-group of dp x cp)");
    }
    if (model.n_heads % tp) {
      throw new Error("tp must divide the model's " + model.n_heads + " attention heads, got tp = " + tp + " GPUs");
    }
    var gpn = c.node.n_gpus;
    if (tp > gpn && !crossNodeTp) {
      throw new Error("tp = " + tp + " GPUs spans more than one node of " + gpn + " GPUs: its all-reduces, four " +
        "per layer and micro-batch, would cross the network; keep tp <= the node's GPUs, or pass allow_cross_node_tp=True");
    }
    if (pp > model.n_layers) {
      throw new Error("pp must be at most the model's " + model.n_layers + " layers, got pp = " + pp + " stages");
    }
    if (ep > 1 && !(model.n_experts > 1)) {
      throw new Error("ep must be 1 for a dense model (it has no experts to spread), got ep = " + ep + " GPUs");
    }
    if (model.n_experts % ep) {
      throw new Error("ep must divide the model's " + model.n_experts + " experts, got ep = " + ep + " GPUs");
    }
    if ((dp * cp) % ep) {
      throw new Error("ep must divide dp x cp = " + dp * cp + " GPUs (experts spread over them), got ep = " + ep + " GPUs");
    }
    if (s % cp) throw new Error("cp must divide seq_len = " + s + " tokens, got cp = " + cp + " GPUs");
    if (gb % (dp * mb)) {
      throw new Error("global_batch must be a multiple of dp x micro_batch = " + dp * mb + " sequences, got " + gb +
        " sequences");
    }
    var m = gb / (dp * mb);
    if (v > 1 && (pp === 1 || m % pp)) {
      throw new Error("virtual_stages = " + v + " needs pp > 1 and micro-batches per step (" + m + ") a multiple of pp (" +
        pp + ") (the interleaved schedule's rule)");
    }
    return m;
  }

  /** parallel.plan: one training step of a shipped model on a cluster (parallelCluster) under a
   *  layout, `o` holding plan's keyword arguments by their Python names (dp, tp, pp, ep, cp, zero,
   *  global_batch, seq_len, micro_batch, virtual_stages, recompute, optimizer, precision,
   *  compute_precision, convention, alpha_seconds, allow_cross_node_tp). The roofs in seconds:
   *  compute (the busiest stage at the dense peak, plus the bubble), hbm and one per parallel
   *  dimension; the longest binds. Memory per GPU: model state after ZeRO and the activations in flight. */
  function parallelPlan(modelKey, c, o) {
    var model = typeof modelKey === "string" ? findModel(modelKey) : modelKey;
    if (!c || !c.node || !c.nGpus) {
      throw new Error("cluster must be a Cluster, such as rl.cluster('8x H100', 64), got " + pyRepr(c));
    }
    var dims = {};
    ["dp", "tp", "pp", "ep", "cp"].forEach(function (name) {
      var value = o[name] === undefined && name !== "dp" ? 1 : o[name];
      dims[name] = wholeNumber(value, name, "GPUs");
    });
    var dp = dims.dp, tp = dims.tp, pp = dims.pp, ep = dims.ep, cp = dims.cp;
    var z = zeroStage(o.zero === undefined ? 0 : o.zero);
    var s = wholeNumber(o.seq_len, "seq_len", "tokens");
    var gb = wholeNumber(o.global_batch, "global_batch", "sequences");
    var mb = wholeNumber(o.micro_batch === undefined ? 1 : o.micro_batch, "micro_batch", "sequences");
    var v = wholeNumber(o.virtual_stages === undefined ? 1 : o.virtual_stages, "virtual_stages", "virtual stages per GPU");
    var mode = tableKey(o.recompute === undefined ? "selective" : o.recompute, ACTIVATION_RECOMPUTE, "recompute");
    var alpha = nonNegative(o.alpha_seconds === undefined ? 0 : o.alpha_seconds, "alpha_seconds", "seconds");
    var cross = flag(o.allow_cross_node_tp === undefined ? false : o.allow_cross_node_tp, "allow_cross_node_tp");
    var m = checkLayout(model, c, dp, tp, pp, ep, cp, s, gb, mb, v, cross);
    var peak = planPeak(c.gpu, o.compute_precision === undefined ? "bf16" : o.compute_precision);
    var per = stateBytesPerParam(o.optimizer, o.precision);
    var convention = o.convention === undefined ? "6N" : o.convention;

    // compute: the busiest stage's share of the step's FLOPs
    var tokens = gb * s;
    var layersPerStage = Math.ceil(model.n_layers / pp);
    var modelFlops = modelTrainingFlopsPerToken(model, convention, s) * tokens;
    var forward = (modelTrainingFlopsPerToken(model, "6N", s) / 3) * tokens; // 2N per token: one forward
    var scoresForward = (modelTrainingFlopsPerToken(model, "three-term", s) / 3) * tokens - forward;
    var extra = { none: 0, selective: scoresForward, full: forward + scoresForward }[mode];
    var hardwareFlops = modelFlops + extra;
    var stageShare = (layersPerStage * pp) / model.n_layers; // >= 1: the busiest stage's extra layers
    var flopsPerGpu = (hardwareFlops / c.nGpus) * stageShare;
    var compute = flopsPerGpu / peak;
    var bubble = compute * pipelineBubbleFraction(pp, m, v);
    var tokensPerGpu = tokens / (dp * cp); // tokens each pipeline's GPUs see per step

    var h = model.d_model;
    var nMoe = expertParams(model);
    var nDense = model.n_params - nMoe;
    var moeLayers = model.n_experts > 1 ? model.n_layers - model.n_dense_layers : 0;
    var moeLayersPerStage = moeLayers ? Math.ceil(moeLayers / pp) : 0;
    var comms = [];

    function add(name, what, collective, group, cost, count, message, grows) {
      var intensity = flopsPerGpu / cost.sent;
      var ridge = (peak * cost.seconds) / cost.sent; // peak over the bytes/s the group gets: the roofs meet here
      var critical = grows ? (cost.seconds <= compute ? 0 : Infinity) : (tokensPerGpu * cost.seconds) / compute;
      comms.push({ name: name, what: what, collective: collective, group: group, gpusPerNode: cost.perNode,
        link: cost.link, count: count, messageBytes: message, bytesPerGpu: cost.sent, seconds: cost.seconds,
        intensity: intensity, ridge: ridge, criticalTokensPerGpu: critical, hidden: intensity >= ridge });
    }

    var actMsg = mb * (s / cp) * h * WIRE_BYTES; // one micro-batch's activations, one layer
    var count;
    if (tp > 1) {
      count = (mode === "full" ? 6 : 4) * layersPerStage * m;
      add("tp", "activations, all-reduced 4 times per layer", "all_reduce", tp,
        parallelCost("all_reduce", actMsg, tp, 1, c, alpha, count, "tp"), count, actMsg, true);
    }
    if (cp > 1) {
      var kvMsg = (mb * s * model.kv_cache_width * WIRE_BYTES) / tp; // K and V of the whole sequence
      count = 3 * layersPerStage * m;
      add("cp", "keys and values gathered per layer", "all_gather", cp,
        parallelCost("all_gather", kvMsg, cp, tp, c, alpha, count, "cp"), count, kvMsg, true);
    }
    var dpGroup = dp * cp;
    if (dpGroup > 1) {
      var kind = z === 3 ? "all_gather" : "all_reduce"; // ZeRO-3: AG, AG, RS
      count = z === 3 ? 3 : 1;
      var gradMsg = (nDense / (tp * pp)) * WIRE_BYTES;
      var dpCost = parallelCost(kind, gradMsg, dpGroup, tp, c, alpha, count, "dp x cp");
      if (nMoe && Math.floor(dpGroup / ep) > 1) { // each expert's gradients over its own replicas
        var eMsg = (nMoe / (tp * ep * pp)) * WIRE_BYTES;
        var x = parallelCost(kind, eMsg, Math.floor(dpGroup / ep), tp * ep, c, alpha, count, "dp x cp / ep");
        dpCost = { seconds: dpCost.seconds + x.seconds, sent: dpCost.sent + x.sent, perNode: dpCost.perNode,
          link: dpCost.link };
      }
      add("dp", z === 3 ? "weights gathered twice, gradients reduce-scattered" : "gradients all-reduced once", kind,
        dpGroup, dpCost, count, gradMsg, false);
    }
    if (ep > 1) {
      var a2aMsg = (mb * (s / cp) * model.experts_per_token * h * WIRE_BYTES) / tp; // k copies of each token
      count = 4 * moeLayersPerStage * m;
      add("ep", "tokens to their experts and back", "all_to_all", ep,
        parallelCost("all_to_all", a2aMsg, ep, tp, c, alpha, count, "ep"), count, a2aMsg, true);
    }
    if (pp > 1) {
      var across = tp * cp * dp >= c.node.n_gpus;
      var bw = nodeBandwidths(c.node);
      var pBw = across ? bw.scaleOutBytesPerSPerGpu : bw.scaleUpBytesPerS;
      var pMsg = actMsg / tp; // sequence parallel: each TP rank sends its shard
      count = 2 * m * v;
      var pBytes = count * pMsg;
      add("pp", "activations between stages", "point_to_point", pp, { seconds: pBytes / pBw + count * alpha,
        sent: pBytes, perNode: 1, link: across ? bw.scaleOut.name + ", the GPU's NIC"
          : bw.scaleUp.name + ", inside a node" }, count, pMsg, true);
    }

    // memory per GPU, and the HBM roof
    var denseGpu = nDense / (tp * pp);
    var moeGpu = nMoe / (tp * ep * pp);
    var moeShard = Math.max(1, Math.floor(dpGroup / ep));
    function state(bytesPerParam, level) {
      if (z >= level) return bytesPerParam * (denseGpu / dpGroup + moeGpu / moeShard);
      return bytesPerParam * (denseGpu + moeGpu);
    }
    var actLayer = activationBytesPerLayer(s / cp, mb, h, model.n_heads, tp, tp > 1, mode);
    var inFlight = Math.min(pp, m) * (v > 1 ? 1 + (pp - 1) / (pp * v) : 1); // 1F1B, first stage
    var memory = {
      weights: state(per.weights, 3),
      gradients: state(per.gradients, 2),
      optimizer: state(per.optimizer, 1),
      activations: actLayer * layersPerStage * inFlight,
      capacity: c.gpu.hbm_capacity_bytes,
    };
    memory.state = memory.weights + memory.gradients + memory.optimizer;
    memory.total = memory.state + memory.activations;
    memory.fits = memory.total <= memory.capacity;
    var paramsGpu = denseGpu + moeGpu;
    var hbmBytes = m * (3 * per.weights + 2 * per.gradients) * paramsGpu + // weights read fwd + 2x bwd; grads accumulated
      2 * memory.state + // the optimizer step reads and writes the GPU's state once
      2 * actLayer * layersPerStage * m; // activations written forward, read backward
    var hbm = hbmBytes / c.gpu.hbm_bytes_per_s;

    var overlap = planOverlap(o.overlap === undefined ? OVERLAPPED_COMMS : o.overlap);
    var roofs = { compute: compute + bubble, hbm: hbm };
    var commsSeconds = 0;
    comms.forEach(function (r) { roofs[r.name] = r.seconds; commsSeconds += r.seconds; });
    // parallel._priced: the critical path is the compute, its bubble and the communication that cannot
    // overlap it; the step is the longest of that and the roofs that do overlap (HBM and `overlap`)
    var exposed = {}, critical = roofs.compute, beside = { hbm: hbm };
    comms.forEach(function (r) {
      if (overlap.indexOf(r.name) < 0) { exposed[r.name] = r.seconds; critical += r.seconds; }
      else beside[r.name] = r.seconds;
    });
    var longest = "hbm";
    Object.keys(beside).forEach(function (k) { if (beside[k] > beside[longest]) longest = k; }); // the first on a tie
    var binding, step;
    if (beside[longest] > critical) {
      binding = longest; step = beside[longest];
    } else {
      binding = ["compute"].concat(Object.keys(exposed).filter(function (k) { return exposed[k] > 0; })).join(" + ");
      step = critical;
    }
    var serial = compute + bubble + commsSeconds;
    var layout = { dp: dp, tp: tp, pp: pp, ep: ep, cp: cp, zero: z, micro_batch: mb, v: v };
    var fit = planFit(model, c, layout, s, memory, per.total * model.n_params);
    return {
      model: model.name || "model",
      cluster: c.name,
      layout: layout,
      recompute: mode,
      exposed: exposed,
      criticalSeconds: critical,
      assumption: planAssumption(comms, overlap),
      feasible: fit.feasible,
      fitHeadline: fit.headline,
      tokensPerStep: tokens,
      microBatches: m,
      layersPerStage: layersPerStage,
      computeSeconds: compute,
      bubbleSeconds: bubble,
      hbmSeconds: hbm,
      comms: comms,
      roofs: roofs,
      stepSeconds: step,
      binding: binding,
      serialSeconds: serial,
      memory: memory,
      modelFlopsPerStep: modelFlops,
      hardwareFlopsPerStep: hardwareFlops,
      peakFlopsPerS: peak,
      nGpus: c.nGpus,
      fits: memory.fits,
      mfu: modelFlops / (c.nGpus * peak * step), // model FLOPs over the step at the longest roof
      mfuNoOverlap: modelFlops / (c.nGpus * peak * serial),
      hardwareFlopsPerSPerGpu: hardwareFlops / (c.nGpus * step),
    };
  }

  var OVERLAPPED_COMMS = ["dp", "cp", "pp"]; // parallel.OVERLAPPED_COMMS: the traffic that may hide under the compute
  var PARALLEL_DIMS = ["tp", "cp", "dp", "ep", "pp"];

  /** parallel._overlap: some of tp, cp, dp, ep and pp, in a list. */
  function planOverlap(value) {
    if (!Array.isArray(value)) {
      throw new Error("overlap must be a tuple of parallel dimensions (some of " + PARALLEL_DIMS.join(", ") + "), got " +
        pyRepr(value));
    }
    var unknown = value.filter(function (d) { return PARALLEL_DIMS.indexOf(d) < 0; });
    if (unknown.length) {
      throw new Error("overlap must name parallel dimensions among " + PARALLEL_DIMS.join(", ") + ", got [" +
        unknown.map(pyRepr).join(", ") + "]");
    }
    return value;
  }

  /** parallel._words: "a", "a and b", "a, b and c". */
  function inWords(names) {
    return names.length === 1 ? names[0] : names.slice(0, -1).join(", ") + " and " + names[names.length - 1];
  }

  /** parallel._assumption: which communication the bound waits for and which it lets hide, in words. */
  function planAssumption(comms, overlap) {
    if (!comms.length) return "no communication (one GPU's work)";
    var exposed = comms.filter(function (r) { return overlap.indexOf(r.name) < 0; }).map(function (r) { return r.name; });
    var hidden = comms.filter(function (r) { return overlap.indexOf(r.name) >= 0; }).map(function (r) { return r.name; });
    var parts = [];
    if (exposed.length) parts.push(inWords(exposed) + " on the critical path (waited for, added to the compute)");
    if (hidden.length) parts.push(inWords(hidden) + " overlapped with the compute");
    return "assumes " + parts.join("; ");
  }

  /** parallel._plan_fit: memory per GPU against the GPU's, the sequence against the model's context. */
  function planFit(model, c, layout, seqLen, memory, stateBytes) {
    var layText = Object.keys(layout).filter(function (k) { return layout[k] !== 1 || k === "dp" || k === "zero"; })
      .map(function (k) { return k + "=" + layout[k]; }).join(", ");
    var name = model.name || "the model";
    return memoryFit([["weights", memory.weights], ["gradients", memory.gradients], ["optimizer state", memory.optimizer],
      ["activations", memory.activations]], memory.capacity, {
      device: c.gpu.name, modelName: name, maxContext: model.max_context, slidingWindow: model.sliding_window,
      contextLen: seqLen, what: name + " training at " + layText + " on " + c.nGpus + " GPUs",
      wouldFit: "its training state alone (" + memorySize(stateBytes) + ") needs at least " +
        grouped(fewestDevices(stateBytes, memory.capacity)) + " such GPUs, fully sharded; fit_layouts finds a layout that fits",
    });
  }

  /** What widgets_parallel.parallel_explorer computes from its controls: dp is what tp x pp leave
   *  of the GPUs, the batch is rounded down to a multiple of dp (at least dp), then plan. */
  function parallelExplorerPlan(v) {
    if (v.n_gpus % (v.tp * v.pp)) {
      throw new Error("tp x pp = " + v.tp * v.pp + " GPUs must divide n_gpus = " + v.n_gpus + " GPUs");
    }
    var dp = v.n_gpus / (v.tp * v.pp);
    var batch = Math.floor(Math.max(v.global_batch, dp) / dp) * dp;
    return parallelPlan(v.model, parallelCluster(v.node, v.n_gpus), { dp: dp, tp: v.tp, pp: v.pp, zero: v.zero,
      global_batch: batch, seq_len: v.seq_len, recompute: v.recompute });
  }

  // The log sliders' spans (log10 of their ends), the same as roofline_lib.present.widgets' sliders; a test
  // holds the two to each other.
  var SLIDER_LOG10 = { intensity: [-2, 4], tokens_per_s: [1, 9], message_bytes: [2, 11], slo_s: [-3, 1] };
  // The parallel mode's stepped sliders (log2 of their ends), widgets_parallel.parallel_explorer's notches.
  var PARALLEL_LOG2 = { n_gpus: [3, 14], tp: [0, 3], pp: [0, 4] };

  var api = {
    sliderLog10: SLIDER_LOG10,
    parallelSliderLog2: PARALLEL_LOG2,
    findGpu: findGpu,
    peakFlopsPerS: peakFlopsPerS,
    ridgePoint: ridgePoint,
    attainableFlopsPerS: attainableFlopsPerS,
    decodeCeiling: decodeCeiling,
    modelDecodeCeiling: modelDecodeCeiling,
    trainingFlopsPerToken: trainingFlopsPerToken,
    mfuParts: mfuParts,
    mfu: mfu,
    transformerFlopsPerToken: transformerFlopsPerToken,
    flopShares: flopShares,
    roundHalfEven: roundHalfEven,
    fixedLikePython: fixedLikePython,
    generalLikePython: generalLikePython,
    percentLikePython: percentLikePython,
    sig3: sig3,
    findLink: findLink,
    collectiveSteps: collectiveSteps,
    busBandwidthFactor: busBandwidthFactor,
    collectiveCost: collectiveCost,
    latencyCrossoverBytes: latencyCrossoverBytes,
    busAxis: busAxis,
    duration: duration,
    servingPrecision: servingPrecision,
    servingDecode: servingDecode,
    servingPrefill: servingPrefill,
    steadyState: steadyState,
    kvMaxRequests: kvMaxRequests,
    kvCapacity: kvCapacity,
    memoryFit: memoryFit,
    steadyFrontier: steadyFrontier,
    bestSteadyState: bestSteadyState,
    tpotSpan: tpotSpan,
    findNode: findNode,
    nodeCollectiveCost: nodeCollectiveCost,
    parallelCluster: parallelCluster,
    parallelBatchNote: parallelBatchNote,
    pipelineBubbleFraction: pipelineBubbleFraction,
    stateBytesPerParam: stateBytesPerParam,
    activationBytesPerLayer: activationBytesPerLayer,
    expertParams: expertParams,
    parallelPlan: parallelPlan,
    parallelExplorerPlan: parallelExplorerPlan,
    powerSpec: powerSpec,
    joulesPerFlopAtTdp: joulesPerFlopAtTdp,
    decodeEnergy: decodeEnergy,
    gpuHourPrice: gpuHourPrice,
    costPerMillionTokens: costPerMillionTokens,
    energyPoint: energyPoint,
    energySliders: ENERGY_SLIDERS,
    energyText: energyText,
    powerText: powerText,
  };
  root.RooflineExplorer = api;

  if (typeof document === "undefined") return; // loaded outside a browser (the test runs it in node)

  // ------------------------------------------------------------------ the page

  var SVG_NS = "http://www.w3.org/2000/svg"; // the SVG namespace name, not a network address
  var INTENSITY_LOG10 = SLIDER_LOG10.intensity; // 0.01 to 10,000 FLOP/byte
  var BATCH_LOG2_MAX = 12; // batch 1 to 4096 in powers of two
  var TOKENS_LOG10 = SLIDER_LOG10.tokens_per_s; // training tokens/s, all cards together: 10 to 1e9
  var MODEL_SIZES = [1e9, 7e9, 13e9, 70e9, 405e9];
  var STARTING_MFU = 0.4; // with no data-tokens-per-s, start at the rate that gives 40 % MFU
  var MFU_AXIS_MAX = 1.5; // the MFU bar's axis ends at 150 %, so a refused rate still shows
  var MODES = {
    intensity: "Roofline explorer",
    decode: "Decode explorer",
    mfu: "MFU explorer",
    flops: "Where a token's FLOPs go",
    comms: "Collective cost explorer",
    serving: "Serving frontier explorer",
    parallel: "Parallelism planner",
    energy: "Energy and cost explorer",
  };
  // The four parts of a token's forward FLOPs, in the order of roofline_lib's flop_share_explorer.
  var SHARE_PARTS = [
    { key: "ffn", quantity: "ffn_total", count: "ffnTotal", label: "FFN" },
    { key: "qkvo", quantity: "qkvo_total", count: "qkvoTotal", label: "QKVO" },
    { key: "scores", quantity: "scores_total", count: "scoresTotal", label: "Scores" },
    { key: "unembed", quantity: "unembed", count: "unembed", label: "Unembed" },
  ];
  var counter = 0;

  function powersOfTwo(lo, hi) {
    var out = [];
    for (var k = lo; k <= hi; k++) out.push(Math.pow(2, k));
    return out;
  }

  var N_GPUS_CHOICES = powersOfTwo(0, 14); // 1 to 16,384 GPUs
  var SEQ_LEN_CHOICES = powersOfTwo(7, 17); // 128 to 131,072 tokens
  var D_MODEL_CHOICES = powersOfTwo(8, 14); // 256 to 16,384 features

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

  function svgEl(tag, attrs, text) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) {
      node.setAttribute(k, attrs[k]);
    });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** A snapped log-slider value: 10^v rounded to 3 significant digits, so the label is the exact input. */
  function snap3(v) {
    return Number(Math.pow(10, Number(v)).toPrecision(3));
  }

  /** A markup attribute as a number; absent -> the fallback. The callers check its range. */
  function numberAttr(host, name, fallback) {
    var raw = host.getAttribute(name);
    return raw === null ? fallback : Number(raw);
  }

  function booleanAttr(host, name, fallback) {
    var raw = host.getAttribute(name);
    if (raw === null) return fallback;
    if (raw === "true" || raw === "false") return raw === "true";
    throw new Error(name + " must be \"true\" or \"false\", got " + JSON.stringify(raw));
  }

  /** The sorted options of a stepped slider, with the markup's starting value among them. */
  function choices(initial, options) {
    var all = options.indexOf(initial) < 0 ? options.concat([initial]) : options.slice();
    return all.sort(function (a, b) { return a - b; });
  }

  function field(labelText, control) {
    return el("label", { class: "roofline-explorer__field" }, [
      el("span", { class: "roofline-explorer__label", text: labelText }),
      control,
    ]);
  }

  /** A range input that steps through `options` (one notch each) and shows the chosen one. */
  function steppedSlider(name, options, initial, ariaLabel) {
    var input = el("input", { type: "range", name: name, min: "0", max: String(options.length - 1),
      step: "1", value: String(options.indexOf(initial)), "aria-label": ariaLabel });
    var output = el("output", { class: "roofline-explorer__slider-value" });
    return {
      input: input,
      output: output,
      value: function () { return options[Number(input.value)]; },
    };
  }

  /** A range input over the base-10 logarithm of a value, from 10^range[0] to 10^range[1] in
   * steps of 0.01, starting at `initial`, and the output that shows the chosen value. */
  function logSlider(name, range, initial, unit, ariaLabel) {
    // A range input would clamp a start outside its span, and the first move would jump: refuse it.
    var lo = Math.pow(10, range[0]), hi = Math.pow(10, range[1]);
    if (!(initial >= lo && initial <= hi)) {
      throw new Error("data-" + name.replace(/_/g, "-") + " must be between " + tick(lo) + " and " + tick(hi) +
        " " + unit + ", got " + initial);
    }
    var input = el("input", { type: "range", name: name, min: String(range[0]), max: String(range[1]),
      step: "0.01", value: String(Math.log10(initial)), "aria-label": ariaLabel });
    return { input: input, output: el("output", { class: "roofline-explorer__slider-value" }) };
  }

  /** A labelled field holding a slider ({input, output}) and its value. */
  function sliderField(labelText, slider) {
    return field(labelText, el("span", {}, [slider.input, slider.output]));
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

  /** 3 significant digits with an SI prefix: 6.03e16 FLOP/s -> "60.3 PFLOP/s". */
  function prefixed(x, unit) {
    var prefixes = ["", "k", "M", "G", "T", "P", "E", "Z"];
    var rounded = Number(x.toPrecision(3));
    var step = Math.max(0, Math.min(prefixes.length - 1, Math.floor(Math.log10(rounded) / 3)));
    return sig3(rounded / Math.pow(1000, step)) + " " + prefixes[step] + unit;
  }

  /** A whole number in full, with thousands separators: 11008 -> "11,008". */
  function grouped(n) {
    return n.toLocaleString("en-US", { maximumFractionDigits: 0, useGrouping: true });
  }

  /** A compact slider label: 1,500,000 -> "1.5M". */
  function compact(x) {
    if (x >= 1e9) return sig3(x / 1e9) + "G";
    if (x >= 1e6) return sig3(x / 1e6) + "M";
    if (x >= 1e4) return sig3(x / 1e3) + "k";
    return sig3(x);
  }

  function clear(svg) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
  }

  /** Draw y = min(slope * x, flat) on log-log axes with a marker at x; returns nothing. */
  function drawRoof(svg, o) {
    clear(svg);
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
      g.appendChild(svgEl("text", { x: x, y: H - B + 14, "text-anchor": "middle" }, tick(Math.pow(10, e))));
    }
    for (var f = lyBot; f <= lyTop; f++) {
      var y = py(Math.pow(10, f));
      g.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y, y2: y, class: "grid" }));
      if (f === lyBot) continue; // the corner belongs to the x axis's first label
      g.appendChild(svgEl("text", { x: L - 4, y: y + 4, "text-anchor": "end" }, tick(Math.pow(10, f) / o.yScale)));
    }
    g.appendChild(svgEl("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, o.xLabel));
    g.appendChild(svgEl("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (T + H - B) / 2 + ")" }, o.yLabel));
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

  /** One horizontal bar for a utilisation, 0 to 150 %, with the 100 % line; red when refused. */
  function drawMeter(svg, value, refused) {
    clear(svg);
    var W = 420, H = 96, L = 14, R = 24, T = 22, B = 34, barH = 26;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    function px(v) { return L + (v / MFU_AXIS_MAX) * (W - L - R); }
    var g = svgEl("g", { class: "roofline-explorer__axes" });
    for (var pct = 0; pct <= 100 * MFU_AXIS_MAX; pct += 25) {
      var x = px(pct / 100);
      g.appendChild(svgEl("line", { x1: x, x2: x, y1: T, y2: H - B, class: "grid" }));
      g.appendChild(svgEl("text", { x: x, y: H - B + 14, "text-anchor": "middle" }, pct + " %"));
    }
    g.appendChild(svgEl("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" },
      "model FLOPs utilisation"));
    svg.appendChild(g);
    var shown = Math.min(value, MFU_AXIS_MAX);
    var y = (T + H - B - barH) / 2;
    svg.appendChild(svgEl("rect", { x: L, y: y, width: px(shown) - L, height: barH,
      class: "roofline-explorer__meter" + (refused ? " roofline-explorer__meter--refused" : "") }));
    svg.appendChild(svgEl("line", { class: "roofline-explorer__limit", x1: px(1), x2: px(1), y1: T - 6, y2: H - B }));
    svg.appendChild(svgEl("text", { class: "roofline-explorer__limit-label", x: px(1), y: T - 9,
      "text-anchor": "middle" }, "100 %: the dense peak"));
  }

  /** Vertical bars for shares of a whole (0 to 100 %), each labelled with its percentage. */
  function drawShares(svg, bars) {
    clear(svg);
    var W = 420, H = 250, L = 48, R = 10, T = 18, B = 34;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    function py(share) { return T + (1 - share) * (H - T - B); }
    var g = svgEl("g", { class: "roofline-explorer__axes" });
    for (var pct = 0; pct <= 100; pct += 25) {
      var y = py(pct / 100);
      g.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y, y2: y, class: "grid" }));
      g.appendChild(svgEl("text", { x: L - 4, y: y + 4, "text-anchor": "end" }, pct + " %"));
    }
    svg.appendChild(g);
    var slot = (W - L - R) / bars.length;
    bars.forEach(function (bar, i) {
      var cx = L + slot * (i + 0.5);
      svg.appendChild(svgEl("rect", { x: cx - slot * 0.3, width: slot * 0.6, y: py(bar.share),
        height: py(0) - py(bar.share), class: "roofline-explorer__bar roofline-explorer__bar--" + bar.key }));
      svg.appendChild(svgEl("text", { class: "roofline-explorer__bar-value", x: cx, y: py(bar.share) - 4,
        "text-anchor": "middle" }, sig3(100 * bar.share) + " %"));
      g.appendChild(svgEl("text", { x: cx, y: H - B + 16, "text-anchor": "middle" }, bar.label));
    });
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

  /** The parts every explorer has: controls, a chart, the readouts beside it, a note below. */
  function frame(host) {
    var ui = {
      controls: el("div", { class: "roofline-explorer__controls" }),
      svg: svgEl("svg", { class: "roofline-explorer__chart", role: "img" }),
      svgTitle: svgEl("title", {}),
      dl: el("dl", { class: "roofline-explorer__readout", "aria-live": "polite" }),
      note: el("p", { class: "roofline-explorer__note" }),
    };
    host.appendChild(ui.controls);
    host.appendChild(el("div", { class: "roofline-explorer__body" }, [ui.svg, ui.dl]));
    host.appendChild(ui.note);
    return ui;
  }

  // -- one function per mode: it adds its controls and readouts, and returns draw(rec, precision)

  function intensityMode(host, ui, refresh) {
    var start = numberAttr(host, "data-intensity", 10);
    var current = Number(positive(start, "data-intensity", "FLOP/byte").toPrecision(3));
    var slider = logSlider("intensity", INTENSITY_LOG10, start, "FLOP/byte", "Arithmetic intensity, FLOP per byte (logarithmic)");
    ui.controls.appendChild(sliderField("Intensity (FLOP/byte)", slider));
    var out = {
      peak: readout(ui.dl, "peak_flops_per_s", "Compute roof"),
      bw: readout(ui.dl, "hbm_bytes_per_s", "Memory roof"),
      ridge: readout(ui.dl, "ridge_flops_per_byte", "Ridge point"),
      intensity: readout(ui.dl, "intensity", "Intensity"),
      attainable: readout(ui.dl, "attainable_flops_per_s", "Ceiling"),
      bound: readout(ui.dl, "bound", "Bound"),
    };
    slider.input.addEventListener("input", function () { current = snap3(slider.input.value); refresh(); });

    return function draw(rec, precision) {
      var intensity = current;
      var peak = peakFlopsPerS(rec, precision);
      var ridge = ridgePoint(rec, precision);
      var attainable = attainableFlopsPerS(rec, precision, intensity);
      slider.output.textContent = sig3(intensity);
      show(out.peak, peak, sig3(peak / 1e12) + " TFLOP/s dense " + precision);
      show(out.bw, rec.hbm_bytes_per_s, sig3(rec.hbm_bytes_per_s / 1e12) + " TB/s " + rec.memory_kind);
      show(out.ridge, ridge, sig3(ridge) + " FLOP/byte");
      show(out.intensity, intensity, sig3(intensity) + " FLOP/byte");
      show(out.attainable, attainable, sig3(attainable / 1e12) + " TFLOP/s");
      var bound = intensity < ridge ? "memory" : "compute";
      show(out.bound, bound, bound + " (" + sig3((100 * attainable) / peak) + " % of peak)");
      ui.svgTitle.textContent = rec.name + " " + precision + " roofline; a kernel at " + sig3(intensity) +
        " FLOP/byte can reach at most " + sig3(attainable / 1e12) + " TFLOP/s";
      drawRoof(ui.svg, { xMin: Math.pow(10, INTENSITY_LOG10[0]), xMax: Math.pow(10, INTENSITY_LOG10[1]),
        slope: rec.hbm_bytes_per_s, flat: peak, x: intensity, yScale: 1e12,
        xLabel: "intensity (FLOP/byte)", yLabel: "TFLOP/s" });
      ui.note.textContent = "Below the ridge the slanted roof (bandwidth × intensity) sets the ceiling; " +
        "above it the flat roof (the dense " + precision + " peak) does. Source: " + rec.source + ".";
    };
  }

  function decodeMode(host, ui, refresh) {
    var nParams = numberAttr(host, "data-n-params", 7e9);
    var sizes = MODEL_SIZES.indexOf(nParams) < 0 ? MODEL_SIZES.concat([nParams]) : MODEL_SIZES;
    var modelSelect = el("select", { name: "n_params" });
    var shipped = registry().models || {};
    var modelKey0 = host.getAttribute("data-model");
    fillSelect(modelSelect, sizes.slice().sort(function (a, b) { return a - b; }).map(function (n) {
      return { value: String(n), text: sig3(n / 1e9) + "B parameters" };
    }).concat(Object.keys(shipped).map(function (key) {
      return { value: "model:" + key, text: shipped[key].name };
    })), modelKey0 ? "model:" + modelKey0 : String(nParams));
    ui.controls.appendChild(field("Model", modelSelect));
    var batch0 = numberAttr(host, "data-batch", 1);
    if (!(Number.isInteger(batch0) && batch0 > 0)) {
      throw new Error("data-batch must be a positive whole number of sequences, got " + batch0);
    }
    var current = batch0;
    var slider = el("input", { type: "range", name: "batch", min: "0", max: String(BATCH_LOG2_MAX),
      step: "1", value: String(Math.round(Math.log2(batch0))),
      "aria-label": "Decode batch size, sequences per step (powers of two)" });
    var sliderValue = el("output", { class: "roofline-explorer__slider-value" });
    ui.controls.appendChild(field("Batch (sequences)", el("span", {}, [slider, sliderValue])));
    var out = {
      weights: readout(ui.dl, "weight_bytes", "Weights"),
      memory: readout(ui.dl, "memory_seconds", "Weight stream"),
      compute: readout(ui.dl, "compute_seconds", "Arithmetic"),
      tokens: readout(ui.dl, "tokens_per_s", "Ceiling"),
      perSeq: readout(ui.dl, "tokens_per_s_per_sequence", "Per sequence"),
      bound: readout(ui.dl, "bound", "Bound"),
    };
    slider.addEventListener("input", function () { current = Math.pow(2, Number(slider.value)); refresh(); });
    modelSelect.addEventListener("change", refresh);

    return function draw(rec, precision) {
      var batch = current;
      var choice = modelSelect.value;
      var isModel = choice.indexOf("model:") === 0;
      var d = isModel ? modelDecodeCeiling(rec, precision, choice.slice(6), batch)
        : decodeCeiling(rec, precision, Number(choice), batch);
      var n = isModel ? shipped[choice.slice(6)].n_params : Number(choice);
      var label = isModel ? shipped[choice.slice(6)].name : "a " + sig3(n / 1e9) + "B-parameter model";
      var peak = peakFlopsPerS(rec, precision);
      sliderValue.textContent = String(batch);
      var fits = d.fitsInMemory ? "fits in " : "too big for ";
      show(out.weights, d.weightBytes, sig3(d.weightBytes / 1e9) + " GB " + (isModel ? "read per step " : "") +
        "(" + fits + sig3(d.capacityBytes / 1073741824) + " GiB)"); // capacities are GiB: 2**30 bytes
      show(out.memory, d.memorySeconds, sig3(d.memorySeconds * 1e3) + " ms per step");
      show(out.compute, d.computeSeconds, sig3(d.computeSeconds * 1e3) + " ms per step");
      show(out.tokens, d.tokensPerS, sig3(d.tokensPerS) + " tokens/s");
      show(out.perSeq, d.tokensPerSPerSequence, sig3(d.tokensPerSPerSequence) + " tokens/s");
      show(out.bound, d.bound, d.bound + " (" + sig3(100 * d.shareOfPeak) + " % of peak)");
      ui.svgTitle.textContent = rec.name + " decode ceiling for " + label + " in " +
        precision + ": " + sig3(d.tokensPerS) + " tokens/s at batch " + batch;
      drawRoof(ui.svg, { xMin: 1, xMax: Math.pow(2, BATCH_LOG2_MAX),
        slope: rec.hbm_bytes_per_s / d.weightBytes, flat: peak / d.flopsPerToken,
        x: batch, yScale: 1, xLabel: "batch (sequences per step)", yLabel: "tokens/s" });
      ui.note.textContent = (d.fitsInMemory ? "" : "The weights do not fit on one card, so this ceiling " +
        "is unreachable there. ") + (isModel ? "Each step reads the weights it uses (one embedding row per " +
        "sequence; for a mixture of experts, the experts the batch touches under uniform routing) and " +
        "serves one token per sequence" : "Each step streams every weight once and serves one token per " +
        "sequence") + "; the KV cache is not counted. Source: " + rec.source + ".";
    };
  }

  function mfuMode(host, ui, refresh, gpu0, precision0) {
    var nParams = numberAttr(host, "data-n-params", 7e9);
    var convention = host.getAttribute("data-convention") || "6N";
    var nLayers = numberAttr(host, "data-n-layers", undefined);
    var dModel = numberAttr(host, "data-d-model", undefined);
    var seqLen = numberAttr(host, "data-seq-len", undefined);
    var perToken = trainingFlopsPerToken(nParams, convention, nLayers, dModel, seqLen); // checks the markup
    var gpus0 = wholeNumber(numberAttr(host, "data-n-gpus", 8), "data-n-gpus", "GPUs");
    var rate = host.getAttribute("data-tokens-per-s") === null  // 40 % MFU, inside the slider's span
      ? Math.min(Math.max((STARTING_MFU * gpus0 * peakFlopsPerS(gpu0, precision0)) / perToken,
        Math.pow(10, TOKENS_LOG10[0])), Math.pow(10, TOKENS_LOG10[1]))
      : positive(numberAttr(host, "data-tokens-per-s"), "data-tokens-per-s", "tokens per second");
    rate = Number(rate.toPrecision(3));

    var tokens = logSlider("tokens_per_s", TOKENS_LOG10, rate, "tokens/s",
      "Training tokens per second, all GPUs together (logarithmic)");
    var gpus = steppedSlider("n_gpus", choices(gpus0, N_GPUS_CHOICES), gpus0,
      "Number of GPUs (powers of two)");
    ui.controls.appendChild(sliderField("Tokens/s (all GPUs)", tokens));
    ui.controls.appendChild(sliderField("GPUs", gpus));
    var out = {
      perToken: readout(ui.dl, "flops_per_token", "Per token"),
      achieved: readout(ui.dl, "achieved_flops_per_s", "Model FLOP/s"),
      peak: readout(ui.dl, "peak_flops_per_s", "Peak, all GPUs"),
      mfu: readout(ui.dl, "mfu", "MFU"),
    };
    var formula = { "6N": "6N", "three-term": "(6N + 6 L s d)", "full-square": "(6N + 12 L s d)" }[conventionKey(convention)];
    tokens.input.addEventListener("input", function () { rate = snap3(tokens.input.value); refresh(); });
    gpus.input.addEventListener("input", refresh);

    return function draw(rec, precision) {
      var n = gpus.value();
      var m = mfuParts(nParams, rate, n, rec, precision, convention, nLayers, dModel, seqLen);
      var refusal = null;
      try {
        mfu(nParams, rate, n, rec, precision, convention, nLayers, dModel, seqLen);
      } catch (err) {
        refusal = err.message; // above 100 %: say why instead of showing a number
      }
      host.setAttribute("data-current-tokens-per-s", String(rate));
      host.setAttribute("data-current-n-gpus", String(n));
      tokens.output.textContent = compact(rate);
      gpus.output.textContent = String(n);
      show(out.perToken, m.flopsPerToken, prefixed(m.flopsPerToken, "FLOP") + " (" + m.convention + ")");
      show(out.achieved, m.achievedFlopsPerS, prefixed(m.achievedFlopsPerS, "FLOP/s"));
      show(out.peak, m.peakFlopsPerS, prefixed(m.peakFlopsPerS, "FLOP/s") + " (" + n + " × " +
        sig3(m.peakFlopsPerGpu / 1e12) + " TFLOP/s dense " + precision + ")");
      if (refusal) show(out.mfu, "refused", "impossible: above 100 %");
      else show(out.mfu, m.mfu, sig3(100 * m.mfu) + " %");
      ui.svgTitle.textContent = refusal ? "MFU above 100 %, refused: " + refusal
        : "MFU of " + sig3(100 * m.mfu) + " % on " + n + " × " + rec.name + " in " + precision;
      drawMeter(ui.svg, m.mfu, Boolean(refusal));
      ui.note.className = "roofline-explorer__note" + (refusal ? " roofline-explorer__note--refused" : "");
      ui.note.textContent = refusal || ("MFU = " + formula + " × tokens/s ÷ (GPUs × dense peak), with N = " +
        (nParams >= 1e9 ? sig3(nParams / 1e9) + "B" : sig3(nParams / 1e6) + "M") + " parameters and tokens/s counted over every GPU together. " +
        "Source: " + rec.source + ".");
    };
  }

  /** Modes that draw one GPU in one precision: a selector for each, then the mode's own parts. */
  function gpuExplorer(host, ui, mode) {
    var reg = registry();
    var gpu = findGpu(host.getAttribute("data-gpu") || "A100");
    var precision = host.getAttribute("data-precision") || "bf16";
    if (gpu.precisions.indexOf(precision) < 0) {
      throw new Error("roofline explorer: " + gpu.name + " has no " + precision);
    }
    var gpuSelect = el("select", { name: "gpu" });
    fillSelect(gpuSelect, Object.keys(reg.gpus).map(function (k) {
      return { value: k, text: reg.gpus[k].name };
    }), gpu.key);
    var precisionSelect = el("select", { name: "precision" });
    ui.controls.appendChild(field("GPU", gpuSelect));
    ui.controls.appendChild(field("Precision", precisionSelect));
    var build = { intensity: intensityMode, decode: decodeMode, mfu: mfuMode }[mode];
    var draw = build(host, ui, refresh, gpu, precision);

    function syncPrecisions() {
      var rec = reg.gpus[gpuSelect.value];
      if (rec.precisions.indexOf(precision) < 0) {
        precision = rec.precisions.indexOf("bf16") >= 0 ? "bf16" : rec.precisions[0];
      }
      fillSelect(precisionSelect, rec.precisions.map(function (p) {
        return { value: p, text: p };
      }), precision);
    }

    function refresh() {
      var rec = reg.gpus[gpuSelect.value];
      precision = precisionSelect.value;
      host.setAttribute("data-current-gpu", rec.key);
      host.setAttribute("data-current-precision", precision);
      draw(rec, precision);
      ui.svg.insertBefore(ui.svgTitle, ui.svg.firstChild);
    }

    gpuSelect.addEventListener("change", function () { syncPrecisions(); refresh(); });
    precisionSelect.addEventListener("change", refresh);
    syncPrecisions();
    refresh();
  }

  /** Where a token's forward FLOPs go, by component; no GPU involved. */
  function flopsExplorer(host, ui) {
    var d0 = numberAttr(host, "data-d-model", 4096);
    var s0 = numberAttr(host, "data-seq-len", 2048);
    var nLayers = numberAttr(host, "data-n-layers", 32);
    var vocab = numberAttr(host, "data-vocab", 32000);
    var ratio = numberAttr(host, "data-ffn-ratio", 4);
    var gated = booleanAttr(host, "data-gated", false);
    var causal = booleanAttr(host, "data-causal", true);
    flopShares(d0, s0, nLayers, vocab, ratio, gated, causal); // checks the markup before drawing

    var seq = steppedSlider("seq_len", choices(s0, SEQ_LEN_CHOICES), s0,
      "Sequence length in tokens (powers of two)");
    var width = steppedSlider("d_model", choices(d0, D_MODEL_CHOICES), d0,
      "Model width d_model in features (powers of two)");
    ui.controls.appendChild(sliderField("Sequence length", seq));
    ui.controls.appendChild(sliderField("d_model", width));
    var total = readout(ui.dl, "fwd_per_token", "Forward, per token");
    var dFf = readout(ui.dl, "d_ff", "d_ff");
    var parts = SHARE_PARTS.map(function (part) {
      return { part: part, dd: readout(ui.dl, part.quantity, part.label) };
    });

    function refresh() {
      var s = seq.value(), d = width.value();
      var f = flopShares(d, s, nLayers, vocab, ratio, gated, causal);
      host.setAttribute("data-current-seq-len", String(s));
      host.setAttribute("data-current-d-model", String(d));
      seq.output.textContent = grouped(s);
      width.output.textContent = grouped(d);
      show(total, f.fwdPerToken, prefixed(f.fwdPerToken, "FLOP"));
      show(dFf, f.dFf, grouped(f.dFf) + (gated ? " (gated: 3 matrices)" : " (2 matrices)"));
      var bars = parts.map(function (p) {
        var share = f.shares[p.part.key];
        show(p.dd, f[p.part.count], sig3(100 * share) + " % (" + prefixed(f[p.part.count], "FLOP") + ")");
        p.dd.setAttribute("data-share", String(share));
        return { key: p.part.key, label: p.part.label, share: share };
      });
      var largest = bars.reduce(function (a, b) { return b.share > a.share ? b : a; });
      drawShares(ui.svg, bars);
      ui.svgTitle.textContent = "Forward FLOPs per token at seq_len " + s + ", d_model " + d + ": " +
        bars.map(function (b) { return b.label + " " + sig3(100 * b.share) + " %"; }).join(", ");
      ui.svg.insertBefore(ui.svgTitle, ui.svg.firstChild);
      ui.note.textContent = "The largest share is " + largest.label + ". " + nLayers + " layers, vocabulary " +
        grouped(vocab) + ", d_ff = " + ratio + " × d_model; " + (causal
          ? "causal scores count half the square (a kernel that skips masked blocks). "
          : "scores count the full square. ") +
        "Embedding lookups, norms and softmax count as no FLOPs.";
    }

    seq.input.addEventListener("input", refresh);
    width.input.addEventListener("input", refresh);
    refresh();
  }

  var MESSAGE_LOG10 = SLIDER_LOG10.message_bytes; // message sizes 100 bytes to 100 GB
  var RANKS_CHOICES = powersOfTwo(1, 10); // 2 to 1,024 ranks
  var COMMS_CHOICES = [
    { value: "all_reduce/ring", text: "all-reduce (ring)" },
    { value: "all_reduce/tree", text: "all-reduce (tree)" },
    { value: "all_gather/ring", text: "all-gather" },
    { value: "reduce_scatter/ring", text: "reduce-scatter" },
    { value: "all_to_all/ring", text: "all-to-all" },
    { value: "point_to_point/ring", text: "point-to-point" },
  ];

  /** Bus bandwidth against message size on log-log axes: the curve, its two asymptotes, the point. */
  function drawBusCurve(svg, o) {
    clear(svg);
    var W = 420, H = 250, L = 60, R = 20, T = 10, B = 38;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var lx0 = MESSAGE_LOG10[0], lx1 = MESSAGE_LOG10[1];
    var axis = busAxis(o.flat, o.bus(Math.pow(10, lx0)));
    var lyTop = axis.top, lyBot = axis.bottom, every = axis.every;
    function px(x) { return L + ((Math.log10(x) - lx0) / (lx1 - lx0)) * (W - L - R); }
    function py(y) {
      var ly = Math.max(lyBot, Math.log10(y));
      return T + ((lyTop - ly) / (lyTop - lyBot)) * (H - T - B);
    }
    var g = svgEl("g", { class: "roofline-explorer__axes" });
    for (var e = lx0; e <= lx1; e++) {
      var x = px(Math.pow(10, e));
      g.appendChild(svgEl("line", { x1: x, x2: x, y1: T, y2: H - B, class: "grid" }));
      if ((e - lx0) % 2 === 0) {
        g.appendChild(svgEl("text", { x: x, y: H - B + 14, "text-anchor": "middle" }, prefixed(Math.pow(10, e), "B")));
      }
    }
    for (var f = lyBot; f <= lyTop; f++) {
      var y = py(Math.pow(10, f));
      g.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y, y2: y, class: "grid" }));
      if (f === lyBot || (lyTop - f) % every) continue;
      g.appendChild(svgEl("text", { x: L - 4, y: y + 4, "text-anchor": "end" }, tick(Math.pow(10, f) / 1e9)));
    }
    g.appendChild(svgEl("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, "message size"));
    g.appendChild(svgEl("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (T + H - B) / 2 + ")" }, "bus bandwidth (GB/s)"));
    svg.appendChild(g);
    var roof = [], curve = [];
    for (var i = 0; i <= 90; i++) {
      var size = Math.pow(10, lx0 + ((lx1 - lx0) * i) / 90);
      roof.push(px(size) + "," + py(Math.min(o.flat, o.slope * size)));
      curve.push(px(size) + "," + py(o.bus(size)));
    }
    svg.appendChild(svgEl("polyline", { class: "roofline-explorer__limit", points: roof.join(" ") }));
    svg.appendChild(svgEl("polyline", { class: "roofline-explorer__roof", points: curve.join(" ") }));
    svg.appendChild(svgEl("circle", { class: "roofline-explorer__point", r: 5, cx: px(o.x), cy: py(o.bus(o.x)) }));
  }

  /** One collective on one link: a link selector, ranks, message size and collective. */
  function commsExplorer(host, ui) {
    var reg = registry();
    var link0 = findLink(host.getAttribute("data-link") || "NVLink 4");
    var n0 = numberAttr(host, "data-n-ranks", 8);
    var s0 = positive(numberAttr(host, "data-message-bytes", 1e8), "data-message-bytes", "bytes");
    var alpha = positive(numberAttr(host, "data-alpha-seconds", 5e-6), "data-alpha-seconds", "seconds");
    var c0 = collectiveKey(host.getAttribute("data-collective") || "all_reduce");
    var a0 = host.getAttribute("data-algorithm") || "ring";
    collectiveCost(c0, s0, n0, alpha, link0, a0); // checks the markup before drawing
    var size = Number(s0.toPrecision(3));

    var linkSelect = el("select", { name: "link" });
    fillSelect(linkSelect, Object.keys(reg.links).map(function (k) {
      return { value: k, text: reg.links[k].name };
    }), link0.key);
    var kindSelect = el("select", { name: "collective" });
    fillSelect(kindSelect, COMMS_CHOICES, c0 + "/" + a0);
    var ranks = steppedSlider("n_ranks", choices(n0, RANKS_CHOICES), n0, "Number of ranks (powers of two)");
    var slider = logSlider("message_bytes", MESSAGE_LOG10, s0, "bytes", "Message size in bytes (logarithmic)");
    ui.controls.appendChild(field("Link", linkSelect));
    ui.controls.appendChild(field("Collective", kindSelect));
    ui.controls.appendChild(sliderField("Ranks", ranks));
    ui.controls.appendChild(sliderField("Message", slider));
    var out = {
      link: readout(ui.dl, "bytes_per_s", "Link, one way"),
      seconds: readout(ui.dl, "seconds", "Time"),
      latency: readout(ui.dl, "latency_share", "Latency share"),
      algbw: readout(ui.dl, "algorithm_bytes_per_s", "Algorithm bandwidth"),
      busbw: readout(ui.dl, "bus_bytes_per_s", "Bus bandwidth"),
      crossover: readout(ui.dl, "crossover_bytes", "Latency stops dominating at"),
    };

    function refresh() {
      var rec = reg.links[linkSelect.value];
      var parts = kindSelect.value.split("/");
      var c = parts[0], a = parts[1], n = ranks.value();
      var cost = collectiveCost(c, size, n, alpha, rec, a);
      var crossover = latencyCrossoverBytes(c, n, alpha, rec, a);
      host.setAttribute("data-current-message-bytes", String(size));
      host.setAttribute("data-current-n-ranks", String(n));
      host.setAttribute("data-current-link", rec.key);
      host.setAttribute("data-current-collective", c);
      host.setAttribute("data-current-algorithm", a);
      slider.output.textContent = prefixed(size, "B");
      ranks.output.textContent = grouped(n);
      show(out.link, rec.bytes_per_s, sig3(rec.bytes_per_s / 1e9) + " GB/s (" + rec.name + ")");
      show(out.seconds, cost.seconds, grouped(cost.steps) + " steps × " + sig3(alpha * 1e6) + " µs = " +
        duration(cost.steps * alpha) + " of latency, + " + prefixed(cost.bytesPerRank, "B") +
        " on the wire: " + duration(cost.seconds));
      show(out.latency, cost.latencyShare, sig3(100 * cost.latencyShare) + " %");
      show(out.algbw, cost.algorithmBytesPerS, sig3(cost.algorithmBytesPerS / 1e9) + " GB/s");
      show(out.busbw, cost.busBytesPerS, sig3(cost.busBytesPerS / 1e9) + " GB/s (" +
        sig3((100 * cost.busBytesPerS) / rec.bytes_per_s) + " % of the link)");
      show(out.crossover, crossover, prefixed(crossover, "B"));
      var factor = busBandwidthFactor(c, n);
      var perByte = cost.bytesPerRank / size;
      drawBusCurve(ui.svg, {
        flat: (rec.bytes_per_s * factor) / perByte,
        slope: factor / (cost.steps * alpha),
        bus: function (s) { return collectiveCost(c, s, n, alpha, rec, a).busBytesPerS; },
        x: size,
      });
      ui.svgTitle.textContent = "Bus bandwidth of a " + a + " " + c + " on " + n + " ranks over " + rec.name +
        " against message size; at " + prefixed(size, "B") + " it reaches " + sig3(cost.busBytesPerS / 1e9) + " GB/s";
      ui.svg.insertBefore(ui.svgTitle, ui.svg.firstChild);
      ui.note.textContent = "Alpha-beta model with alpha = " + sig3(alpha * 1e6) + " µs per step. The dashed " +
        "lines are its two limits: latency (small messages) and the link (large ones); they cross where " +
        "latency stops dominating. Source: " + rec.source + ".";
    }

    linkSelect.addEventListener("change", refresh);
    kindSelect.addEventListener("change", refresh);
    ranks.input.addEventListener("input", refresh);
    slider.input.addEventListener("input", function () { size = snap3(slider.input.value); refresh(); });
    refresh();
  }

  // -- serving: the latency-throughput frontier of widgets.serving_explorer

  var SLO_LOG10 = SLIDER_LOG10.slo_s; // 1 ms to 10 s
  var POLICY_LABELS = {
    static: "static batching",
    continuous: "continuous batching",
    chunked: "continuous + chunked prefill",
    disaggregated: "disaggregated prefill/decode",
  };

  /** Throughput against TPOT on log-log axes: one polyline per policy in its own colour (the chosen
   *  one bold), the TPOT objective as a dashed line, the operating point as a circle, and a legend
   *  under the axes that names each (the widget's colours: matplotlib's C0 to C3). */
  function drawFrontier(svg, o) {
    clear(svg);
    var legendRows = Math.ceil((SERVING_POLICIES.length + 2) / 2);
    var W = 420, L = 60, R = 20, T = 10, B = 38, LEGEND = 8 + 16 * legendRows, H = 250 + LEGEND;
    var plotBottom = H - LEGEND; // the axes end here; the legend sits below
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var xs = [o.slo * 1e3], ys = [];
    o.curves.forEach(function (c) {
      c.points.forEach(function (p) { xs.push(p.tpotS * 1e3); ys.push(p.tokensPerS); });
    });
    if (!ys.length) ys = [1, 10];
    var lx0 = Math.floor(Math.log10(Math.min.apply(null, xs) / 1.5)), lx1 = Math.ceil(Math.log10(Math.max.apply(null, xs) * 1.5));
    var ly0 = Math.floor(Math.log10(Math.min.apply(null, ys) / 2)), ly1 = Math.ceil(Math.log10(Math.max.apply(null, ys) * 2));
    function px(x) { return L + ((Math.log10(x) - lx0) / (lx1 - lx0)) * (W - L - R); }
    function py(y) { return T + ((ly1 - Math.log10(y)) / (ly1 - ly0)) * (plotBottom - T - B); }
    var g = svgEl("g", { class: "roofline-explorer__axes" });
    for (var e = lx0; e <= lx1; e++) {
      var x = px(Math.pow(10, e));
      g.appendChild(svgEl("line", { x1: x, x2: x, y1: T, y2: plotBottom - B, class: "grid" }));
      g.appendChild(svgEl("text", { x: x, y: plotBottom - B + 14, "text-anchor": "middle" }, tick(Math.pow(10, e))));
    }
    for (var f = ly0; f <= ly1; f++) {
      var y = py(Math.pow(10, f));
      g.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y, y2: y, class: "grid" }));
      if (f === ly0) continue;
      g.appendChild(svgEl("text", { x: L - 4, y: y + 4, "text-anchor": "end" }, tick(Math.pow(10, f))));
    }
    g.appendChild(svgEl("text", { x: (L + W - R) / 2, y: plotBottom - 6, "text-anchor": "middle" }, "TPOT (ms per output token)"));
    g.appendChild(svgEl("text", { x: 12, y: (T + plotBottom - B) / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (T + plotBottom - B) / 2 + ")" }, "output tokens/s per GPU"));
    svg.appendChild(g);
    o.curves.forEach(function (c) {
      if (!c.points.length) return;
      svg.appendChild(svgEl("polyline", {
        class: "roofline-explorer__policy roofline-explorer__policy--" + c.policy + (c.chosen ? " roofline-explorer__policy--chosen" : ""),
        "data-policy": c.policy,
        points: c.points.map(function (p) { return px(p.tpotS * 1e3) + "," + py(p.tokensPerS); }).join(" "),
      }));
    });
    svg.appendChild(svgEl("line", { class: "roofline-explorer__ridge", x1: px(o.slo * 1e3), x2: px(o.slo * 1e3),
      y1: T, y2: plotBottom - B }));
    if (o.best) {
      svg.appendChild(svgEl("circle", { class: "roofline-explorer__point", r: 5,
        cx: px(o.best.tpotS * 1e3), cy: py(o.best.tokensPerS) }));
    }
    drawFrontierLegend(svg, o, 12, plotBottom + 8, (W - 24) / 2);
  }

  /** The frontier's legend, two entries a row: each policy's line (bold if chosen, "no point fits" if
   *  it has none), the TPOT objective and the best point. */
  function drawFrontierLegend(svg, o, x0, y0, colWidth) {
    var chosen = {}, empty = {};
    o.curves.forEach(function (c) { chosen[c.policy] = c.chosen; empty[c.policy] = !c.points.length; });
    var entries = SERVING_POLICIES.map(function (k) {
      return { kind: "line", cls: "roofline-explorer__policy roofline-explorer__policy--" + k +
        (chosen[k] ? " roofline-explorer__policy--chosen" : ""), text: POLICY_LABELS[k] + (empty[k] ? " (none sustainable)" : "") };
    });
    entries.push({ kind: "line", cls: "roofline-explorer__ridge", text: "TPOT objective" });
    entries.push({ kind: "point", cls: "roofline-explorer__point", text: "best under the SLO" });
    var g = svgEl("g", { class: "roofline-explorer__legend" });
    entries.forEach(function (e, i) {
      var x = x0 + (i % 2) * colWidth, y = y0 + Math.floor(i / 2) * 16 + 6;
      if (e.kind === "line") g.appendChild(svgEl("line", { class: e.cls, x1: x, x2: x + 22, y1: y, y2: y }));
      else g.appendChild(svgEl("circle", { class: e.cls, r: 4, cx: x + 11, cy: y }));
      g.appendChild(svgEl("text", { x: x + 26, y: y + 4 }, e.text));
    });
    svg.appendChild(g);
  }

  /** One model (its counts in the markup) on a chosen GPU under a chosen policy and SLO. */
  function servingExplorer(host, ui) {
    var reg = registry();
    var counts = {};
    COUNT_FIELDS.forEach(function (name) { counts[name] = numberAttr(host, "data-" + name.replace(/_/g, "-"), NaN); });
    servingCounts(counts);
    var modelName = host.getAttribute("data-model-name") || "the model";
    counts.model_name = modelName;
    var p0 = numberAttr(host, "data-prompt-len", 1024), o0 = numberAttr(host, "data-output-len", 256);
    var chunk = numberAttr(host, "data-chunk-tokens", 2048);
    var gpu0 = findGpu(host.getAttribute("data-gpu") || "H100");
    var policy0 = host.getAttribute("data-policy") || "chunked";
    steadyState(counts, gpu0, policy0, 1, p0, o0, chunk); // checks the markup before drawing
    var ttft = Number(positive(numberAttr(host, "data-slo-ttft-s", 0.5), "data-slo-ttft-s", "seconds").toPrecision(3));
    var tpot = Number(positive(numberAttr(host, "data-slo-tpot-s", 0.01), "data-slo-tpot-s", "seconds").toPrecision(3));

    var gpuSelect = el("select", { name: "gpu" });
    fillSelect(gpuSelect, Object.keys(reg.gpus).map(function (k) {
      return { value: k, text: reg.gpus[k].name };
    }), gpu0.key);
    var policySelect = el("select", { name: "policy" });
    fillSelect(policySelect, SERVING_POLICIES.map(function (k) {
      return { value: k, text: POLICY_LABELS[k] };
    }), policy0);
    var tpotSlider = logSlider("slo_tpot_s", SLO_LOG10, tpot, "seconds", "TPOT objective in seconds (logarithmic)");
    var ttftSlider = logSlider("slo_ttft_s", SLO_LOG10, ttft, "seconds", "TTFT objective in seconds (logarithmic)");
    ui.controls.appendChild(field("GPU", gpuSelect));
    ui.controls.appendChild(field("Policy", policySelect));
    ui.controls.appendChild(sliderField("TPOT SLO", tpotSlider));
    ui.controls.appendChild(sliderField("TTFT SLO", ttftSlider));
    var out = {
      batch: readout(ui.dl, "batch", "Best batch"),
      tokens: readout(ui.dl, "tokens_per_s", "Output tokens/s per GPU"),
      tpot: readout(ui.dl, "tpot_s", "TPOT"),
      ttft: readout(ui.dl, "ttft_s", "TTFT"),
      bound: readout(ui.dl, "decode_bound", "Decode is"),
      limit: readout(ui.dl, "max_batch", "Largest batch the KV cache holds"),
    };

    function blank(message) {
      Object.keys(out).forEach(function (k) { show(out[k], "", "—"); });
      ui.note.textContent = message;
    }

    /** The TPOT slider over `span` (tpotSpan); an objective outside it moves to the nearer end (the widget's
     *  _fit_tpot_slider). */
    function fitTpot(span) {
      tpotSlider.input.min = String(span[0]);
      tpotSlider.input.max = String(span[1]);
      var lo = Math.pow(10, span[0]), hi = Math.pow(10, span[1]);
      tpot = Math.min(Math.max(tpot, lo), hi);
      tpotSlider.input.value = String(Math.log10(tpot));
    }

    function refresh() {
      var rec = reg.gpus[gpuSelect.value];
      var policy = policySelect.value;
      var capacity = kvCapacity(counts, rec, p0, o0);
      var chosenPoints = capacity.feasible ? steadyFrontier(counts, rec, policy, p0, o0, chunk) : [];
      fitTpot(tpotSpan(chosenPoints, ttft));
      host.setAttribute("data-current-gpu", rec.key);
      host.setAttribute("data-current-policy", policy);
      host.setAttribute("data-current-slo-ttft-s", String(ttft));
      host.setAttribute("data-current-slo-tpot-s", String(tpot));
      tpotSlider.output.textContent = sig3(tpot * 1e3) + " ms";
      ttftSlider.output.textContent = sig3(ttft * 1e3) + " ms";
      var curves = [], best = null;
      if (!capacity.feasible) { // not one request fits beside the weights: say so first (widgets.serving_explorer)
        blank(capacity.fitHeadline);
        drawFrontier(ui.svg, { curves: [], slo: tpot, best: null });
        ui.svgTitle.textContent = modelName + " on " + rec.name + ": DOES NOT FIT";
        ui.svg.insertBefore(ui.svgTitle, ui.svg.firstChild);
        return;
      }
      var limit = capacity.maxRequests;
      SERVING_POLICIES.forEach(function (k) {
        var pts = steadyFrontier(counts, rec, k, p0, o0, chunk).filter(function (p) { return p.sustainable && p.feasible; });
        curves.push({ policy: k, chosen: k === policy, points: pts });
      });
      try {
        best = bestSteadyState(chosenPoints, ttft, tpot);
      } catch (err) {
        best = null;
        blank(POLICY_LABELS[policy] + ": " + err.message + ".");
      }
      if (best) {
        show(out.batch, best.batch, grouped(best.batch));
        show(out.tokens, best.tokensPerS, grouped(Number(best.tokensPerS.toPrecision(3))) + " tokens/s");
        show(out.tpot, best.tpotS, sig3(best.tpotS * 1e3) + " ms");
        show(out.ttft, best.ttftS, sig3(best.ttftS * 1e3) + " ms");
        show(out.bound, best.decodeBound, best.decodeBound + "-bound");
        show(out.limit, limit, grouped(limit) + " requests");
        ui.note.textContent = "Steady state of " + modelName + " in " + servingPrecision(rec) + ", " + p0 +
          " prompt + " + o0 + " output tokens per request, every batch at the roof (no overheads); chunked " +
          "prefill runs " + chunk + " tokens a step. The bold line is your policy, the dashed line the TPOT " +
          "objective, the circle the best point within both objectives. Source: " + rec.source + ".";
      }
      drawFrontier(ui.svg, { curves: curves, slo: tpot, best: best });
      ui.svgTitle.textContent = "Output tokens per second per GPU against TPOT for " + modelName + " on " + rec.name +
        (best ? "; best under the SLO: batch " + best.batch + ", " + sig3(best.tokensPerS) + " tokens/s" : "");
      ui.svg.insertBefore(ui.svgTitle, ui.svg.firstChild);
    }

    gpuSelect.addEventListener("change", refresh);
    policySelect.addEventListener("change", refresh);
    tpotSlider.input.addEventListener("input", function () { tpot = snap3(tpotSlider.input.value); refresh(); });
    ttftSlider.input.addEventListener("input", function () { ttft = snap3(ttftSlider.input.value); refresh(); });
    refresh();
  }

  var PARALLEL_ROOFS = ["compute", "hbm", "tp", "cp", "dp", "ep", "pp"]; // widgets_parallel._ROOF_ORDER
  var PARALLEL_ROOF_LABELS = { compute: "Compute roof (with bubble)", hbm: "HBM roof", tp: "tp comms roof",
    cp: "cp comms roof", dp: "dp comms roof", ep: "ep comms roof", pp: "pp comms roof" };
  var PARALLEL_GPUS = powersOfTwo(PARALLEL_LOG2.n_gpus[0], PARALLEL_LOG2.n_gpus[1]); // 8 to 16,384 GPUs
  var PARALLEL_TP = powersOfTwo(PARALLEL_LOG2.tp[0], PARALLEL_LOG2.tp[1]); // tp 1 to 8
  var PARALLEL_PP = powersOfTwo(PARALLEL_LOG2.pp[0], PARALLEL_LOG2.pp[1]); // pp 1 to 16
  var MEMORY_PARTS = ["weights", "gradients", "optimizer", "activations"];
  var GIB = Math.pow(2, 30); // bytes -> GiB at the edge, as widgets_parallel prints memory

  var CRITICAL_BAR = "critical path"; // widgets_parallel._CRITICAL: compute, bubble and the comms it waits for

  /** widgets_parallel._binding_bar: the critical path, or the overlapping roof longer than it. */
  function bindingBarOf(p) {
    return Object.prototype.hasOwnProperty.call(p.roofs, p.binding) && p.binding !== "compute" ? p.binding : CRITICAL_BAR;
  }

  /** The step's critical path and roofs as horizontal bars (the binding one marked), and memory per GPU as one
   *  stacked bar against the GPU's capacity; `p` null draws the empty frame of a refused layout. */
  function drawParallel(svg, p) {
    clear(svg);
    var W = 420, L = 64, R = 64, T = 8, row = 22, barH = 15;
    var names = p ? [CRITICAL_BAR].concat(PARALLEL_ROOFS.filter(function (n) {
      return Object.prototype.hasOwnProperty.call(p.roofs, n);
    })) : [];
    var memTop = T + Math.max(names.length, 2) * row + 40;
    var H = memTop + barH + 36;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var g = svgEl("g", { class: "roofline-explorer__axes" });
    svg.appendChild(g);
    if (!p) {
      g.appendChild(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "layout refused"));
      return;
    }
    function px(seconds) { return L + (seconds / p.stepSeconds) * (W - L - R); }
    var bindingBar = bindingBarOf(p);
    names.forEach(function (name, i) {
      var y = T + i * row;
      var binds = name === bindingBar;
      var seconds = name === CRITICAL_BAR ? p.criticalSeconds : p.roofs[name];
      g.appendChild(svgEl("text", { x: L - 6, y: y + barH - 3, "text-anchor": "end" }, name === CRITICAL_BAR ? "critical" : name));
      svg.appendChild(svgEl("rect", { x: L, y: y, width: Math.max(0.5, px(seconds) - L), height: barH,
        "data-roof": name, class: "roofline-explorer__bar roofline-explorer__bar--" + (binds ? "binding" : "roof") }));
      svg.appendChild(svgEl("text", { class: "roofline-explorer__bar-value", x: px(seconds) + 4, y: y + barH - 3 },
        duration(seconds)));
    });
    g.appendChild(svgEl("text", { x: (L + W - R) / 2, y: T + Math.max(names.length, 2) * row + 12,
      "text-anchor": "middle" }, "seconds per step: the critical path, then each roof on its own"));
    var top = Math.max(p.memory.total, p.memory.capacity);
    function mx(bytes) { return L + (bytes / top) * (W - L - R); }
    var x = L;
    g.appendChild(svgEl("text", { x: L - 6, y: memTop + barH - 3, "text-anchor": "end" }, "memory"));
    MEMORY_PARTS.forEach(function (part) {
      var w = mx(p.memory[part]) - L;
      svg.appendChild(svgEl("rect", { x: x, y: memTop, width: w, height: barH,
        class: "roofline-explorer__bar roofline-explorer__memory--" + part }));
      x += w;
    });
    svg.appendChild(svgEl("line", { class: "roofline-explorer__limit", x1: mx(p.memory.capacity), x2: mx(p.memory.capacity),
      y1: memTop - 6, y2: memTop + barH + 6 }));
    svg.appendChild(svgEl("text", { class: "roofline-explorer__limit-label", x: mx(p.memory.capacity), y: memTop - 9,
      "text-anchor": "middle" }, sig3(p.memory.capacity / GIB) + " GiB of HBM"));
    g.appendChild(svgEl("text", { x: (L + W - R) / 2, y: memTop + barH + 20, "text-anchor": "middle" },
      "per GPU: weights, gradients, optimizer state, activations"));
  }

  /** widgets_parallel._batch_note: what the explorer did to the global batch, in words ("" when nothing). */
  function parallelBatchNote(planned, asked, dp) {
    if (planned > asked) {
      return "The global batch is raised from " + grouped(asked) + " to " + grouped(planned) + " sequences: each of " +
        "the dp = " + dp + " data-parallel ranks needs at least one.";
    }
    if (planned < asked) {
      return "The global batch of " + grouped(asked) + " sequences is rounded down to " + grouped(planned) +
        ", a multiple of dp = " + dp + ".";
    }
    return "";
  }

  /** widgets_parallel.parallel_explorer: a shipped model, a node kind and GPU count, tp, pp, ZeRO
   *  and recompute; dp is what is left. Every number is parallelPlan's (parallel.plan restated). */
  function parallelExplorer(host, ui) {
    var reg = registry();
    var start = {
      model: host.getAttribute("data-model") || "llama-3-70b",
      node: findNode(host.getAttribute("data-node") || "8x-h100").key,
      n_gpus: numberAttr(host, "data-n-gpus", 64),
      tp: numberAttr(host, "data-tp", 8),
      pp: numberAttr(host, "data-pp", 1),
      zero: numberAttr(host, "data-zero", 1),
      recompute: host.getAttribute("data-recompute") || "selective",
      global_batch: numberAttr(host, "data-global-batch", 64),
      seq_len: numberAttr(host, "data-seq-len", 4096),
    };
    // the widget refuses a bad starting layout (dp = n_gpus // (tp pp), the batch as given): so does the page
    parallelPlan(start.model, parallelCluster(start.node, start.n_gpus), { dp: Math.floor(start.n_gpus / (start.tp * start.pp)),
      tp: start.tp, pp: start.pp, zero: start.zero, global_batch: start.global_batch, seq_len: start.seq_len,
      recompute: start.recompute });

    var modelSelect = el("select", { name: "model" });
    fillSelect(modelSelect, Object.keys(reg.models).map(function (k) { return { value: k, text: k }; }), start.model);
    var nodeSelect = el("select", { name: "node" });
    fillSelect(nodeSelect, Object.keys(reg.nodes).map(function (k) {
      return { value: k, text: reg.nodes[k].name };
    }), start.node);
    var gpus = steppedSlider("n_gpus", choices(start.n_gpus, PARALLEL_GPUS), start.n_gpus, "GPUs (powers of two)");
    var tp = steppedSlider("tp", choices(start.tp, PARALLEL_TP), start.tp, "tensor-parallel GPUs (powers of two)");
    var pp = steppedSlider("pp", choices(start.pp, PARALLEL_PP), start.pp, "pipeline stages (powers of two)");
    var zeroSelect = el("select", { name: "zero" });
    fillSelect(zeroSelect, [0, 1, 2, 3].map(function (z) { return { value: String(z), text: "ZeRO-" + z }; }),
      String(start.zero));
    var recomputeSelect = el("select", { name: "recompute" });
    fillSelect(recomputeSelect, ACTIVATION_RECOMPUTE.map(function (k) { return { value: k, text: k }; }), start.recompute);
    ui.controls.appendChild(field("Model", modelSelect));
    ui.controls.appendChild(field("Node", nodeSelect));
    ui.controls.appendChild(sliderField("GPUs", gpus));
    ui.controls.appendChild(sliderField("tp", tp));
    ui.controls.appendChild(sliderField("pp", pp));
    ui.controls.appendChild(field("ZeRO", zeroSelect));
    ui.controls.appendChild(field("Recompute", recomputeSelect));
    var out = {
      dp: readout(ui.dl, "dp", "dp (GPUs / (tp x pp))"),
      feasible: readout(ui.dl, "feasible", "Can it run"),
      binding: readout(ui.dl, "binding", "Binding roof"),
      step_seconds: readout(ui.dl, "step_seconds", "Step, at least"),
      critical_seconds: readout(ui.dl, "critical_seconds", "Critical path (compute + the comms it waits for)"),
      serial_seconds: readout(ui.dl, "serial_seconds", "Step, nothing overlapped"),
      mfu: readout(ui.dl, "mfu", "MFU at most"),
    };
    PARALLEL_ROOFS.forEach(function (name) {
      out["roof_" + name] = readout(ui.dl, "roof_" + name, PARALLEL_ROOF_LABELS[name]);
    });
    MEMORY_PARTS.forEach(function (part) {
      out[part] = readout(ui.dl, part, { weights: "Weights per GPU", gradients: "Gradients per GPU",
        optimizer: "Optimizer state per GPU", activations: "Activations per GPU" }[part]);
    });
    out.memory_total = readout(ui.dl, "memory_total", "Memory per GPU");
    out.fits = readout(ui.dl, "fits", "Fits in HBM");

    function refresh() {
      var v = {
        model: modelSelect.value,
        node: nodeSelect.value,
        n_gpus: gpus.value(),
        tp: tp.value(),
        pp: pp.value(),
        zero: Number(zeroSelect.value),
        recompute: recomputeSelect.value,
        global_batch: start.global_batch,
        seq_len: start.seq_len,
      };
      ["model", "node", "n_gpus", "tp", "pp", "zero", "recompute"].forEach(function (k) {
        host.setAttribute("data-current-" + k.replace(/_/g, "-"), String(v[k]));
      });
      gpus.output.textContent = grouped(v.n_gpus);
      tp.output.textContent = String(v.tp);
      pp.output.textContent = String(v.pp);
      var rec = reg.models[v.model];
      var p;
      try {
        p = parallelExplorerPlan(v);
      } catch (err) {
        Object.keys(out).forEach(function (k) { show(out[k], "", "—"); });
        show(out.binding, "refused", "layout refused");
        host.removeAttribute("data-current-dp");
        host.removeAttribute("data-current-global-batch");
        ui.note.className = "roofline-explorer__note roofline-explorer__note--refused";
        ui.note.textContent = err.message;
        drawParallel(ui.svg, null);
        ui.svgTitle.textContent = rec.name + " on " + v.n_gpus + " GPUs: layout refused";
        ui.svg.insertBefore(ui.svgTitle, ui.svg.firstChild);
        return;
      }
      host.setAttribute("data-current-dp", String(p.layout.dp));
      host.setAttribute("data-current-global-batch", String(p.tokensPerStep / v.seq_len));
      show(out.dp, p.layout.dp, grouped(p.layout.dp));
      show(out.feasible, String(p.feasible), p.fitHeadline);
      show(out.binding, p.binding, p.binding + " binds");
      show(out.step_seconds, p.stepSeconds, duration(p.stepSeconds));
      show(out.critical_seconds, p.criticalSeconds, duration(p.criticalSeconds));
      show(out.serial_seconds, p.serialSeconds, duration(p.serialSeconds));
      show(out.mfu, p.mfu, sig3(100 * p.mfu) + " %");
      PARALLEL_ROOFS.forEach(function (name) {
        var has = Object.prototype.hasOwnProperty.call(p.roofs, name);
        show(out["roof_" + name], has ? p.roofs[name] : "", has ? duration(p.roofs[name]) : "— (no traffic)");
      });
      MEMORY_PARTS.concat(["total"]).forEach(function (part) {
        show(out[part === "total" ? "memory_total" : part], p.memory[part], sig3(p.memory[part] / GIB) + " GiB");
      });
      show(out.fits, String(p.fits), p.fits ? "fits in " + sig3(p.memory.capacity / GIB) + " GiB"
        : "does not fit in " + sig3(p.memory.capacity / GIB) + " GiB");
      var lay = "dp=" + p.layout.dp + " tp=" + p.layout.tp + " pp=" + p.layout.pp + " ZeRO-" + p.layout.zero;
      var planned = Math.round(p.tokensPerStep / v.seq_len);
      var batchNote = parallelBatchNote(planned, v.global_batch, p.layout.dp);
      ui.note.className = "roofline-explorer__note" + (p.feasible ? "" : " roofline-explorer__note--refused");
      ui.note.textContent = (p.feasible ? "" : p.fitHeadline + " ") + (batchNote ? batchNote + " " : "") +
        p.model + " on " + p.cluster + " (" + lay + "), " + grouped(p.tokensPerStep / v.seq_len) +
        " sequences of " + grouped(v.seq_len) + " tokens a step in " + p.microBatches + " micro-batch(es) per " +
        "data-parallel rank, " + v.recompute + " recompute, mixed-precision Adam at the bf16 dense peak. Each bar is " +
        "one roof on its own; the first is the critical path, the compute with the communication it " + p.assumption.replace(/^assumes /, "assumes: ") +
        ". The step is at least the longer of the critical path and the overlapping roofs (" + p.binding + " binds) and " +
        "at most their sum if nothing overlaps; MFU is the model's FLOPs over that bound." +
        " The arithmetic is roofline_lib.workloads.parallel.plan's.";
      drawParallel(ui.svg, p);
      ui.svgTitle.textContent = (p.feasible ? "" : "DOES NOT FIT. ") + "Roofs of one training step of " + p.model + " on " + p.cluster + " (" + lay + "): " +
        p.binding + " binds at " + duration(p.stepSeconds) + "; memory " + sig3(p.memory.total / GIB) + " of " +
        sig3(p.memory.capacity / GIB) + " GiB per GPU";
      ui.svg.insertBefore(ui.svgTitle, ui.svg.firstChild);
    }

    [modelSelect, nodeSelect, zeroSelect, recomputeSelect].forEach(function (s) { s.addEventListener("change", refresh); });
    [gpus, tp, pp].forEach(function (s) { s.input.addEventListener("input", refresh); });
    refresh();
  }

  // -- energy: widgets_energy.energy_explorer's decode energy and cost against the batch, with a power cap

  var ENERGY_WIDTHS = { 2: "bf16 (2 bytes)", 1: "fp8 (1 byte)" }; // widgets_energy.WIDTHS
  var ENERGY_PANELS = [
    { key: "joules", title: "J per output token", free: function (p) { return p.free.joulesPerToken; },
      capped: function (p) { return p.capped.joulesPerToken; } },
    { key: "dollars", title: "$ per million output tokens", free: function (p) { return p.dollarsPerMillion; },
      capped: function (p) { return p.cappedDollarsPerMillion; } },
  ];

  /** widgets_energy._shares: "18% FLOPs, 38% HBM bytes, 44% static". */
  function energyShares(e) {
    return percentLikePython(e.flopJoules / e.joules, 0) + " FLOPs, " + percentLikePython(e.byteJoules / e.joules, 0) +
      " HBM bytes, " + percentLikePython(e.staticJoules / e.joules, 0) + " static";
  }

  /** Two log-log panels against the batch: J per token (left) and $ per million tokens (right), each with no
   *  cap (solid) and under the cap (dashed), the chosen batch ringed, and a legend under them (the widget's
   *  colours: matplotlib's C0 and C1, the ring C3). `o.points` null draws the empty frame of a refusal. */
  function drawEnergy(svg, o) {
    clear(svg);
    var W = 420, H = 268, T = 22, B = 34, LEGEND = 26, GAP = 44, L = 44, R = 8;
    var plotBottom = H - LEGEND;
    var pw = (W - L - GAP - R) / 2;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var g = svgEl("g", { class: "roofline-explorer__axes" });
    svg.appendChild(g);
    var lx0 = -0.5, lx1 = Math.log2(ENERGY_BATCHES[ENERGY_BATCHES.length - 1]) + 0.5;
    ENERGY_PANELS.forEach(function (panel, i) {
      var x0 = L + i * (pw + GAP);
      var shown = (o.points || []).filter(function (p) { return p.feasible && panel.free(p) !== null; });
      var ys = [];
      shown.forEach(function (p) { ys.push(panel.free(p), panel.capped(p)); });
      if (!ys.length) ys = [1, 10];
      var ly0 = Math.floor(Math.log10(Math.min.apply(null, ys) / 1.6));
      var ly1 = Math.ceil(Math.log10(Math.max.apply(null, ys) * 1.6));
      function px(b) { return x0 + ((Math.log2(b) - lx0) / (lx1 - lx0)) * pw; }
      function py(y) { return T + ((ly1 - Math.log10(y)) / (ly1 - ly0)) * (plotBottom - T - B); }
      for (var k = 0; k <= lx1; k++) { // a grid line at every power of two, a label at every third: 1, 8, 64, 512
        var x = px(Math.pow(2, k));
        g.appendChild(svgEl("line", { x1: x, x2: x, y1: T, y2: plotBottom - B, class: "grid" }));
        if (k % 3 === 0) {
          g.appendChild(svgEl("text", { x: x, y: plotBottom - B + 14, "text-anchor": "middle" }, grouped(Math.pow(2, k))));
        }
      }
      for (var f = ly0; f <= ly1; f++) {
        var y = py(Math.pow(10, f));
        g.appendChild(svgEl("line", { x1: x0, x2: x0 + pw, y1: y, y2: y, class: "grid" }));
        g.appendChild(svgEl("text", { x: x0 - 4, y: y + 4, "text-anchor": "end" }, tick(Math.pow(10, f))));
      }
      g.appendChild(svgEl("text", { x: x0 + pw / 2, y: T - 8, "text-anchor": "middle" },
        panel.key === "dollars" && o.noPrice ? "no GPU-hour price on record" : panel.title));
      g.appendChild(svgEl("text", { x: x0 + pw / 2, y: plotBottom - 6, "text-anchor": "middle" }, "batch (sequences)"));
      ["free", "capped"].forEach(function (which) {
        if (!shown.length) return;
        svg.appendChild(svgEl("polyline", {
          class: "roofline-explorer__energy roofline-explorer__energy--" + panel.key + " roofline-explorer__energy--" + which,
          "data-panel": panel.key, "data-line": which,
          points: shown.map(function (p) { return px(p.batch) + "," + py(panel[which](p)); }).join(" "),
        }));
      });
      if (o.chosen && o.chosen.feasible && panel.capped(o.chosen) !== null) {
        svg.appendChild(svgEl("circle", { class: "roofline-explorer__energy-chosen", r: 6, "data-panel": panel.key,
          cx: px(o.chosen.batch), cy: py(panel.capped(o.chosen)) }));
      }
    });
    var legend = svgEl("g", { class: "roofline-explorer__legend" });
    [["line", "roofline-explorer__energy roofline-explorer__energy--legend roofline-explorer__energy--free", "no cap"],
      ["line", "roofline-explorer__energy roofline-explorer__energy--legend roofline-explorer__energy--capped", "under the cap"],
      ["point", "roofline-explorer__energy-chosen", "your batch"]].forEach(function (e, i) {
      var x = 12 + i * 136, y = plotBottom + 12;
      if (e[0] === "line") legend.appendChild(svgEl("line", { class: e[1], x1: x, x2: x + 22, y1: y, y2: y }));
      else legend.appendChild(svgEl("circle", { class: e[1], r: 5, cx: x + 11, cy: y }));
      legend.appendChild(svgEl("text", { x: x + 26, y: y + 4 }, e[2]));
    });
    svg.appendChild(legend);
  }

  /** widgets_energy.energy_explorer: a GPU with power figures, the weights' width, a power cap, a batch and a
   *  context; one model, its counts per byte of width in the markup. Every number is decodeEnergy's and
   *  costPerMillionTokens' (energy.decode_energy and energy_cost.cost_per_million_tokens restated). */
  function energyExplorer(host, ui) {
    var energy = energyRegistry();
    var perByte = {};
    ENERGY_COUNT_FIELDS.forEach(function (name) { perByte[name] = numberAttr(host, "data-" + name.replace(/_/g, "-"), NaN); });
    var modelName = host.getAttribute("data-model-name") || "the model";
    perByte.model_name = modelName;
    var start = {
      gpu: findGpu(host.getAttribute("data-gpu") || "H100").key,
      width: numberAttr(host, "data-bytes-per-param", 2),
      cap: numberAttr(host, "data-cap-watts", 400),
      batch: numberAttr(host, "data-batch", 64),
      context: numberAttr(host, "data-context-len", 2048),
    };
    if (!(start.cap >= ENERGY_CAP_WATTS[0] && start.cap <= ENERGY_CAP_WATTS[1])) { // widgets_energy's own check
      throw new Error("cap_watts must be between " + ENERGY_CAP_WATTS[0] + " and " + ENERGY_CAP_WATTS[1] +
        " watts (the slider's span), got " + start.cap);
    }
    // the widget refuses a bad start (an unknown GPU, a width the chip lacks, a cap at its static power): so does the page
    energyPoint(perByte, start.gpu, start.width, start.batch, start.context, start.cap);

    var gpuSelect = el("select", { name: "gpu" });
    fillSelect(gpuSelect, Object.keys(energy.gpus).map(function (k) {
      return { value: k, text: registry().gpus[k].name };
    }), start.gpu);
    var widthSelect = el("select", { name: "bytes_per_param" });
    fillSelect(widthSelect, [2, 1].map(function (b) { return { value: String(b), text: ENERGY_WIDTHS[b] }; }),
      String(start.width));
    var cap = el("input", { type: "range", name: "cap_watts", min: String(ENERGY_CAP_WATTS[0]),
      max: String(ENERGY_CAP_WATTS[1]), step: String(ENERGY_CAP_WATTS[2]), value: String(start.cap),
      "aria-label": "Power cap in watts" });
    var capValue = el("output", { class: "roofline-explorer__slider-value" });
    var batch = steppedSlider("batch", choices(start.batch, ENERGY_BATCHES), start.batch, "Decode batch, sequences (powers of two)");
    var context = steppedSlider("context_len", choices(start.context, ENERGY_CONTEXTS), start.context,
      "Context, keys each sequence attends to (powers of two)");
    ui.controls.appendChild(field("GPU", gpuSelect));
    ui.controls.appendChild(field("Weights", widthSelect));
    ui.controls.appendChild(field("Power cap", el("span", {}, [cap, capValue])));
    ui.controls.appendChild(sliderField("Batch", batch));
    ui.controls.appendChild(sliderField("Context", context));
    var out = {
      joules: readout(ui.dl, "joules_per_token", "Energy per token"),
      parts: readout(ui.dl, "parts", "Of it"),
      watts: readout(ui.dl, "average_watts", "Power drawn"),
      seconds: readout(ui.dl, "step_seconds", "Decode step"),
      cappedJoules: readout(ui.dl, "capped_joules_per_token", "Energy under the cap"),
      cappedSeconds: readout(ui.dl, "capped_step_seconds", "Step under the cap"),
      dollars: readout(ui.dl, "dollars_per_million", "Cost per million tokens"),
      cappedDollars: readout(ui.dl, "capped_dollars_per_million", "Cost under the cap"),
    };

    function refresh() {
      var v = { gpu: gpuSelect.value, width: Number(widthSelect.value), cap: Number(cap.value), batch: batch.value(),
        context: context.value() };
      host.setAttribute("data-current-gpu", v.gpu);
      host.setAttribute("data-current-bytes-per-param", String(v.width));
      host.setAttribute("data-current-cap-watts", String(v.cap));
      host.setAttribute("data-current-batch", String(v.batch));
      host.setAttribute("data-current-context-len", String(v.context));
      capValue.textContent = v.cap + " W";
      batch.output.textContent = grouped(v.batch);
      context.output.textContent = grouped(v.context);
      var rec = registry().gpus[v.gpu];
      var points, chosen;
      try {
        points = ENERGY_BATCHES.map(function (b) { return energyPoint(perByte, rec, v.width, b, v.context, v.cap); });
        chosen = energyPoint(perByte, rec, v.width, v.batch, v.context, v.cap);
      } catch (err) { // the library's refusal, word for word, where the numbers go
        Object.keys(out).forEach(function (k) { show(out[k], "", "—"); });
        show(out.joules, "refused", "refused");
        ui.note.className = "roofline-explorer__note roofline-explorer__note--refused";
        ui.note.textContent = err.message;
        drawEnergy(ui.svg, { points: null, chosen: null, noPrice: false });
        ui.svgTitle.textContent = modelName + " on " + rec.name + ": refused";
        ui.svg.insertBefore(ui.svgTitle, ui.svg.firstChild);
        return;
      }
      var price = Object.prototype.hasOwnProperty.call(energy.prices, rec.key) ? energy.prices[rec.key] : null;
      var e = chosen.free, c = chosen.capped;
      show(out.joules, e.joulesPerToken, energyText(e.joulesPerToken));
      show(out.parts, "", energyShares(e));
      show(out.watts, e.averageWatts, powerText(e.averageWatts));
      show(out.seconds, e.seconds, duration(e.seconds));
      show(out.cappedJoules, c.joulesPerToken, energyText(c.joulesPerToken) + (chosen.capBinds ? "" : " (the cap does not bind)"));
      show(out.cappedSeconds, c.seconds, duration(c.seconds));
      if (price) {
        show(out.dollars, chosen.dollarsPerMillion, "$" + generalLikePython(chosen.dollarsPerMillion, 3));
        show(out.cappedDollars, chosen.cappedDollarsPerMillion, "$" + generalLikePython(chosen.cappedDollarsPerMillion, 3));
      } else {
        show(out.dollars, "", "no price on record");
        show(out.cappedDollars, "", "—");
      }
      ui.note.className = "roofline-explorer__note" + (chosen.feasible ? "" : " roofline-explorer__note--refused");
      var power = powerSpec(rec);
      var eFlop = joulesPerFlopAtTdp(power.tdp_watts, power.idle_watts, peakFlopsPerS(rec, WIDTH_PRECISION[v.width]),
        rec.hbm_bytes_per_s, power.joules_per_hbm_byte);
      ui.note.textContent = (chosen.feasible ? "" : e.fitHeadline + ". ") + "One decode step of " + modelName + " on the " +
        rec.name + ": the batch reads the weights once per step and each sequence its own " + grouped(v.context) +
        " keys of KV cache; FLOPs at " + sig3(eFlop * 1e12) + " pJ each (a GEMM at the ridge drawing the TDP), HBM " +
        "bytes at " + sig3(power.joules_per_hbm_byte * 1e12) + " pJ each, and " + powerText(power.idle_watts) +
        " of static power for the step's time, at the roof (no overheads). " + (chosen.capBinds
          ? "A " + v.cap + " W cap binds: the step slows until it draws the cap, and pays static power for longer. "
          : "A " + v.cap + " W cap does not bind at this batch. ") +
        (price ? "Cost at $" + generalLikePython(price.dollars_per_hour, 3) + " per GPU-hour (" +
          price.source.split(" (")[0] + ", " + price.date + ")." : "No GPU-hour price is on record for the " + rec.name + ".");
      drawEnergy(ui.svg, { points: points, chosen: chosen, noPrice: !price });
      ui.svgTitle.textContent = "Energy per output token and cost per million tokens against the batch for " + modelName +
        " on the " + rec.name + " at " + grouped(v.context) + " keys; at batch " + v.batch + ": " + energyText(e.joulesPerToken) +
        " per token" + (price ? ", $" + generalLikePython(chosen.dollarsPerMillion, 3) + " per million" : "");
      ui.svg.insertBefore(ui.svgTitle, ui.svg.firstChild);
    }

    [gpuSelect, widthSelect].forEach(function (sel) { sel.addEventListener("change", refresh); });
    [cap, batch.input, context.input].forEach(function (input) { input.addEventListener("input", refresh); });
    refresh();
  }

  function mount(host) {
    if (host.getAttribute("data-roofline-mounted")) return; // draw each explorer once
    host.setAttribute("data-roofline-mounted", "true");
    var mode = host.getAttribute("data-mode") || "intensity";
    if (!Object.prototype.hasOwnProperty.call(MODES, mode)) {
      throw new Error("unknown data-mode " + JSON.stringify(mode) + "; known modes: " +
        Object.keys(MODES).join(", "));
    }
    var id = "roofline-explorer-" + ++counter;
    host.setAttribute("role", "group");
    host.setAttribute("aria-labelledby", id + "-title");
    host.appendChild(el("p", { class: "roofline-explorer__title", id: id + "-title",
      text: MODES[mode] + " (runs in this page, no kernel needed)" }));
    var ui = frame(host);
    if (mode === "flops") flopsExplorer(host, ui);
    else if (mode === "comms") commsExplorer(host, ui);
    else if (mode === "serving") servingExplorer(host, ui);
    else if (mode === "parallel") parallelExplorer(host, ui);
    else if (mode === "energy") energyExplorer(host, ui);
    else gpuExplorer(host, ui, mode);
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
