/* The strategy planner (docs/tools/strategy-planner.md): for a transformer, a device count
 * and the memory of a device, every layout of the devices with its state and wire bytes per
 * device and the formula behind each. Plain JavaScript, no dependencies, nothing fetched.
 *
 * The arithmetic is docs_build/planner.py's, operation for operation, so that the page
 * shows the same numbers to the byte; the constants (optimizers, tiles, formulas, the
 * compiled plans) come from Python, written into the page by the build as JSON
 * (#planner-data). tests/browser/test_planner.py drives the form through a grid of inputs
 * and compares every figure with Python's.
 */
(function () {
  "use strict";

  var DATA;
  var SIZES = ["vocab", "d_model", "heads", "mlp", "layers", "seq", "batch", "microbatches"];
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
    return "'" + text + "'";
  }

  // ------------------------------------------------------------ the cost model

  function ring(kind, n, full) {
    if (n === 1) return 0;
    if (kind === "all-reduce") return 2 * (n - 1) * full / n;
    return (n - 1) * full / n; // all-gather, reduce-scatter
  }

  function makeModel(raw) {
    var model = {};
    SIZES.forEach(function (name) {
      var text = raw[name];
      var value = Number(text);
      if (!/^\s*\d+\s*$/.test(text) || value < 1) {
        throw new CostModelError(name + " must be a positive integer, not " + repr(text));
      }
      model[name] = exact(value);
    });
    if (model.d_model % model.heads) {
      throw new CostModelError("d_model " + model.d_model + " does not split into " +
        model.heads + " heads: make d_model a multiple of heads");
    }
    model.optimizer = raw.optimizer;
    model.param_bytes = Number(raw.param_bytes);
    model.remat = raw.remat;
    model.kv = model.heads; // the form's models: one key/value head per query head
    var d = model.d_model;
    model.layerMatrices = exact(4 * d * d + 2 * d * model.mlp);
    model.params = exact(model.layers * (model.layerMatrices + 2 * d) + 2 * model.vocab * d + d);
    return model;
  }

  function layout(name, data, fsdp, tensor, stages) {
    return { name: name, data: data, fsdp: fsdp, tensor: tensor, stages: stages };
  }

  // planner.layouts: data, FSDP, tensor, each 2-D (data x tensor), a pipeline.
  function layouts(devices) {
    var rows = [
      layout("data", devices, 1, 1, 1),
      layout("FSDP", 1, devices, 1, 1),
      layout("tensor", 1, 1, devices, 1)
    ];
    var splits = [];
    for (var k = 2; k <= idiv(devices, 2); k++) if (devices % k === 0) splits.push(k);
    splits.forEach(function (t) { rows.push(layout("2-D", devices / t, 1, t, 1)); });
    splits.forEach(function (f) { rows.push(layout("data x FSDP", devices / f, f, 1, 1)); });
    splits.forEach(function (t) { rows.push(layout("FSDP x tensor", 1, devices / t, t, 1)); });
    if (devices > 1) rows.push(layout("pipeline", 1, 1, 1, devices));
    return rows;
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
      }
      return found;
    }
    var rows = l.data * l.fsdp;
    if (model.batch % rows) {
      found.push("a batch of " + model.batch + " does not split over data x fsdp = " + rows +
        " devices: use a multiple of " + rows);
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
    var L = model.layers, f = l.fsdp, t = l.tensor, k = d / h;
    return [
      [v / t, d / f], [L, d / f], [L, 3, d / f, h / t, k], [L, h / t, k, d / f],
      [L, d / f], [L, d / f, m / t], [L, m / t, d / f], [d / f], [d / f, v / t]
    ];
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
    if (l.stages > 1) {
      var stage = exact(idiv(model.layers, l.stages) * (model.layerMatrices + 2 * d));
      var heldStage = exact(stage + model.vocab * d + d);
      return exact(heldStage * copies + DATA.int32 * scalars +
        DATA.int32 * model.batch * (model.seq + 1));
    }
    var f = l.fsdp, t = l.tensor;
    var splitBoth = exact(model.layers * model.layerMatrices + 2 * model.vocab * d);
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
    var F32 = DATA.f32;
    var d = model.d_model, v = model.vocab, layers = model.layers;
    if (l.stages > 1) {
      var m = model.microbatches, s = l.stages;
      var micro = exact(idiv(model.batch, m) * model.seq * d * plan.activations);
      return [["pipeline wire", exact(2 * (m + s - 1) * micro)]];
    }
    var a = l.data, f = l.fsdp, t = l.tensor;
    var remat = model.remat ? 1 : 0;
    var matrices = model.layerMatrices / t;
    // q or out: d^2; k and v: 2 d^2 (one key/value head per query head, as the form's
    // models have); the MLP's matrices; the head (planner._matrix_sizes)
    var size = { "q or out": exact(d * d) / t, kv: exact(2 * d * d) / t,
      mlp: exact(d * model.mlp) / t, head: exact(d * v) / t };
    // the backward pass's gathers (with remat): the regathered matrices in float32
    var regathered = plan.gather * matrices;
    plan.regather.forEach(function (name) { regathered += (F32 - plan.gather) * size[name]; });
    var headWidth = plan.head_gather === null ? plan.gather : plan.head_gather;
    var gathers = layers * ring("all-gather", f, plan.gather * matrices + F32 * 2 * d) +
      remat * layers * ring("all-gather", f, regathered + F32 * 2 * d) +
      ring("all-gather", f, exact(F32 * v * d) / t + exact(headWidth * d * v) / t + F32 * d);
    var scattered = plan.scatter.slice();
    var summed = 0;
    DATA.matrices.forEach(function (name) {
      var at = scattered.indexOf(name);
      if (at >= 0) scattered.splice(at, 1);
      var times = name === "head" ? 1 : layers;
      summed += times * gradientSum(at >= 0, l, plan.gradients * size[name]);
    });
    var gradients = summed + layers * ring("all-reduce", a * f, F32 * 2 * d) +
      gradientSum(plan.embedding_scatter, l, exact(F32 * v * d) / t) +
      ring("all-reduce", a * f, F32 * d);
    var tokens = model.batch / (a * f) * model.seq;
    var block = tokens * d;
    function sums(width) { return ring("all-reduce", t, width * block); }
    var perBlock = 1 + plan.input_sums + remat; // planner.input_sums
    var activations = layers * (sums(plan.block_sum) + perBlock * sums(plan.activations)) +
      sums(F32) + sums(plan.activations) + 3 * ring("all-reduce", t, F32 * tokens);
    return [
      ["gathers", gathers],
      ["gradients", gradients],
      ["activations", activations],
      ["loss", ring("all-reduce", a * f * t, F32)]
    ];
  }

  // str.format's {name} fields, as planner_page fills the same templates.
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, name) { return String(values[name]); });
  }

  // planner_page.basis: whether a compiled program of the grid checks the row, and the
  // words the page shows: what checked it, or what it is extrapolated from and to.
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
    if (c.devices === 1) what.push(words["one device"]);
    else if (c.devices !== cov.devices) what.push(fill(words.devices, { devices: c.devices }));
    if (index === null) what.push(words.size);
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
        return [true, fill(words.checked, { target: target.label })];
      }
      what.push(held.length ? words.plan : words.mesh);
    }
    return [false, fill(words.extrapolated, {
      devices: cov.devices,
      target: target ? target.label : words["any target"],
      sizes: cov.sizes.length,
      what: what.join(words.and)
    })];
  }

  // planner.plan_table, and the layouts it leaves out with check()'s reason; each row
  // with planner_page.basis.
  function planTable(c) {
    var model = c.model, devices = c.devices, memory = c.memory, plan = c.plan;
    var backend = c.backend;
    if (!(memory > 0)) {
      throw new CostModelError("memory per device must be positive, not " + memory);
    }
    var rows = [], leftOut = [];
    layouts(devices).forEach(function (l) {
      var state;
      try {
        state = stateBytes(model, l, backend);
      } catch (err) {
        if (!(err instanceof CostModelError)) throw err;
        leftOut.push({ layout: l, reason: err.message });
        return;
      }
      var terms = wireTerms(model, l, plan);
      var found = basis(c, l);
      rows.push({
        layout: l,
        state: state,
        wire: pysum(terms.map(function (x) { return x[1]; })),
        terms: terms,
        fits: state <= memory,
        checked: found[0],
        basis: found[1]
      });
    });
    return { rows: rows, leftOut: leftOut };
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

  function meshText(l) {
    return l.stages > 1 ? l.stages + " stages" : l.data + " × " + l.fsdp + " × " + l.tensor;
  }

  function element(tag, attributes, text) {
    var node = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (k) { node.setAttribute(k, attributes[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function Planner(root) {
    this.root = root;
    this.form = root.querySelector("form");
    this.summary = root.querySelector("[data-planner=summary]");
    this.out = root.querySelector("[data-planner=answer]");
    var self = this;
    var f = this.form.elements;
    Object.keys(DATA.optimizers).sort().forEach(function (name) {
      f.optimizer.appendChild(element("option", { value: name }, name));
    });
    Object.keys(DATA.plans).forEach(function (name) {
      f.plan.appendChild(element("option", { value: name }, DATA.plans[name].label));
    });
    Object.keys(DATA.defaults).forEach(function (name) {
      var field = f[name];
      if (!field) return;
      if (field.type === "checkbox") field.checked = DATA.defaults[name];
      else field.value = String(DATA.defaults[name]);
    });
    this.form.addEventListener("input", function () { self.show(); });
    this.form.addEventListener("change", function () { self.show(); });
    this.form.addEventListener("submit", function (event) { event.preventDefault(); });
    this.show();
  }

  Planner.prototype.read = function () {
    var f = this.form.elements;
    var raw = {};
    SIZES.forEach(function (name) { raw[name] = f[name].value; });
    raw.optimizer = f.optimizer.value;
    raw.param_bytes = f.param_bytes.value;
    raw.remat = f.remat.checked;
    var model = makeModel(raw);
    var memoryText = f.memory.value.trim();
    var gib = memoryText === "" ? NaN : Number(memoryText);
    if (isNaN(gib)) {
      throw new CostModelError("memory per device must be a number of GiB, not " +
        repr(memoryText));
    }
    var memory = gib * DATA.gib;
    if (!(memory > 0)) {
      throw new CostModelError("memory per device must be positive, not " + memory);
    }
    var devicesText = f.devices.value;
    if (!/^\s*\d+\s*$/.test(devicesText) || Number(devicesText) < 1) {
      throw new CostModelError("devices must be a positive integer, not " + repr(devicesText));
    }
    var devices = Number(devicesText);
    if (devices > MAX_DEVICES) {
      throw new CostModelError("devices: the planner lists layouts for up to " +
        grouped(MAX_DEVICES) + " devices");
    }
    return { model: model, devices: devices, memory: memory, gib: gib,
      plan: DATA.plans[f.plan.value], planName: f.plan.value, backend: f.backend.value };
  };

  // Draws the answer again only when a field changed: a field's `change` event (on leaving
  // it) must not replace the table under the reader's focus.
  Planner.prototype.show = function () {
    var key = Array.prototype.map.call(this.form.elements, function (field) {
      return field.type === "checkbox" ? field.checked : field.value;
    }).join("|");
    if (key === this.shown) return;
    this.shown = key;
    this.out.textContent = "";
    var c, found;
    try {
      c = this.read();
      found = planTable(c);
    } catch (err) {
      if (!(err instanceof CostModelError)) throw err;
      this.summary.textContent = "";
      this.out.appendChild(element("p", { class: "planner-input-error", role: "alert" },
        err.message));
      return;
    }
    var fitting = found.rows.filter(function (r) { return r.fits; }).length;
    this.summary.textContent = found.rows.length ?
      found.rows.length + " layouts divide this model; the state of " + fitting + " fits in " +
      c.gib + " GiB per device." :
      "No layout of " + c.devices + " devices divides this model: see why below.";
    this.out.appendChild(this.legend(c));
    if (found.rows.length) this.out.appendChild(this.table(c, found.rows));
    if (found.leftOut.length) this.out.appendChild(this.leftOut(found.leftOut));
  };

  Planner.prototype.legend = function (c) {
    var m = c.model, p = c.plan, opt = DATA.optimizers[m.optimizer];
    var text = "With L = " + m.layers + ", d = " + m.d_model + ", m = " + m.mlp + ", V = " +
      m.vocab + ", S = " + m.seq + ", B = " + m.batch + ", M = " + m.microbatches +
      ", p = " + m.param_bytes + ", slots = " + opt[0] + ", scalars = " + opt[1] +
      ", remat = " + (m.remat ? 1 : 0) + "; the plan moves gathered weights in w_g = " +
      p.gather + " bytes, gradients in w_r = " + p.gradients + ", activations in w_a = " +
      p.activations + (p.departures.length ? " (" + p.departures.join("; ") + ")" : "") +
      ". " + grouped(m.params) + " parameters.";
    return element("p", { class: "planner-legend", "data-planner": "legend" }, text);
  };

  Planner.prototype.table = function (c, rows) {
    var wrap = element("div", { class: "planner-scroll", tabindex: "0", role: "region",
      "aria-label": "Layouts and their figures" });
    var table = element("table", { class: "planner-table" });
    var head = element("tr");
    ["layout", "mesh (data × fsdp × tensor)", "state per device", "state fits",
      "wire per step per device", "figures", "formulas"].forEach(function (t) {
      head.appendChild(element("th", { scope: "col" }, t));
    });
    table.appendChild(element("thead")).appendChild(head);
    var body = element("tbody");
    var stateKey = c.backend === "tpu" ? "state, tpu" : "state";
    rows.forEach(function (r) {
      var l = r.layout;
      var row = element("tr", {
        "data-planner": "row", "data-layout": l.name,
        "data-mesh": [l.data, l.fsdp, l.tensor, l.stages].join(","),
        "data-state": String(r.state), "data-wire": String(r.wire),
        "data-fits": String(r.fits), "data-checked": String(r.checked)
      });
      row.appendChild(element("th", { scope: "row" }, l.name));
      row.appendChild(element("td", {}, meshText(l)));
      row.appendChild(element("td", { "data-planner": "state" }, sizeText(r.state)));
      row.appendChild(element("td", {}, r.fits ? "yes" : "no"));
      row.appendChild(element("td", { "data-planner": "wire" }, sizeText(r.wire)));
      row.appendChild(element("td", { "data-planner": "basis" }, r.basis));
      var cell = element("td");
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
      cell.appendChild(details);
      row.appendChild(cell);
      body.appendChild(row);
    });
    table.appendChild(body);
    wrap.appendChild(table);
    return wrap;
  };

  Planner.prototype.leftOut = function (items) {
    var box = element("div", { "data-planner": "left-out" });
    box.appendChild(element("p", {}, "Left out, because the model does not divide:"));
    var list = element("ul");
    items.forEach(function (item) {
      var li = element("li", { "data-layout": item.layout.name,
        "data-mesh": [item.layout.data, item.layout.fsdp, item.layout.tensor,
          item.layout.stages].join(",") });
      li.appendChild(element("strong", {}, item.layout.name + " (" + meshText(item.layout) +
        "): "));
      li.appendChild(element("span", { "data-planner": "reason" }, item.reason));
      list.appendChild(li);
    });
    box.appendChild(list);
    return box;
  };

  window.StrategyPlanner = {
    planTable: planTable, makeModel: makeModel, sizeText: sizeText, pysum: pysum,
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
