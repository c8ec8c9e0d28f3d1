/* The strategy planner (docs/tools/strategy-planner.md): for a transformer, a device count
 * and the memory of a device, every layout of the devices with its state and wire bytes per
 * device and the formula behind each, or, greyed, what to change for it to split the
 * model; a field no layout could use says beside it what to change. Plain JavaScript, no
 * dependencies, nothing fetched.
 *
 * The arithmetic is docs_build/planner.py's, operation for operation, so that the page
 * shows the same numbers to the byte; the constants (optimizers, tiles, formulas, the
 * compiled plans, the presets' sizes) come from Python, written into the page by the build
 * as JSON (#planner-data). tests/browser/test_planner.py drives the form through a grid of
 * inputs and compares every figure, greyed row and message with Python's.
 */
(function () {
  "use strict";

  var DATA;
  // The model's whole-number fields (planner.WHOLE) and its yes/no options.
  var SIZES = ["vocab", "d_model", "heads", "kv_heads", "mlp", "layers", "seq", "batch",
    "microbatches"];
  var OPTIONS = ["gated", "tied"];
  var MAX_DEVICES = 65536;

  function CostModelError(message) {
    this.message = message;
  }

  // ------------------------------------------------------------ Python's arithmetic

  // An integer Python computes exactly; a double holds it exactly only below 2^53.
  function exact(n) {
    if (!Number.isSafeInteger(n)) {
      throw new CostModelError("these sizes give a count beyond 2^53, which the planner " +
        "cannot compute exactly in a browser: use smaller sizes");
    }
    return n;
  }

  // Python's a // b for non-negative integers (a / b in doubles may round up to the next
  // whole number).
  function idiv(a, b) {
    exact(a);
    var q = Math.floor(a / b);
    if (q * b > a) q -= 1;
    else if ((q + 1) * b <= a) q += 1;
    return q;
  }

  function roundUp(n, k) {
    return idiv(n + k - 1, k) * k;
  }

  // Python 3.12's sum() of floats: Neumaier's compensated summation.
  function pysum(xs) {
    if (!xs.length) return 0;
    var total = xs[0], c = 0;
    for (var i = 1; i < xs.length; i++) {
      var x = xs[i], t = total + x;
      if (Math.abs(total) >= Math.abs(x)) c += (total - t) + x;
      else c += (x - t) + total;
      total = t;
    }
    if (c && isFinite(c)) total += c;
    return total;
  }

  // Python's repr of what a reader typed, for the messages planner.py gives.
  function repr(text) {
    if (/^-?\d+$/.test(text)) return String(Number(text));
    if (text.trim() !== "" && isFinite(Number(text))) return String(Number(text));
    return pystr(text);
  }

  // Python's repr of a string (the quotes it picks; backslashes doubled).
  function pystr(text) {
    var body = text.replace(/\\/g, "\\\\");
    if (text.indexOf("'") >= 0 && text.indexOf('"') < 0) return '"' + body + '"';
    return "'" + body.replace(/'/g, "\\'") + "'";
  }

  // ------------------------------------------------------------ the cost model

  function ring(kind, n, full) {
    if (n === 1) return 0;
    if (kind === "all-reduce") return 2 * (n - 1) * full / n;
    return (n - 1) * full / n; // all-gather, reduce-scatter
  }

  function wholeNumber(text) {
    return /^\s*\d+\s*$/.test(text) && Number(text) >= 1;
  }

  // planner.input_problems: each field no layout could use, with what to change; and,
  // where there is none, the model (planner.Model's counts).
  function makeModel(raw) {
    var problems = {}, model = {};
    SIZES.forEach(function (name) {
      var text = raw[name];
      if (!wholeNumber(text)) {
        problems[name] = name + " must be a positive integer, not " + repr(text);
      } else {
        model[name] = Number(text);
      }
    });
    var whole = function (names) {
      return names.every(function (n) { return model[n] !== undefined; });
    };
    if (whole(["d_model", "heads"]) && model.d_model % model.heads) {
      problems.heads = "d_model " + model.d_model + " does not split into " + model.heads +
        " heads: make d_model a multiple of heads";
    }
    if (whole(["heads", "kv_heads"]) && model.heads % model.kv_heads) {
      problems.kv_heads = model.kv_heads + " key/value heads do not serve " + model.heads +
        " query heads equally: make kv_heads divide heads";
    }
    // planner.remat_problem: the form's names give False, True or a policy's name
    var form = DATA.remat.form;
    if (!Object.prototype.hasOwnProperty.call(form, raw.remat)) {
      problems.remat = "remat must be one of none (False), full (True), " +
        DATA.remat.policies.slice(1).join(", ") + ", not " + pystr(raw.remat);
    }
    if (Object.keys(problems).length) return { problems: problems };
    SIZES.forEach(function (name) { exact(model[name]); });
    model.optimizer = raw.optimizer;
    model.param_bytes = Number(raw.param_bytes);
    model.remat = DATA.remat.form[raw.remat];
    model.gated = raw.gated;
    model.tied = raw.tied;
    model.kv = model.kv_heads;
    var d = model.d_model, k = idiv(d, model.heads);
    model.headDim = k;
    var mlp = DATA.mlps[model.gated ? "gated" : "plain"];
    model.matrices = mlp.matrices;
    model.inputSums = mlp.input_sums;
    // planner.Model.layer_matrices, .embeddings, .params
    var attention = exact(2 * d * d + exact(2 * d * model.kv * k));
    model.layerMatrices = exact(attention + exact((model.gated ? 3 : 2) * d * model.mlp));
    model.embeddings = exact((model.tied ? 1 : 2) * model.vocab * d);
    model.params = exact(model.layers * (model.layerMatrices + 2 * d) + model.embeddings + d);
    return { model: model };
  }

  function layout(name, data, fsdp, tensor, stages) {
    return { name: name, data: data, fsdp: fsdp, tensor: tensor, stages: stages };
  }

  // planner.divisors: smallest first.
  function divisors(n) {
    var small = [], large = [];
    for (var k = 1; k * k <= n; k++) {
      if (n % k === 0) {
        small.push(k);
        if (k * k !== n) large.unshift(n / k);
      }
    }
    return small.concat(large);
  }

  // planner.name_of and planner.pipeline_name
  function nameOf(data, fsdp, tensor) {
    var split = [["data", data], ["FSDP", fsdp], ["tensor", tensor]].filter(function (p) {
      return p[1] > 1;
    }).map(function (p) { return p[0]; });
    if (!split.length) return "one device";
    if (split.length === 1) return split[0];
    if (split.join() === "data,tensor") return "2-D";
    return split.join(" x ");
  }

  function pipelineName(fsdp, tensor) {
    return ["pipeline"].concat([["FSDP", fsdp], ["tensor", tensor]].filter(function (p) {
      return p[1] > 1;
    }).map(function (p) { return p[0]; })).join(" x ");
  }

  // planner.layouts: every factorisation of the devices over (data, fsdp, tensor), then
  // every pipeline (stages x fsdp x tensor), in Python's order.
  function layouts(devices) {
    var rows = [
      layout("data", devices, 1, 1, 1),
      layout("FSDP", 1, devices, 1, 1),
      layout("tensor", 1, 1, devices, 1)
    ];
    var splits = divisors(devices).filter(function (k) { return k > 1 && k < devices; });
    splits.forEach(function (t) { rows.push(layout("2-D", devices / t, 1, t, 1)); });
    splits.forEach(function (f) { rows.push(layout("data x FSDP", devices / f, f, 1, 1)); });
    splits.forEach(function (t) { rows.push(layout("FSDP x tensor", 1, devices / t, t, 1)); });
    splits.forEach(function (t) {
      splits.forEach(function (f) {
        if (devices % (t * f) === 0 && devices / (t * f) > 1) {
          var a = devices / (t * f);
          rows.push(layout(nameOf(a, f, t), a, f, t, 1));
        }
      });
    });
    var stages = devices > 1 ? splits.concat([devices]) : [];
    stages.reverse().forEach(function (s) {
      var rest = devices / s;
      var inner = rest > 1 ? [[rest, 1], [1, rest]] : [[1, 1]];
      divisors(rest).forEach(function (t) {
        if (t > 1 && t < rest) inner.push([rest / t, t]);
      });
      inner.forEach(function (p) {
        rows.push(layout(pipelineName(p[0], p[1]), 1, p[0], p[1], s));
      });
    });
    return rows;
  }

  // planner.no_layout: why no layout of the devices can split the model, with the device
  // counts nearest below and above (within DATA.near) that some layout can use; or null.
  function noLayout(model, devices) {
    function usable(n) {
      return layouts(n).some(function (l) { return !reasons(model, l).length; });
    }
    var found = layouts(devices);
    if (found.some(function (l) { return !reasons(model, l).length; })) return null;
    var below = null, above = null, n;
    for (n = devices - 1; n > Math.max(devices - DATA.near, 0) && below === null; n--) {
      if (usable(n)) below = n;
    }
    for (n = devices + 1; n <= devices + DATA.near && above === null; n++) {
      if (usable(n)) above = n;
    }
    var near = [below, above].filter(function (x) { return x !== null; }).join(" or ");
    return "None of the " + found.length + " layouts of " + devices + " devices can " +
      "split this model (each row says why): " +
      (near ? "use " + near + " devices, or " : "") + "change the sizes the rows name";
  }

  // planner.reasons: why a layout cannot place the model, each with what to change.
  function reasons(model, l) {
    var found = [];
    if (l.stages > 1) {
      if (model.layers % l.stages) {
        found.push(model.layers + " layers do not split into " + l.stages +
          " stages: make layers a multiple of " + l.stages);
      }
      if (model.batch % model.microbatches) {
        found.push("a batch of " + model.batch + " does not cut into " + model.microbatches +
          " microbatches: use a number of microbatches that divides it");
      } else if (idiv(model.batch, model.microbatches) % l.fsdp) {
        found.push("a microbatch of " + idiv(model.batch, model.microbatches) +
          " sequences does not split over fsdp = " + l.fsdp + " devices: use a batch " +
          "that is a multiple of microbatches x fsdp = " + model.microbatches * l.fsdp);
      }
    } else {
      var rows = l.data * l.fsdp;
      if (model.batch % rows) {
        found.push("a batch of " + model.batch + " does not split over data x fsdp = " +
          rows + " devices: use a multiple of " + rows);
      }
    }
    if (model.d_model % l.fsdp) {
      found.push("d_model " + model.d_model + " does not split " + l.fsdp +
        " ways (fsdp): use a multiple of " + l.fsdp);
    }
    [["vocab", "vocab"], ["heads", "heads"], ["kv", "kv_heads"], ["mlp", "mlp"]].forEach(
      function (pair) {
        if (model[pair[0]] % l.tensor) {
          found.push(pair[1] + " " + model[pair[0]] + " does not split " + l.tensor +
            " ways (tensor): use a multiple of " + l.tensor);
        }
      });
    return found;
  }

  function check(model, l) {
    var found = reasons(model, l);
    if (found.length) throw new CostModelError(found.join("; "));
  }

  // Each parameter array's block on one device (planner.blocks).
  function blocks(model, l) {
    var d = model.d_model, v = model.vocab, h = model.heads, m = model.mlp;
    var L = model.layers, f = l.fsdp, t = l.tensor, k = model.headDim, g = model.kv;
    var found = [
      [v / t, d / f], [L, d / f], [L, d / f, h / t, k], [L, 2, d / f, g / t, k],
      [L, h / t, k, d / f], [L, d / f]
    ];
    if (model.gated) found.push([L, d / f, m / t]);
    found.push([L, d / f, m / t], [L, m / t, d / f], [d / f]);
    if (!model.tied) found.push([d / f, v / t]);
    return found;
  }

  // Elements a TPU stores for an array of `shape` (planner.tiled).
  function tiled(shape) {
    var tpu = DATA.tpu;
    if (!shape.length) return 1;
    if (shape.length === 1) return roundUp(shape[0], tpu.minor);
    function second(n) {
      if (n === 1 || n === 2 || n === 4) return n;
      return n === 3 ? 4 : roundUp(n, tpu.second);
    }
    var total = exact(shape.reduce(function (a, b) { return a * b; }, 1));
    var least = Infinity;
    for (var i = 0; i < shape.length; i++) {
      for (var j = 0; j < shape.length; j++) {
        if (i === j) continue;
        var n = exact(idiv(total, shape[i] * shape[j]) * second(shape[i]) *
          roundUp(shape[j], tpu.minor));
        if (n < least) least = n;
      }
    }
    return least;
  }

  function stateBytes(model, l, backend) {
    check(model, l);
    var opt = DATA.optimizers[model.optimizer];
    var slots = opt[0], scalars = opt[1];
    var d = model.d_model, copies = model.param_bytes * (1 + slots);
    if (backend === "tpu" && l.stages === 1) {
      var rows = idiv(model.batch, l.data * l.fsdp);
      var held = 0;
      blocks(model, l).forEach(function (b) { held = exact(held + tiled(b)); });
      var tokens = tiled([rows, model.seq + 1]);
      return exact(held * copies + DATA.tpu.scalar * scalars + DATA.int32 * tokens);
    }
    var f = l.fsdp, t = l.tensor;
    if (l.stages > 1) { // the last stage: its blocks, the final norm and the head
      var per = idiv(model.layers, l.stages);
      var heldStage = idiv(exact(per * model.layerMatrices + exact(model.vocab * d)), f * t) +
        idiv((2 * per + 1) * d, f);
      return exact(heldStage * copies + DATA.int32 * scalars +
        DATA.int32 * idiv(model.batch, f) * (model.seq + 1));
    }
    var splitBoth = exact(model.layers * model.layerMatrices + model.embeddings);
    var heldBoth = idiv(splitBoth, f * t) + idiv((2 * model.layers + 1) * d, f);
    var tokensBoth = idiv(model.batch, l.data * f) * (model.seq + 1);
    return exact(heldBoth * copies + DATA.int32 * scalars + DATA.int32 * tokensBoth);
  }

  function gradientSum(scatters, l, full) {
    var a = l.data, f = l.fsdp;
    if (scatters && f > 1) return ring("reduce-scatter", f, full) + ring("all-reduce", a, full / f);
    return ring("all-reduce", a * f, full);
  }

  // Bytes one device sends per step, by term (planner.wire_terms), in planner's order.
  function wireTerms(model, l, plan) {
    check(model, l);
    return wireTermsOf(model, l, plan);
  }

  // planner.stage_model: a pipeline's last stage, its layers with a head of its own.
  function stageModel(model, l) {
    var per = idiv(model.layers, l.stages);
    return Object.assign({}, model, { layers: per, tied: false, microbatches: 1 });
  }

  // planner._wire_terms: without the check (compute_bound_batch's lines).
  function wireTermsOf(model, l, plan) {
    if (l.stages > 1) {
      var m = model.microbatches, s = l.stages, fs = l.fsdp;
      var micro = model.batch / (m * fs) * model.seq * model.d_model * plan.activations;
      var terms = [["pipeline wire", 2 * (m + s - 1) * micro]];
      if (fs * l.tensor > 1) {
        meshTerms(stageModel(model, l), 1, fs, l.tensor, plan, false).forEach(function (x) {
          terms.push(["stage " + x[0], x[1]]);
        });
      }
      return terms;
    }
    return meshTerms(model, l.data, l.fsdp, l.tensor, plan, true);
  }

  // planner._mesh_terms: a (data, fsdp, tensor) mesh's terms; without `embedding`, a
  // pipeline's last stage.
  function meshTerms(model, a, f, t, plan, embedding) {
    var F32 = DATA.f32;
    var d = model.d_model, v = model.vocab, layers = model.layers;
    var l = layout("", a, f, t, 1);
    var lookup = embedding ? 1 : 0;
    var remat = model.remat === false ? 0 : 1; // every policy gathers the weights again
    // the recomputed output projection's sum, unless the policy keeps the projection
    var resum = model.remat === false ||
      DATA.remat.keeps_output_projection.indexOf(model.remat) >= 0 ? 0 : 1;
    var matrices = model.layerMatrices / t;
    var head = model.tied ? 0 : 1; // a tied head is the gathered embedding itself
    // each matrix's gradient on one device before the sum (planner._matrix_sizes)
    var size = { "q or out": exact(d * d) / t, kv: exact(2 * d * model.kv * model.headDim) / t,
      mlp: exact(d * model.mlp) / t, head: exact(d * v) / t };
    // the backward pass's gathers (with remat): the regathered matrices in float32
    var regathered = plan.gather * matrices + pysum(plan.regather.map(function (name) {
      return (F32 - plan.gather) * size[name];
    }));
    var headWidth = plan.head_gather === null ? plan.gather : plan.head_gather;
    // planner.Plan.all_reduced_fsdp: the weights all-reduced whole over fsdp of that size
    var gather = plan.all_reduced_fsdp.indexOf(f) >= 0 ? "all-reduce" : "all-gather";
    var gathers = layers * ring(gather, f, plan.gather * matrices + F32 * 2 * d) +
      remat * layers * ring(gather, f, regathered + F32 * 2 * d) +
      ring(gather, f, exact(lookup * F32 * v * d) / t +
        exact(head * headWidth * d * v) / t + F32 * d);
    // planner.Plan.scattered: the plan's list, or every matrix the model has
    var scattered = (plan.scatter === null ? model.matrices : plan.scatter).slice();
    var summed = 0;
    model.matrices.forEach(function (name) {
      if (name === "head" && model.tied && !plan.head_apart) return; // with the embedding's
      var at = scattered.indexOf(name);
      if (at >= 0) scattered.splice(at, 1);
      var times = name === "head" ? 1 : layers;
      summed += times * gradientSum(at >= 0, l, plan.gradients * size[name]);
    });
    var gradients = summed + layers * ring("all-reduce", a * f, F32 * 2 * d) +
      lookup * gradientSum(plan.embedding_scatter, l, exact(F32 * v * d) / t) +
      ring("all-reduce", a * f, F32 * d);
    var tokens = model.batch / (a * f) * model.seq;
    var block = tokens * d;
    function sums(width) { return ring("all-reduce", t, width * block); }
    var inputSums = plan.input_sums === null ? model.inputSums : plan.input_sums;
    var perBlock = 1 + inputSums + resum; // planner.input_sums
    var activations = layers * (sums(plan.block_sum) + perBlock * sums(plan.activations)) +
      sums(F32) + sums(plan.activations) + 3 * ring("all-reduce", t, F32 * tokens);
    return [
      ["gathers", gathers],
      ["gradients", gradients],
      ["activations", activations],
      ["loss", ring("all-reduce", a * f * t, F32)]
    ];
  }

  // ------------------------------------------------ temporaries and time (transformer_cost)

  // Python's int / int: the exact quotient, rounded once to the nearest double.
  function divide(a, b) {
    a = BigInt(a); b = BigInt(b);
    var safe = BigInt(Number.MAX_SAFE_INTEGER);
    if (a <= safe && b <= safe) return Number(a) / Number(b);
    var bits = a.toString(2).length - b.toString(2).length;
    var shift = bits < 66 ? 66 - bits : 0;
    var num = a << BigInt(shift), q = num / b;
    if (num % b) q |= 1n; // sticky: the quotient is not exact
    return Number(q) / Math.pow(2, shift);
  }

  // transformer_cost.policy_residuals' terms beyond the layer's input, summed: what a
  // policy keeps of each layer on one device (BigInt).
  function policyExtra(model, l, policy) {
    var F32 = BigInt(DATA.f32), BF16 = BigInt(DATA.transformer.bf16);
    var b = BigInt(idiv(model.batch, l.data * l.fsdp)), S = BigInt(model.seq);
    var T = b * S, t = BigInt(l.tensor), d = BigInt(model.d_model);
    var k = BigInt(model.headDim), heads = BigInt(model.heads) / t;
    var kv = BigInt(model.kv) / t, mlp = BigInt(model.mlp) / t;
    var every = {
      "q, k, v": BF16 * T * (heads + 2n * kv) * k,
      scores: F32 * b * heads * S * S,
      context: BF16 * T * heads * k,
      out: BF16 * T * d,
      mlp: (model.gated ? 2n : 1n) * BF16 * T * mlp
    };
    return DATA.remat.saves[String(policy)].reduce(function (n, name) {
      return n + every[name];
    }, 0n);
  }

  // transformer_cost.policy_temp_bytes: full remat's temporaries and what the policy
  // keeps beyond each layer's input, for every layer; on the CPU (one memory) "offload"
  // keeps "names"'s on the device.
  function policyTempBytes(model, l, backend) {
    var policy = model.remat;
    if (policy === false) return tempBytes(model, l, backend);
    if (DATA.remat.offloaded.indexOf(policy) >= 0 && backend === "cpu") policy = "names";
    var full = tempBytes(Object.assign({}, model, { remat: true }), l, backend);
    return full + BigInt(model.layers) * policyExtra(model, l, policy);
  }

  // transformer_cost.host_bytes: what "offload" keeps in host memory ("names"'s terms),
  // for every layer; none on the CPU.
  function hostBytes(model, l, backend) {
    if (DATA.remat.offloaded.indexOf(model.remat) < 0 || backend === "cpu") return 0n;
    return BigInt(model.layers) * policyExtra(model, l, "names");
  }

  // transformer_cost.temp_bytes, in exact integers (BigInt), with remat (any policy) or
  // without.
  function tempBytes(model, l, backend) {
    var T_ = DATA.transformer, F32 = BigInt(DATA.f32), BF16 = BigInt(T_.bf16);
    var BOOL = BigInt(T_.bool), INT32 = BigInt(DATA.int32);
    var b = BigInt(idiv(model.batch, l.data * l.fsdp)), S = BigInt(model.seq);
    var T = b * S, t = BigInt(l.tensor), f = BigInt(l.fsdp);
    var d = BigInt(model.d_model), k = BigInt(model.headDim), L = BigInt(model.layers);
    var heads = BigInt(model.heads) / t, kv = BigInt(model.kv) / t, v = BigInt(model.vocab) / t;
    var mlp = BigInt(model.mlp) / t, M = BigInt(model.layerMatrices);
    var scores = b * heads * S * S;
    var layer = {
      stream: 4n * F32 * T * d + 4n * F32 * T + 2n * F32 * d + 2n * BF16 * T * d,
      heads: 2n * BF16 * T * heads * k + 2n * BF16 * T * kv * k,
      scores: (F32 + BF16) * scores + 2n * F32 * b * heads * S,
      mlp: (model.gated ? 6n : 5n) * BF16 * T * mlp
    };
    var weights = BF16 * M / t;
    var intermediates = layer.stream + layer.heads + layer.scores + layer.mlp;
    var finalNorm = 2n * F32 * T * d + 2n * F32 * T + F32 * d + BF16 * T * d;
    var layers = model.remat ? L * F32 * T * d : L * (intermediates + weights);
    var mask = model.remat ? 0n : (BOOL + F32) * scores;
    var kept = layers + mask + finalNorm;
    var recomputed = model.remat ? intermediates : 0n;
    var layerWeights = model.remat ? weights : 0n;
    var logits = BigInt(T_.logits[backend]) * T * v;
    var head = BF16 * d * v;
    if (backend === "gpu") head /= f;
    var grads = F32 * L * M / (f * t), embedding = F32 * v * d;
    var loss = kept + logits + BF16 * d * v;
    var inLayer = kept - finalNorm + grads + embedding + head + 2n * F32 * scores;
    if (model.remat) inLayer += recomputed + layerWeights;
    if (backend !== "gpu") {
      loss += grads + embedding;
    } else {
      inLayer -= embedding;
      if (model.remat) {
        inLayer += (model.gated ? 3n : 2n) * BF16 * T * mlp - layer.mlp;
        inLayer += BOOL * scores;  // the mask's bool (transformer_cost.temp_phases)
      }
    }
    return loss > inLayer ? loss : inLayer;
  }

  // transformer_cost.step_flops (exact integers), with its optimizer check.
  function stepFlops(model) {
    var measured = DATA.transformer.optimizer_flops;
    var B = BigInt(model.batch), S = BigInt(model.seq), d = BigInt(model.d_model);
    var tokens = B * S, M = BigInt(model.layerMatrices), L = BigInt(model.layers);
    var projections = 2n * tokens * M, attention = 4n * B * S * S * d;
    var down = 2n * tokens * d * BigInt(model.mlp);
    // transformer_cost.recomputed_flops: what the policy runs again of a layer
    var policy = model.remat, recompute = projections + attention - down;
    if (policy === false || policy === "dots") recompute = 0n;
    else if (policy === "dots_no_batch") recompute = attention;
    else if (policy === "names" || policy === "offload") {
      recompute = 2n * B * S * S * d + 2n * tokens * d * d +
        (model.gated ? 2n : 1n) * 2n * tokens * d * BigInt(model.mlp);
    }
    var forward = L * (projections + attention) + 2n * tokens * d * BigInt(model.vocab);
    if (!Object.prototype.hasOwnProperty.call(measured, model.optimizer)) {
      throw new CostModelError("the optimizer's FLOPs are measured for [" +
        Object.keys(measured).sort().map(pystr).join(", ") + "], not " +
        pystr(model.optimizer));
    }
    return {
      forward: forward, backward: 2n * forward,
      recompute: L * recompute,
      optimizer: measured[model.optimizer]
    };
  }

  // transformer_cost.device_flops summed as Python sums the dict (forward, backward,
  // recompute, optimizer), with step_flops' whole-step terms.
  function deviceFlops(model, l) {
    var total = stepFlops(model);
    var n = l.data * l.fsdp * l.tensor, f = l.fsdp, t = l.tensor;
    var matrices = BigInt(model.layers) * BigInt(model.layerMatrices) +
      BigInt(model.embeddings);
    var updated = divide(matrices, f * t) +
      divide(BigInt(2 * model.layers + 1) * BigInt(model.d_model), f);
    return {
      total: total,
      flops: pysum([divide(total.forward, n), divide(total.backward, n),
        divide(total.recompute, n), total.optimizer * updated])
    };
  }

  // transformer_cost.pipeline_flops: a pipeline's last stage, per device, stretched by
  // the bubble, and the optimizer's update of its share of the stage.
  function pipelineFlops(model, l) {
    var stage = stageModel(model, l), total = stepFlops(stage);
    var f = l.fsdp, t = l.tensor, m = model.microbatches, s = l.stages;
    var work = divide(total.forward + total.backward + total.recompute, f * t);
    var per = BigInt(stage.layers), d = BigInt(model.d_model);
    var updated = divide(per * BigInt(model.layerMatrices) + BigInt(model.vocab) * d, f * t) +
      divide((2n * per + 1n) * d, f);
    return work * (m + s - 1) / m + total.optimizer * updated;
  }

  // transformer_cost.step_device_flops: what the time bound prices on one device.
  function stepDeviceFlops(model, l) {
    return l.stages > 1 ? pipelineFlops(model, l) : deviceFlops(model, l).flops;
  }

  // transformer_cost.networks: the bytes one device sends over each of the chip's
  // networks, a term on the slow one where its group spans nodes.
  function networkBytes(model, l, chip, plan) {
    var n = l.data * l.fsdp * l.tensor * l.stages, t = l.tensor;
    var perNode = chip.per_node === null ? n : chip.per_node;
    if (n > perNode && perNode % t && t % perNode) {
      throw new CostModelError("tensor " + t + " does not tile nodes of " + perNode +
        " devices: make one divide the other");
    }
    var names = Object.keys(chip.networks);
    var span = { activations: t, gathers: l.fsdp * t, gradients: n, loss: n,
      "pipeline wire": n, "stage gathers": l.fsdp * t, "stage gradients": l.fsdp * t,
      "stage activations": t, "stage loss": l.fsdp * t };
    var sent = {};
    names.forEach(function (k) { sent[k] = 0; });
    wireTermsOf(model, l, plan).forEach(function (term) {
      sent[names[span[term[0]] <= perNode ? 0 : 1]] += term[1];
    });
    return sent;
  }

  function networkSeconds(sent, chip) {
    var seconds = {};
    Object.keys(sent).forEach(function (k) { seconds[k] = sent[k] / chip.networks[k].rate; });
    return seconds;
  }

  // transformer_cost.compute_bound_batch: compute and each network's time as straight
  // lines in the sequences per device (from 1 and 2 sequences); where each network meets
  // the compute, the largest of those (0: compute leads from the start), or Infinity
  // where a network's time grows as fast as the compute or faster.
  function computeBoundBatch(model, l, chip, plan) {
    var rows = l.data * l.fsdp, pipeline = l.stages > 1;
    var micro = pipeline ? model.microbatches : 1; // a pipeline keeps its microbatches
    function line(b) {
      var m = Object.assign({}, model, { batch: b * rows, microbatches: micro });
      return [stepDeviceFlops(m, l) / chip.peak,
        networkSeconds(networkBytes(m, l, chip, plan), chip)];
    }
    var one = line(micro), two = line(2 * micro);
    var c1 = one[0], c2 = two[0], n1 = one[1], n2 = two[1];
    var alpha = (c2 - c1) / micro, c0 = c1 - alpha * micro, threshold = 0;
    var names = Object.keys(n1);
    for (var i = 0; i < names.length; i++) {
      var k = names[i];
      var beta = (n2[k] - n1[k]) / micro, gamma = n1[k] - beta * micro;
      if (beta < alpha) {
        var meet = (gamma - c0) / (alpha - beta);
        if (meet > threshold) threshold = meet; // Python's max keeps the first on a tie
      } else if (beta > alpha || gamma > c0) {
        return Infinity;
      }
    }
    return threshold;
  }

  // transformer_cost.time_bound, mfu_bound and compute_bound_batch on a chip of
  // DATA.chips, or why not.
  function timeOf(model, l, name, plan) {
    var chip = DATA.chips[name];
    if (chip.peak === null) return { why: DATA.coverage.labels["no peak"] };
    var n = l.data * l.fsdp * l.tensor * l.stages, flops, total, sent, threshold;
    try {
      total = stepFlops(model);
      flops = stepDeviceFlops(model, l);
      sent = networkBytes(model, l, chip, plan);
      threshold = computeBoundBatch(model, l, chip, plan);
    } catch (err) {
      if (!(err instanceof CostModelError)) throw err;
      return { why: err.message };
    }
    var names = Object.keys(chip.networks);
    var networks = networkSeconds(sent, chip), longest = 0;
    names.forEach(function (k) { if (networks[k] > longest) longest = networks[k]; });
    var compute = flops / chip.peak;
    var perfect = Math.max(compute, longest);
    var useful = divide(total.forward + total.backward, n) / chip.peak;
    return {
      compute: compute, networks: networks,
      no_overlap: compute + pysum(names.map(function (k) { return networks[k]; })),
      perfect_overlap: perfect, mfu: useful / perfect, compute_bound: threshold
    };
  }

  // str.format's {name} fields, as planner_page fills the same templates.
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, name) { return String(values[name]); });
  }

  // planner_page.nearest: the count nearest n by ratio, the smaller on a tie.
  function nearest(counts, n) {
    var best = null;
    counts.slice().sort(function (a, b) { return a - b; }).forEach(function (c) {
      if (best === null ||
          Math.max(c, n) * Math.min(best, n) < Math.max(best, n) * Math.min(c, n)) {
        best = c;
      }
    });
    return best;
  }

  // ------------------------------------------- the TPU slice's meshes (tpu_slices)

  // tpu_slices.shape_of: the slice Google publishes for a chip's device count, or null.
  function sliceShape(chip, devices) {
    var table = DATA.slices.slices[chip];
    if (!table || !Object.prototype.hasOwnProperty.call(table, String(devices))) return null;
    return table[String(devices)];
  }

  // tpu_slices.meshes: every (data, fsdp, tensor) mesh of n devices, data then fsdp
  // ascending.
  function meshesOf(n) {
    var found = [];
    for (var a = 1; a <= n; a++) {
      if (n % a) continue;
      for (var f = 1; f <= n / a; f++) {
        if ((n / a) % f === 0) found.push([a, f, n / (a * f)]);
      }
    }
    return found;
  }

  // tpu_slices._whole_sides: the slice's sides dealt to the mesh's axes, each side to one.
  function wholeSides(shape, mesh) {
    var deals = Math.pow(mesh.length, shape.length);
    for (var d = 0; d < deals; d++) {
      var got = mesh.map(function () { return 1; }), rest = d;
      for (var i = shape.length - 1; i >= 0; i--) { // the last side varies fastest
        got[rest % mesh.length] *= shape[i];
        rest = Math.floor(rest / mesh.length);
      }
      if (got.every(function (k, j) { return k === mesh[j]; })) return true;
    }
    return false;
  }

  // tpu_slices.accepts: whether jax.make_mesh builds the mesh on the published slice;
  // null where none is published.
  function accepts(chip, devices, mesh) {
    var shape = sliceShape(chip, devices);
    if (shape === null) return null;
    if (DATA.slices.rules[chip] === "split") return true;
    return wholeSides(shape, mesh);
  }

  // tpu_slices.axis_sizes: the products of the sets of the slice's sides, 1 aside.
  function axisSizes(shape) {
    var found = {};
    for (var set = 1; set < (1 << shape.length); set++) {
      var n = 1;
      shape.forEach(function (side, i) { if (set & (1 << i)) n *= side; });
      if (n > 1) found[n] = true;
    }
    return Object.keys(found).map(Number).sort(function (a, b) { return a - b; });
  }

  // tpu_slices.either: a, a or b, a, b or c
  function either(items) {
    if (items.length === 1) return items[0];
    return items.slice(0, -1).join(", ") + " or " + items[items.length - 1];
  }

  function shapeWords(shape) { return shape.join(" x "); }

  // tpu_slices.refusal: why make_mesh refuses the mesh on the published slice, and the
  // meshes with the same axes split that it builds there, of those the ones that split
  // the model (planner_page.mesh_refusal); null where it builds it.
  function refusal(chip, devices, mesh, model) {
    if (accepts(chip, devices, mesh) !== false) return null;
    var shape = sliceShape(chip, devices);
    var split = mesh.map(function (k) { return k > 1; });
    var kind = DATA.slices.axes.filter(function (_, i) { return split[i]; }).join(" x ");
    var built = meshesOf(devices).filter(function (m) {
      return m.every(function (k, i) { return (k > 1) === split[i]; }) &&
        accepts(chip, devices, m);
    });
    var same = built.filter(function (m) {
      return !reasons(model, layout(nameOf(m[0], m[1], m[2]), m[0], m[1], m[2], 1)).length;
    });
    var listed = same.length ? same : built;
    var values = {
      shape: shapeWords(shape), chip: chip, kind: kind, devices: devices,
      sizes: either(axisSizes(shape).map(String)),
      meshes: built.length ? either(listed.map(function (m) {
        return shapeWords(m.filter(function (k) { return k > 1; }));
      })) : ""
    };
    var word = same.length ? "refused" : built.length ? "none splits" : "no kind";
    return fill(DATA.slices.words[word], values);
  }

  // tpu_slices.note: what the page says above the table about a TPU chip's slice.
  function sliceNote(chip, devices) {
    if (!Object.prototype.hasOwnProperty.call(DATA.slices.slices, chip)) return null;
    var shape = sliceShape(chip, devices), words = DATA.slices.words;
    var values = { label: DATA.slices.labels[chip], devices: devices };
    if (shape === null) return fill(words.unpublished, values);
    var every = meshesOf(devices);
    var refused = every.filter(function (m) { return !accepts(chip, devices, m); }).length;
    values.shape = shapeWords(shape);
    values.refused = refused;
    values.meshes = every.length;
    if (refused) return fill(words.sides, values);
    return fill(words[DATA.slices.rules[chip] === "split" ? "split" : "every"], values);
  }

  // planner_page.row_program: a row's program, or why it has none: never the program of a
  // mesh make_mesh refuses on the slice.
  function rowProgram(model, r) {
    if (r.refused) return { why: fill(DATA.coverage.labels["no program"], { why: r.refused }) };
    return program(model, r.layout);
  }

  // planner_page.basis: whether a compiled program of the grid checks the row, and the
  // words the page shows: what checked it, or what it is extrapolated from and to (the
  // compiled point nearest the row: its target's programs at the nearest device count).
  function basis(c, l) {
    var cov = DATA.coverage, words = cov.labels, m = c.model;
    if (l.stages > 1) return [false, words.pipeline];
    var index = null;
    for (var i = 0; i < cov.sizes.length && index === null; i++) {
      var same = cov.size_fields.every(function (k) { return cov.sizes[i][k] === m[k]; });
      if (same) index = i;
    }
    var what = [];
    var target = Object.prototype.hasOwnProperty.call(cov.targets, c.planName) ?
      cov.targets[c.planName] : null;
    if (!target) what.push(words.textbook);
    var near = target ? target.points : cov.points;
    var n = nearest(near.map(function (p) { return p[0]; }), c.devices);
    var at = near.filter(function (p) { return p[0] === n; });
    var compiledSizes = [];
    at.forEach(function (p) {
      p[2].forEach(function (k) {
        if (compiledSizes.indexOf(k) < 0) compiledSizes.push(k);
      });
    });
    if (c.devices === 1) what.push(words["one device"]);
    else if (c.devices !== n) what.push(fill(words.devices, { devices: c.devices }));
    if (index === null || compiledSizes.indexOf(index) < 0) what.push(words.size);
    if (cov.optimizers.indexOf(m.optimizer) < 0) {
      what.push(fill(words.optimizer, { optimizer: m.optimizer }));
    }
    if (cov.param_bytes.indexOf(m.param_bytes) < 0) what.push(words.param_bytes);
    if (target && c.backend !== target.backend) {
      what.push(fill(words.backend, { backend: c.backend.toUpperCase() }));
    }
    if (!what.length) {
      var program = [index, l.data, l.fsdp, l.tensor, c.planName];
      var held = cov.programs.filter(function (p) {
        return program.every(function (x, k) { return p[k] === x; });
      }).map(function (p) { return p[p.length - 1]; });
      if (held.length === 1 && held[0] === true) {
        return [true, fill(words.checked, { target: at[0][1] })];
      }
      what.push(held.length ? words.plan : words.mesh);
    }
    var count = compiledSizes.length;
    return [false, fill(words.extrapolated, {
      devices: n,
      target: fill(words["every target"], {
        targets: at.map(function (p) { return p[1]; }).join(words.and)
      }),
      sizes: fill(words[count === 1 ? "one size" : "sizes"], { sizes: count }),
      what: what.join(words.and)
    })];
  }

  // planner_page.answer: a row for every layout of the devices: its figures (planner's
  // plan_table, with planner_page.basis), or why it cannot split the model (planner.reasons).
  function planTable(c) {
    var model = c.model, memory = c.memory, plan = c.plan, backend = c.backend;
    return ranked(layouts(c.devices).map(function (l) {
      var why = reasons(model, l);
      // planner_page.mesh_refusal: a pipeline prints no mesh, so it is not checked
      var refused = l.stages > 1 ? null : refusal(c.chip, c.devices, [l.data, l.fsdp, l.tensor], model);
      if (why.length || refused) {
        var greyed = { layout: l, valid: false, reason: why.join("; "), rank: null };
        if (refused) greyed.refused = refused;
        return greyed;
      }
      var state = stateBytes(model, l, backend);
      var terms = wireTerms(model, l, plan);
      var found = basis(c, l);
      var row = {
        layout: l,
        valid: true,
        state: state,
        wire: pysum(terms.map(function (x) { return x[1]; })),
        terms: terms,
        fits: state <= memory,
        checked: found[0],
        basis: found[1],
        rank: null
      };
      if (l.stages > 1) { // a time, and no temporaries: not ranked
        row.time = timeOf(model, l, c.chip, plan);
        return row;
      }
      // planner_page.memory_of: an integer total against a memory that may have a fraction
      var chipBackend = DATA.chips[c.chip].backend; // the temporaries' (c.backend: state's)
      var temporaries = policyTempBytes(model, l, chipBackend);
      var total = BigInt(state) + temporaries;
      row.temporaries = temporaries;
      row.host = hostBytes(model, l, chipBackend);
      row.total = total;
      row.room = memory - Number(total);
      row.total_fits = total <= BigInt(Math.floor(memory));
      row.time = timeOf(model, l, c.chip, plan);
      return row;
    }));
  }

  // planner_page.ranked: the rows with a time whose state and temporaries fit, numbered by
  // the overlapped bound, fastest first (a stable sort: ties keep the layouts' order).
  function ranked(rows) {
    var fast = rows.filter(function (r) {
      return r.total_fits && r.time.perfect_overlap !== undefined;
    });
    fast.sort(function (a, b) { return a.time.perfect_overlap - b.time.perfect_overlap; });
    fast.forEach(function (r, i) { r.rank = i + 1; });
    return rows;
  }

  // ------------------------------------------------------------ the program for a row

  // planner_program's text, line for line: Python's repr of an axis entry, a shape, a spec
  function pyRepr(value) {
    if (value === null) return "None";
    if (typeof value === "string") return "'" + value + "'";
    return "(" + value.map(pyRepr).join(", ") + (value.length === 1 ? "," : "") + ")";
  }

  function shapeText(dims) {
    return "(" + dims.join(", ") + (dims.length === 1 ? "," : "") + ")";
  }

  function specText(entries) {
    return "P(" + entries.map(pyRepr).join(", ") + (entries.length === 1 ? "," : "") + ")";
  }

  function axisWays(axes, sizes) {
    if (axes === null) return 1;
    return (typeof axes === "string" ? [axes] : axes).reduce(function (n, a) {
      return n * sizes[a];
    }, 1);
  }

  // planner_program.parameters: name, shape, spec entries and block of each parameter
  function parametersOf(model, l) {
    var rules = {};
    DATA.program.rules.forEach(function (r) { rules[r[0]] = r[1]; });
    var sizes = { data: l.data, fsdp: l.fsdp, tensor: l.tensor };
    var size = { vocab: model.vocab, embed: model.d_model, heads: model.heads,
      kv_heads: model.kv, head_dim: model.headDim, mlp: model.mlp, layers: model.layers };
    var found = [];
    DATA.program.parameters.forEach(function (p) {
      var name = p[0], names = p[1];
      if (/\/gate$/.test(name) && !model.gated) return;
      if (/\/head$/.test(name) && model.tied) return;
      var shape = names.map(function (n) { return n === null ? 2 : size[n]; });
      var entries = names.map(function (n) { return n === null ? null : rules[n]; });
      var block = shape.map(function (n, i) { return idiv(n, axisWays(entries[i], sizes)); });
      found.push([name, shape, entries, block]);
    });
    return found;
  }

  // planner_program.text_or_why: the row's program ({text}), or why it has none ({why})
  function program(model, l, run) {
    var words = DATA.program;
    if (l.stages > 1) return { why: words.pipeline };
    var found = reasons(model, l);
    if (found.length) return { why: words.not_split.replace("{reason}", found.join("; ")) };
    var mesh = [l.data, l.fsdp, l.tensor];
    var sizes = { data: l.data, fsdp: l.fsdp, tensor: l.tensor };
    var n = l.data * l.fsdp * l.tensor, batch = model.batch;
    var fields = words.config_fields.map(function (k) { return k + "=" + model[k]; });
    if (model.remat !== true) {
      fields.push("remat=" + (model.remat === false ? "False" : pystr(model.remat)));
    }
    if (model.kv !== model.heads) fields.push("kv_heads=" + model.kv);
    if (model.gated) fields.push("gated=True");
    if (model.tied) fields.push("tied=True");
    var lines = [
      "# " + l.name + " on " + n + " devices: (data, fsdp, tensor) = " + shapeText(mesh) + ".",
      "# Run after the transformer page's blocks: Config, RULES, mesh_axes,",
      "# sharded_init, make_train_step, shard_batch and token_batches are theirs.",
      "cfg = Config(" + fields.join(", ") + ")",
      "mesh = jax.make_mesh(",
      "    " + shapeText(mesh) + ",",
      '    ("data", "fsdp", "tensor"),',
      "    axis_types=(AxisType.Auto,) * 3,",
      "    devices=jax.devices()[:" + n + "],",
      ")",
      "# RULES on this mesh: each logical axis, its mesh axes, how many ways it splits"
    ];
    var batchAxes = null;
    words.rules.forEach(function (r) {
      var ways = axisWays(r[1], sizes);
      if (r[0] === "batch") batchAxes = r[1];
      lines.push("#   " + r[0].padEnd(9) + " -> " + pyRepr(r[1]).padEnd(18) + " " +
        (ways > 1 ? ways + " ways" : "whole"));
    });
    var rows = parametersOf(model, l).map(function (p) {
      return [p[0], shapeText(p[1]), specText(p[2]), shapeText(p[3])];
    });
    var head = ["parameter", "shape", "spec", "per device"];
    var all = [head].concat(rows);
    var widths = [0, 1, 2].map(function (i) {
      return Math.max.apply(null, all.map(function (r) { return r[i].length; }));
    });
    lines.push("# Each parameter, and AdamW's two moments of it (mu, nu), is laid out:");
    all.forEach(function (r) {
      lines.push("#   " + [r[0].padEnd(widths[0]), r[1].padEnd(widths[1]),
        r[2].padEnd(widths[2]), r[3]].join("  "));
    });
    if (model.optimizer !== "adamw" || model.param_bytes !== DATA.f32) {
      var weights = model.param_bytes === DATA.f32 ? "float32" : "bfloat16";
      lines.push("# The page's TrainState trains with AdamW on float32 weights; the planner's",
        "# row priced " + model.optimizer + " on " + weights + " weights.");
    }
    lines.push(
      "sharded = sharded_init(cfg, mesh)  # the train state, split by RULES",
      "# The batch: " + batch + " sequences, " + idiv(batch, l.data * l.fsdp) +
        " on each device.",
      'batch = NamedSharding(mesh, mesh_axes(("batch", None)))  # ' +
        specText([batchAxes, null]),
      "tokens = jax.ShapeDtypeStruct((" + batch + ", cfg.seq + 1), jnp.int32, " +
        "sharding=batch)",
      "train_step = make_train_step(sharded, mesh)",
      "compiled = train_step.lower(sharded.abstract, tokens).compile()");
    if (run !== false) {
      lines.push(
        "# One step on the devices:",
        "state = sharded.init()",
        "batches = token_batches(cfg, steps=1, batch=" + batch + ")",
        "state, loss = compiled(state, shard_batch(batches[0], mesh))",
        'print(f"loss {float(loss):.3f}")');
    }
    return { text: lines.join("\n") + "\n" };
  }

  // ------------------------------------------------------------ what the page shows

  function grouped(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  // planner_page.size_text: the same operations, so the same digits.
  function sizeText(n) {
    var units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    var k = 0;
    while (k + 1 < units.length && n >= Math.pow(1024, k + 1)) k += 1;
    if (k === 0) return grouped(Math.floor(n + 0.5)) + " bytes";
    var value = n / Math.pow(1024, k);
    var places = value < 10 ? 2 : value < 100 ? 1 : 0;
    var scale = Math.pow(10, places);
    var scaled = Math.floor(value * scale + 0.5);
    var whole = Math.floor(scaled / scale), part = scaled % scale;
    var digits = grouped(whole) + (places ? "." + String(part).padStart(places, "0") : "");
    return digits + " " + units[k];
  }

  // planner_page.figure_text: three or four figures, half up, in the first unit the value
  // reaches (the same operations, so the same digits).
  function figureText(value, units) {
    var unit = units[units.length - 1];
    for (var i = 0; i < units.length; i++) {
      if (value >= units[i][0]) { unit = units[i]; break; }
    }
    value = value / unit[0];
    var places = value < 10 ? 2 : value < 100 ? 1 : 0;
    var scale = Math.pow(10, places);
    var scaled = Math.floor(value * scale + 0.5);
    var whole = Math.floor(scaled / scale), part = scaled % scale;
    return grouped(whole) + (places ? "." + String(part).padStart(places, "0") : "") + unit[1];
  }

  var TIME_UNITS = [[1.0, " s"], [1e-3, " ms"], [1e-6, " \u00b5s"], [1e-9, " ns"]];

  function timeText(seconds) {
    return seconds === 0 ? "0 s" : figureText(seconds, TIME_UNITS);
  }

  function percentText(fraction) {
    return figureText(fraction * 100, [[1.0, "%"]]);
  }

  // planner_page.bound_text: never, any whole batch, or above so many sequences per device
  function boundText(sequences) {
    var words = DATA.coverage.labels;
    if (sequences === Infinity) return words.never;
    if (sequences < 1) return words.any;
    return figureText(sequences, [[1.0, ""]]);
  }

  // planner_page.room_text and network_text
  function roomText(r) {
    if (r.total_fits) return "fits, " + sizeText(r.room) + " to spare";
    return "does not fit by " + sizeText(-r.room);
  }

  function networkText(networks, chip) {
    var names = DATA.chips[chip].networks;
    var said = Object.keys(networks).filter(function (k) { return networks[k]; })
      .map(function (k) { return names[k].name + " " + timeText(networks[k]); });
    return said.join(", ") || "none";
  }

  // planner_page.ordered: the ranked rows first, by rank, then the others in order.
  function ordered(rows) {
    var fast = rows.filter(function (r) { return r.rank; });
    fast.sort(function (a, b) { return a.rank - b.rank; });
    return fast.concat(rows.filter(function (r) { return !r.rank; }));
  }

  // planner_page.mesh_text: (data, fsdp, tensor), or the stages and each stage's mesh.
  function meshText(l) {
    var mesh = l.data + " × " + l.fsdp + " × " + l.tensor;
    if (l.stages === 1) return mesh;
    return l.stages + " stages" + (l.fsdp * l.tensor === 1 ? "" : " of " + mesh);
  }

  function element(tag, attributes, text) {
    var node = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (k) { node.setAttribute(k, attributes[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // The form's fields by what they are: the preset menu fills in MODEL_FIELDS.
  var MODEL_FIELDS = ["vocab", "d_model", "heads", "kv_heads", "mlp", "layers", "seq",
    "gated", "tied"];

  // planner_page.remat_text: the remat field's name for a Model.remat
  function rematText(value) {
    if (value === true) return "full";
    if (value === false) return "none";
    return String(value);
  }

  function Planner(root) {
    this.root = root;
    this.form = root.querySelector("form");
    this.summary = root.querySelector("[data-planner=summary]");
    this.out = root.querySelector("[data-planner=answer]");
    this.source = root.querySelector("[data-planner=preset-source]");
    this.count = root.querySelector("[data-planner=params]");
    this.badPreset = null;
    var self = this;
    var f = this.form.elements;
    // the program of a row: the top-ranked one until the reader picks another (its
    // section comes later in the page: found once the page is parsed)
    this.programBox = null;
    this.picked = null;
    var attach = function () {
      self.programBox = document.getElementById("planner-program");
      if (!self.programBox) return;
      self.pick = self.programBox.querySelector("[data-planner=program-layout]");
      self.pick.parentNode.parentNode.hidden = false;
      self.pick.addEventListener("change", function () {
        self.picked = self.pick.value;
        self.showProgram();
      });
      self.showProgram();
    };
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", attach);
    } else {
      attach();
    }
    Object.keys(DATA.optimizers).sort().forEach(function (name) {
      f.optimizer.appendChild(element("option", { value: name }, name));
    });
    var policies = document.getElementById(f.remat.getAttribute("list"));
    Object.keys(DATA.remat.form).forEach(function (name) {
      policies.appendChild(element("option", { value: name }));
    });
    Object.keys(DATA.plans).forEach(function (name) {
      f.plan.appendChild(element("option", { value: name }, DATA.plans[name].label));
    });
    Object.keys(DATA.chips).forEach(function (name) {
      f.chip.appendChild(element("option", { value: name }, DATA.chips[name].label));
    });
    f.preset.appendChild(element("option", { value: DATA.custom }, "custom: your own sizes"));
    Object.keys(DATA.presets).forEach(function (name) {
      f.preset.appendChild(element("option", { value: name }, name));
    });
    // each field beside the message that says what to change in it
    this.errors = {};
    Array.prototype.forEach.call(this.form.querySelectorAll("label"), function (label) {
      var field = label.querySelector("input, select");
      var box = element("div", { class: "planner-field" });
      label.parentNode.insertBefore(box, label);
      box.appendChild(label);
      var id = "planner-error-" + field.name;
      var message = element("span", { class: "planner-field-error", id: id,
        "data-error-for": field.name, "aria-live": "polite" });
      box.appendChild(message);
      field.setAttribute("aria-describedby", id);
      self.errors[field.name] = message;
    });
    // what no one field is at fault for: sizes whose counts pass 2^53
    this.errors.model = element("p", { class: "planner-field-error",
      "data-error-for": "model", "aria-live": "polite" });
    this.form.querySelector("fieldset").appendChild(this.errors.model);
    Object.keys(DATA.defaults).forEach(function (name) { self.set(name, DATA.defaults[name]); });
    // ?preset=NAME: start from a preset's model
    var asked = new URLSearchParams(window.location.search).get("preset");
    if (asked !== null) {
      if (Object.prototype.hasOwnProperty.call(DATA.presets, asked)) this.fill(asked);
      else this.badPreset = asked;
    }
    this.form.addEventListener("input", function (event) { self.edited(event.target); });
    this.form.addEventListener("change", function (event) { self.edited(event.target); });
    this.form.addEventListener("submit", function (event) { event.preventDefault(); });
    this.show();
  }

  Planner.prototype.set = function (name, value) {
    var field = this.form.elements[name];
    if (!field) return;
    if (field.type === "checkbox") field.checked = value;
    else if (name === "remat") field.value = rematText(value);
    else field.value = String(value);
  };

  // The preset menu fills in its model's fields; a model field changed away from the
  // preset's value makes the menu say "custom".
  Planner.prototype.fill = function (name) {
    var self = this;
    this.form.elements.preset.value = name;
    var fields = DATA.presets[name].fields;
    MODEL_FIELDS.forEach(function (k) { self.set(k, fields[k]); });
  };

  Planner.prototype.edited = function (field) {
    var f = this.form.elements;
    if (field.name === "preset") {
      this.badPreset = null;
      if (f.preset.value !== DATA.custom) this.fill(f.preset.value);
    } else if (MODEL_FIELDS.indexOf(field.name) >= 0 && f.preset.value !== DATA.custom) {
      var fields = DATA.presets[f.preset.value].fields;
      var same = MODEL_FIELDS.every(function (k) {
        return f[k].type === "checkbox" ? f[k].checked === fields[k] :
          f[k].value.trim() === String(fields[k]);
      });
      if (!same) f.preset.value = DATA.custom;
    }
    this.show();
  };

  // planner_page.problems and the model: each field no layout could use, with what to
  // change, or the case the table is computed for.
  Planner.prototype.read = function () {
    var f = this.form.elements;
    var raw = {};
    SIZES.forEach(function (name) { raw[name] = f[name].value; });
    OPTIONS.forEach(function (name) { raw[name] = f[name].checked; });
    raw.optimizer = f.optimizer.value;
    raw.param_bytes = f.param_bytes.value;
    raw.remat = f.remat.value;
    var problems = {};
    if (this.badPreset !== null) {
      problems.preset = "No preset " + pystr(this.badPreset) + ": pick one of [" +
        Object.keys(DATA.presets).sort().map(pystr).join(", ") + "].";
    }
    var made;
    try {
      made = makeModel(raw);
    } catch (err) {
      if (!(err instanceof CostModelError)) throw err;
      made = { problems: { model: err.message } };
    }
    Object.keys(made.problems || {}).forEach(function (k) { problems[k] = made.problems[k]; });
    var devicesText = f.devices.value;
    if (!wholeNumber(devicesText)) {
      problems.devices = "devices must be a positive integer, not " + repr(devicesText);
    } else if (Number(devicesText) > MAX_DEVICES) {
      problems.devices = "devices: the planner lists layouts for up to " +
        grouped(MAX_DEVICES) + " devices";
    }
    var memoryText = f.memory.value.trim();
    var gib = memoryText === "" ? NaN : Number(memoryText);
    if (!(gib > 0)) {
      problems.memory = "memory per device must be a positive number of GiB, not " +
        repr(memoryText);
    }
    if (Object.keys(problems).length) return { problems: problems };
    return { model: made.model, devices: Number(devicesText), memory: gib * DATA.gib,
      gib: gib, plan: DATA.plans[f.plan.value], planName: f.plan.value,
      backend: f.backend.value, preset: f.preset.value, chip: f.chip.value };
  };

  // Draws the answer again only when a field changed: a field's `change` event (on leaving
  // it) must not replace the table under the reader's focus.
  Planner.prototype.show = function () {
    var key = Array.prototype.map.call(this.form.elements, function (field) {
      return field.type === "checkbox" ? field.checked : field.value;
    }).concat([this.badPreset]).join("|");
    if (key === this.shown) return;
    this.shown = key;
    this.out.textContent = "";
    var c = this.read(), rows = null;
    if (!c.problems) {
      try {
        rows = planTable(c);
      } catch (err) {
        if (!(err instanceof CostModelError)) throw err;
        c = { problems: { model: err.message } };
      }
    }
    this.mark(c.problems || {});
    this.describe(c.problems ? null : c);
    this.programRows = c.problems ? null : { c: c, rows: ordered(rows) };
    this.showProgram();
    if (c.problems) {
      var n = Object.keys(c.problems).length;
      this.summary.textContent = "Change the " + (n === 1 ? "field" : n + " fields") +
        " marked above: no layout can be priced until then.";
      return;
    }
    var valid = rows.filter(function (r) { return r.valid; });
    // the rows whose layout splits the model, priced or refused by the slice's make_mesh
    var splits = rows.filter(function (r) { return r.valid || !r.reason; }).length;
    var fitting = valid.filter(function (r) { return r.fits; }).length;
    var whole = valid.filter(function (r) { return r.total_fits; }).length;
    this.summary.textContent = splits ?
      splits + " of " + rows.length + " layouts can split this model; the state of " +
      fitting + " fits in " + c.gib + " GiB per device, state and temporaries of " +
      whole + "." : noLayout(c.model, c.devices) + ".";
    this.out.appendChild(this.legend(c));
    var chip = DATA.chips[c.chip];
    this.out.appendChild(element("p", { class: "planner-legend", "data-planner": "chip" },
      chip.label + ": " + chip.note));
    var slice = sliceNote(c.chip, c.devices);
    if (slice !== null) {
      this.out.appendChild(element("p", { class: "planner-legend", "data-planner": "slice" },
        slice));
    }
    this.out.appendChild(this.table(c, rows));
  };

  // The program section: a menu of the rows, and the chosen row's program
  // (planner_program.text_or_why) or why it has none; planner_page.program_note above it.
  Planner.prototype.showProgram = function () {
    if (!this.programBox) return;
    var note = this.programBox.querySelector("[data-planner=program-note]");
    var code = this.programBox.querySelector("[data-planner=program]");
    var shown = this.programRows;
    var pick = this.pick;
    if (!shown) {
      pick.textContent = "";
      note.textContent = "Change the fields marked above: no layout has a program until then.";
      code.textContent = "";
      return;
    }
    var key = function (r) {
      var l = r.layout;
      return [l.data, l.fsdp, l.tensor, l.stages].join(",");
    };
    var keys = shown.rows.map(key);
    var chosen = keys.indexOf(this.picked);
    if (chosen < 0) chosen = 0; // ordered: the top-ranked row first
    pick.textContent = "";
    shown.rows.forEach(function (r, i) {
      pick.appendChild(element("option", { value: keys[i] },
        (r.rank ? "#" + r.rank + " " : "") + r.layout.name + ", " + meshText(r.layout)));
    });
    pick.value = keys[chosen];
    var r = shown.rows[chosen];
    note.textContent = r.layout.name + ", " + meshText(r.layout) + " (" +
      (r.rank ? "ranked " + r.rank : "not ranked") + ") for the form's input:";
    var found = rowProgram(shown.c.model, r);
    code.textContent = found.text !== undefined ? found.text : found.why;
  };

  // Each field's message: what to change in it, or nothing.
  Planner.prototype.mark = function (problems) {
    var f = this.form.elements;
    Object.keys(this.errors).forEach(function (name) {
      var text = Object.prototype.hasOwnProperty.call(problems, name) ? problems[name] : "";
      this.errors[name].textContent = text;
      if (f[name]) {
        if (text) f[name].setAttribute("aria-invalid", "true");
        else f[name].removeAttribute("aria-invalid");
      }
    }, this);
  };

  // Beside the preset menu: where the preset's numbers come from; and the parameter count.
  Planner.prototype.describe = function (c) {
    var name = this.form.elements.preset.value;
    this.source.textContent = "";
    if (name !== DATA.custom && this.badPreset === null) {
      var p = DATA.presets[name];
      this.source.appendChild(document.createTextNode(name + ": sizes from "));
      this.source.appendChild(element("a", { href: p.config_source }, "its config.json"));
      this.source.appendChild(document.createTextNode(
        " (the sequence length is its max_position_embeddings); " + p.published +
        " parameters as "));
      this.source.appendChild(element("a", { href: p.published_source }, "published"));
      this.source.appendChild(document.createTextNode("."));
    }
    this.count.textContent = "";
    this.count.removeAttribute("data-params");
    if (c) {
      this.count.setAttribute("data-params", String(c.model.params));
      this.count.textContent = grouped(c.model.params) + " parameters by the formula below.";
    }
  };

  Planner.prototype.legend = function (c) {
    var m = c.model, p = c.plan, opt = DATA.optimizers[m.optimizer];
    var departures = p.departures[m.gated ? "gated" : "plain"];
    var text = "With L = " + m.layers + ", d = " + m.d_model + ", g = " + m.kv + ", k = " +
      m.headDim + ", m = " + m.mlp + (m.gated ? " (gated)" : "") + ", V = " + m.vocab +
      (m.tied ? " (tied)" : "") + ", S = " + m.seq + ", B = " + m.batch + ", M = " +
      m.microbatches + ", p = " + m.param_bytes + ", slots = " + opt[0] + ", scalars = " +
      opt[1] + ", remat = " + (m.remat === false ? 0 : 1) + ", resum = " +
      (m.remat === false || DATA.remat.keeps_output_projection.indexOf(m.remat) >= 0 ?
        0 : 1) + " (remat policy " + rematText(m.remat) + ")" +
      "; the plan moves gathered weights in w_g = " + p.gather + " bytes, gradients in w_r = " +
      p.gradients + ", activations in w_a = " + p.activations +
      (departures.length ? " (" + departures.join("; ") + ")" : "") + ". " +
      grouped(m.params) + " parameters.";
    return element("p", { class: "planner-legend", "data-planner": "legend" }, text);
  };

  // The rows as planner_page.ordered puts them, each with planner_page.example_cells'
  // words and, in data attributes, its exact figures.
  Planner.prototype.table = function (c, rows) {
    var wrap = element("div", { class: "planner-scroll", tabindex: "0", role: "region",
      "aria-label": "Layouts and their figures" });
    var table = element("table", { class: "planner-table" });
    var head = element("tr");
    var columns = DATA.columns.concat(["formulas"]);
    columns.forEach(function (t) { head.appendChild(element("th", { scope: "col" }, t)); });
    table.appendChild(element("thead")).appendChild(head);
    var open = element("tbody"), rest = element("tbody"), greyed = 0;
    var stateKey = c.backend === "tpu" ? "state, tpu" : "state";
    var TIME_COLUMNS = 5; // compute, network, step, MFU, compute-bound
    ordered(rows).forEach(function (r, i) {
      // planner_page.folded: the first DATA.fold rows open, the others in a fold
      var body = i < DATA.fold ? open : rest;
      if (body === rest && !r.valid) greyed += 1;
      var l = r.layout;
      var row = element("tr", {
        "data-planner": "row", "data-layout": l.name,
        "data-mesh": [l.data, l.fsdp, l.tensor, l.stages].join(","),
        "data-valid": String(r.valid), "data-rank": r.rank ? String(r.rank) : ""
      });
      row.appendChild(element("td", { "data-planner": "rank" }, r.rank ? String(r.rank) : ""));
      row.appendChild(element("th", { scope: "row" }, l.name));
      row.appendChild(element("td", { class: "planner-figure" }, meshText(l)));
      if (!r.valid) {
        // greyed: the layout cannot split this model, or the slice's make_mesh refuses
        // its mesh (planner_page.greyed_text); the row says what to change
        row.setAttribute("class", "planner-invalid");
        var labels = DATA.coverage.labels;
        var upper = function (text) { return text.charAt(0).toUpperCase() + text.slice(1); };
        var cell = element("td", { colspan: String(columns.length - 3) },
          r.reason ? upper(labels["cannot split"]) : "");
        cell.appendChild(element("span", { "data-planner": "reason" }, r.reason));
        if (r.refused) {
          cell.appendChild(document.createTextNode(
            r.reason ? "; " + labels.refused : upper(labels.refused)));
          cell.appendChild(element("span", { "data-planner": "refused" }, r.refused));
        }
        row.appendChild(cell);
        body.appendChild(row);
        return;
      }
      if (r.rank) row.setAttribute("class", "planner-ranked");
      function figure(name, text, attributes) {
        var td = element("td", Object.assign({ "data-planner": name, class: "planner-figure" },
          attributes || {}), text);
        row.appendChild(td);
        return td;
      }
      function words(name, text, span) {
        row.appendChild(element("td", { "data-planner": name, class: "planner-words",
          colspan: String(span) }, text));
      }
      row.setAttribute("data-state", String(r.state));
      row.setAttribute("data-wire", String(r.wire));
      row.setAttribute("data-fits", String(r.fits));
      row.setAttribute("data-checked", String(r.checked));
      figure("state", sizeText(r.state));
      figure("fits", r.fits ? "yes" : "no");
      if (r.temporaries !== undefined) {
        row.setAttribute("data-temporaries", String(r.temporaries));
        row.setAttribute("data-total", String(r.total));
        row.setAttribute("data-room", String(r.room));
        row.setAttribute("data-total-fits", String(r.total_fits));
        row.setAttribute("data-host", String(r.host));
        // exact integers (BigInt); Python's int / 1024**k rounds once, as Number() does
        figure("temporaries", sizeText(Number(r.temporaries)) + (r.host ?
          fill(DATA.coverage.labels.host, { host: sizeText(Number(r.host)) }) : ""));
        figure("total", sizeText(Number(r.total)) + ": " + roomText(r),
          r.total_fits ? {} : { class: "planner-figure planner-over" });
      } else {
        words("memory-why", DATA.coverage.labels["no temporaries"], 2); // a pipeline
      }
      figure("wire", sizeText(r.wire));
      var t = r.time;
      if (t.why !== undefined) {
        row.setAttribute("data-why", t.why);
        words("time-why", t.why, TIME_COLUMNS);
      } else {
        row.setAttribute("data-compute", String(t.compute));
        row.setAttribute("data-networks", JSON.stringify(t.networks));
        row.setAttribute("data-perfect-overlap", String(t.perfect_overlap));
        row.setAttribute("data-no-overlap", String(t.no_overlap));
        row.setAttribute("data-mfu", String(t.mfu));
        row.setAttribute("data-compute-bound", String(t.compute_bound));
        figure("compute", timeText(t.compute));
        figure("network", networkText(t.networks, c.chip));
        figure("step", timeText(t.perfect_overlap) + ", " + timeText(t.no_overlap));
        figure("mfu", percentText(t.mfu));
        figure("compute-bound", boundText(t.compute_bound));
      }
      row.appendChild(element("td", { "data-planner": "basis", class: "planner-words" },
        r.basis));
      var formulas = element("td", { "data-planner": "formulas" });
      var details = element("details");
      details.appendChild(element("summary", {
        "aria-label": "formulas for " + l.name + ", " + meshText(l)
      }, "formulas"));
      var list = element("dl");
      var key = l.stages > 1 ? "pipeline state" : stateKey;
      list.appendChild(element("dt", {}, "state: " + sizeText(r.state)));
      list.appendChild(element("dd", {}, DATA.formulas[key]));
      r.terms.forEach(function (term) {
        list.appendChild(element("dt", { "data-term": term[0], "data-bytes": String(term[1]) },
          term[0] + ": " + sizeText(term[1])));
        list.appendChild(element("dd", {}, DATA.formulas[term[0]]));
      });
      details.appendChild(list);
      formulas.appendChild(details);
      row.appendChild(formulas);
      body.appendChild(row);
    });
    table.appendChild(open);
    wrap.appendChild(table);
    var box = element("div", { "data-planner": "tables" });
    box.appendChild(wrap);
    if (rest.children.length) {
      var fold = element("details", { class: "planner-fold", "data-planner": "fold" });
      fold.appendChild(element("summary", {}, fill(DATA.coverage.labels.fold,
        { rows: rest.children.length, greyed: greyed })));
      var more = element("div", { class: "planner-scroll", tabindex: "0", role: "region",
        "aria-label": "The other layouts and their figures" });
      var second = element("table", { class: "planner-table" });
      second.appendChild(element("thead")).appendChild(head.cloneNode(true));
      second.appendChild(rest);
      more.appendChild(second);
      fold.appendChild(more);
      box.appendChild(fold);
    }
    return box;
  };

  window.StrategyPlanner = {
    planTable: planTable, makeModel: makeModel, reasons: reasons, sizeText: sizeText,
    program: program, layouts: layouts, noLayout: noLayout,
    rowProgram: rowProgram, sliceNote: sliceNote, accepts: accepts,
    pysum: pysum, divide: divide,
    // the page's constants, for running the arithmetic without the page (the tests, in Node)
    load: function (json) { DATA = JSON.parse(json); },
    CostModelError: CostModelError
  };

  function start() {
    var root = document.getElementById("planner-app");
    var source = document.getElementById("planner-data");
    if (!root || !source) return;
    DATA = JSON.parse(source.textContent);
    root.hidden = false;
    window.StrategyPlanner.page = new Planner(root);
  }

  // The page loads this script right after the form and its data: drawing the table at
  // once, before the page is first painted, keeps the prose below from jumping down.
  if (document.getElementById("planner-data") || document.readyState !== "loading") {
    start();
  } else {
    document.addEventListener("DOMContentLoaded", start);
  }
})();
