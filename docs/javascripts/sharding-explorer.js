/* The sharding explorer (docs/tools/sharding-explorer.md): where each block of an array lives
 * under a PartitionSpec on a device mesh, the bytes each device holds, and JAX's own error
 * when the spec cannot place the array. Plain JavaScript, no dependencies, nothing fetched.
 *
 * `ShardingExplorer.layout(c)` is the model: the build asks JAX the same questions for a
 * grid of cases (docs_build/explorer.py) and the browser tests drive this page through every
 * one of them (tests/browser/test_explorer.py). The rest draws the form and the answer.
 */
(function () {
  "use strict";

  var ITEMSIZE = { float32: 4, bfloat16: 2, int8: 1 };
  var MAX_DEVICES = 256;

  function prod(xs) {
    return xs.reduce(function (a, b) { return a * b; }, 1);
  }

  // Python's repr of a tuple: (6, 4), (12,), ().
  function tuple(items) {
    return "(" + items.join(", ") + (items.length === 1 ? "," : "") + ")";
  }

  function quoted(name) {
    return "'" + name + "'";
  }

  // A spec as JAX prints it: P('x', None), P(('x', 'y'),).
  function specText(spec) {
    var parts = spec.map(function (entry) {
      if (entry === null) return "None";
      if (entry.length === 1) return quoted(entry[0]);
      return tuple(entry.map(quoted));
    });
    return "P(" + parts.join(", ") + (parts.length === 1 ? "," : "") + ")";
  }

  function meshText(c) {
    var axes = c.names.map(function (n, i) { return quoted(n) + ": " + c.mesh[i]; });
    var types = c.names.map(function () { return "Explicit"; });
    return "Mesh(" + axes.join(", ") + ", axis_types=" + tuple(types) + ")";
  }

  /* The model. `c`: {shape: [..], mesh: [..], names: [..], spec: [null | [names]], dtype}.
   * Returns {error: "Type: text"} as JAX words it, or {block, bytes, blocks}: the shape
   * of each device's block, its bytes, and for each device in mesh order, [start, stop)
   * of its block along each dimension. */
  function layout(c) {
    var counts = {};
    var uses = [];
    c.spec.forEach(function (entry) {
      (entry || []).forEach(function (name) {
        counts[name] = (counts[name] || 0) + 1;
        if (uses.indexOf(name) < 0) uses.push(name);
      });
    });
    var twice = uses.filter(function (n) { return counts[n] > 1; });
    if (twice.length) {
      var shown = twice.map(function (n) { return "`" + n + "`"; }).sort();
      return {
        error: "DuplicateSpecError: A single NamedSharding spec specification can map " +
          "every mesh axis to at most one positional dimension, but " + specText(c.spec) +
          " has duplicate entries for " + shown.join(", ")
      };
    }
    var size = {};
    c.names.forEach(function (n, i) { size[n] = c.mesh[i]; });
    var ways = c.spec.map(function (entry) {
      return prod((entry || []).map(function (n) { return size[n]; }));
    });
    if (ways.some(function (w) { return w > 1; })) {
      for (var dim = 0; dim < c.shape.length; dim++) {
        if (c.shape[dim] % ways[dim]) {
          return {
            error: "IndivisibleError: NamedSharding(mesh=" + meshText(c) + ", spec=" +
              specText(c.spec) + ", memory_kind=device) implies that array axis " + dim +
              " is partitioned " + ways[dim] + " times, but the dimension size is " +
              c.shape[dim] + " (full shape: " + tuple(c.shape) + ", per-dimension " +
              "tiling factors: " + tuple(ways) + " should evenly divide the shape)"
          };
        }
      }
    }
    var block = c.shape.map(function (n, d) { return n / ways[d]; });
    var devices = prod(c.mesh);
    var blocks = [];
    for (var device = 0; device < devices; device++) {
      // the device's coordinate along each mesh axis, the last axis varying fastest
      var coord = {}, rest = device;
      for (var a = c.names.length - 1; a >= 0; a--) {
        coord[c.names[a]] = rest % c.mesh[a];
        rest = Math.floor(rest / c.mesh[a]);
      }
      blocks.push(c.spec.map(function (entry, d) {
        var index = 0;
        (entry || []).forEach(function (n) { index = index * size[n] + coord[n]; });
        return [index * block[d], (index + 1) * block[d]];
      }));
    }
    return { block: block, bytes: prod(block) * ITEMSIZE[c.dtype], blocks: blocks };
  }

  // ------------------------------------------------ moving an array from one spec to another

  /* What JAX inserts to move an array from `c.spec` to `target`: the collectives of
   * `jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, target))`, as XLA's SPMD
   * partitioner plans them, for "cpu", "tpu" or "gpu". The build compiles a grid of such moves
   * (docs_build/reshard_grid.py) and holds these rules to every one (under Node and in the
   * browser); a move no rule covers gets {steps: null, why}, never a guess.
   *
   * XLA sees a spec as tiles: how many blocks each dimension is cut into, and which block
   * each device holds. Its plans, in the order it tries them, reduced to what the grid
   * confirms:
   *   same blocks on the same devices        nothing
   *   each device's target block inside its own source block      nothing (a local slice)
   *   same tile counts                       one collective-permute of the block
   *   target cut finer, the block elsewhere  one collective-permute of the target block
   *   target cut coarser                     all-gathers of the minor factor of each
   *                                          dimension (per dimension, the last first, on
   *                                          CPU and GPU; one on TPU), after a
   *                                          collective-permute when they would not land on
   *                                          the target's devices
   *   as many tiles, two dimensions trade a factor   one all-to-all (moving the minor
   *                                          factor of one to the minor end of the other),
   *                                          then a collective-permute if needed
   * Bytes are sent per device by the ring model (docs_build/hlo.py); the CPU backend moves
   * bfloat16 as float32.
   *
   * The GPU compiler (jax-cuda12-plugin, for an H100 node of 8) made the CPU's plan for
   * every 8-device move of the grid, but for the dtype. Where the TPU's program gathers
   * several dimensions with a single all-gather over their devices, the GPU's HLO has one
   * all-gather per dimension, the last first, with a transpose between them (the same
   * bytes in all); it gathers the grid's arrays of fewer than TPU_SMALL_GATHER elements
   * too, where the TPU's program has an all-reduce; and its collectives carry bfloat16 as
   * bfloat16, as the TPU's do. */
  var WIRE_ITEMSIZE = { cpu: { float32: 4, bfloat16: 4, int8: 1 }, tpu: ITEMSIZE,
    gpu: ITEMSIZE };
  // Gathers of arrays this small the TPU compiler sometimes runs as all-reduces instead.
  var TPU_SMALL_GATHER = 1024;
  var NOT_MODELLED = "JAX's plan for this move takes more than one kind of step; the " +
    "explorer does not guess it.";

  // ------------------------------------------------------------ sizes, times, programs

  function grouped(n) {
    return n.toLocaleString("en");
  }

  // planner_page.size_text (and the planner's script): bytes in binary units, three or four
  // figures, half up; the same operations, so the same digits.
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

  var TIME_UNITS = [[1.0, " s"], [1e-3, " ms"], [1e-6, " \u00b5s"], [1e-9, " ns"]];

  // planner_page.time_text: three or four figures in the first unit the value reaches.
  function timeText(seconds) {
    if (seconds === 0) return "0 s";
    var unit = TIME_UNITS[TIME_UNITS.length - 1];
    for (var i = 0; i < TIME_UNITS.length; i++) {
      if (seconds >= TIME_UNITS[i][0]) { unit = TIME_UNITS[i]; break; }
    }
    var value = seconds / unit[0];
    var places = value < 10 ? 2 : value < 100 ? 1 : 0;
    var scale = Math.pow(10, places);
    var scaled = Math.floor(value * scale + 0.5);
    var whole = Math.floor(scaled / scale), part = scaled % scale;
    return grouped(whole) + (places ? "." + String(part).padStart(places, "0") : "") + unit[1];
  }

  // The least time one device needs to send a move's bytes: each step after the one before,
  // every byte at the link's published rate (bytes per second out of one chip).
  function moveSeconds(steps, rate) {
    return steps.reduce(function (t, st) { return t + st.wire / rate; }, 0);
  }

  // A program that compiles the move on the backend it runs on and prints its collectives:
  // what a reader runs where the explorer does not name the plan.
  function moveProgram(c, target) {
    var devices = prod(c.mesh);
    var sharding = function (spec) { return "NamedSharding(mesh, " + specText(spec) + ")"; };
    return [
      "import re",
      "import jax",
      "from jax.sharding import NamedSharding, PartitionSpec as P",
      "",
      "jax.config.update('jax_num_cpu_devices', " + devices + ")  # " + devices +
        " devices on a machine with no accelerator",
      "mesh = jax.make_mesh(" + tuple(c.mesh) + ", " + tuple(c.names.map(quoted)) + ")",
      "a = jax.ShapeDtypeStruct(" + tuple(c.shape) + ", '" + c.dtype + "', sharding=" +
        sharding(c.spec) + ")",
      "hlo = jax.jit(lambda a: a, out_shardings=" + sharding(target) +
        ").lower(a).compile().as_text()",
      "print(*[line.strip() for line in hlo.splitlines() if re.search(",
      "    r' (all-gather|all-reduce|all-to-all|reduce-scatter|collective-permute)" +
        "(-start)?\\(', line)], sep='\\n')"
    ].join("\n");
  }

  // A layout (above) as XLA sees it: blocks per dimension, each device's block index.
  function tiling(c, found) {
    return {
      counts: c.shape.map(function (n, d) { return n / found.block[d]; }),
      index: found.blocks.map(function (block) {
        return block.map(function (r, d) { return r[0] / found.block[d]; });
      })
    };
  }

  // Each device's block index once every dimension d is cut k[d] times less finely.
  function coarsened(index, k) {
    return index.map(function (ix) {
      return ix.map(function (i, d) { return Math.floor(i / k[d]); });
    });
  }

  function sameIndex(a, b) {
    return a.every(function (ix, device) {
      return ix.every(function (i, d) { return i === b[device][d]; });
    });
  }

  function reshard(c, target, backend) {
    var from = layout(c);
    if (from.error) return { error: from.error };
    var to = layout({ shape: c.shape, mesh: c.mesh, names: c.names, spec: target,
      dtype: c.dtype });
    if (to.error) return { error: to.error };
    var s = tiling(c, from), t = tiling(c, to), devices = prod(c.mesh);
    var itemsize = WIRE_ITEMSIZE[backend][c.dtype];
    var bytes = function (counts) {
      return prod(c.shape.map(function (n, d) { return n / counts[d]; })) * itemsize;
    };
    var step = function (kind, group, wire) {
      return { kind: kind, group: group, groups: group ? devices / group : devices,
        wire: wire };
    };
    var permute = function (counts) { return step("collective-permute", null, bytes(counts)); };
    var nd = c.shape.length, d, k;
    if (sameIndex(s.index, t.index)) return { steps: [] };
    var finer = true, coarser = true, equal = true;
    for (d = 0; d < nd; d++) {
      if (t.counts[d] % s.counts[d]) finer = false;
      if (s.counts[d] % t.counts[d]) coarser = false;
      if (s.counts[d] !== t.counts[d]) equal = false;
    }
    if (equal) return { steps: [permute(t.counts)] };
    if (finer) {
      k = t.counts.map(function (n, d) { return n / s.counts[d]; });
      return { steps: sameIndex(coarsened(t.index, k), s.index) ? [] : [permute(t.counts)] };
    }
    if (coarser) {
      k = s.counts.map(function (n, d) { return n / t.counts[d]; });
      if (backend === "tpu" && prod(c.shape) < TPU_SMALL_GATHER) {
        return { steps: null, why: "A gather of an array of fewer than " +
          TPU_SMALL_GATHER.toLocaleString("en") + " elements, which the TPU compiler " +
          "sometimes runs as an all-reduce; the explorer does not guess which." };
      }
      var steps = sameIndex(coarsened(s.index, k), t.index) ? [] : [permute(s.counts)];
      var counts = s.counts.slice();
      if (backend === "tpu") {
        var group = prod(k);
        steps.push(step("all-gather", group, (group - 1) * bytes(t.counts) / group));
      } else {
        for (d = nd - 1; d >= 0; d--) {
          if (k[d] === 1) continue;
          counts[d] /= k[d];
          steps.push(step("all-gather", k[d], (k[d] - 1) * bytes(counts) / k[d]));
        }
      }
      return { steps: steps };
    }
    var shrink = [], grow = [];
    for (d = 0; d < nd; d++) {
      if (s.counts[d] > t.counts[d]) shrink.push(d);
      if (s.counts[d] < t.counts[d]) grow.push(d);
    }
    if (shrink.length === 1 && grow.length === 1 && prod(s.counts) === prod(t.counts)) {
      var a = shrink[0], b = grow[0];
      k = s.counts[a] / t.counts[a];
      if (k === Math.floor(k) && t.counts[b] === s.counts[b] * k) {
        var moved = s.index.map(function (ix) {
          var r = ix.slice();
          r[a] = Math.floor(ix[a] / k);
          r[b] = ix[b] * k + (ix[a] % k);
          return r;
        });
        var out = [step("all-to-all", k, (k - 1) * bytes(s.counts) / k)];
        if (!sameIndex(moved, t.index)) out.push(permute(t.counts));
        return { steps: out };
      }
    }
    return { steps: null, why: NOT_MODELLED };
  }

  // -------------------------------------------------------------------- the page's form

  function element(tag, attributes, text) {
    var node = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (k) { node.setAttribute(k, attributes[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function svgElement(tag, attributes, text) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attributes || {}).forEach(function (k) { node.setAttribute(k, attributes[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function sizes(text, what, most) {
    var parts = text.split(/[\s,×]+/).filter(Boolean);
    if (!parts.length || parts.length > most) {
      throw new Error(what + ": give 1 to " + most + " whole numbers, separated by commas.");
    }
    return parts.map(function (p) {
      if (!/^\d+$/.test(p) || +p < 1) {
        throw new Error(what + ": " + p + " is not a whole number of at least 1.");
      }
      return +p;
    });
  }

  function names(text, count) {
    var parts = text.split(/[\s,]+/).filter(Boolean);
    if (parts.length !== count) {
      throw new Error("Axis names: give one name per mesh axis (" + count + ").");
    }
    parts.forEach(function (p) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(p)) {
        throw new Error("Axis names: " + p + " is not a Python identifier.");
      }
    });
    if (new Set(parts).size !== parts.length) {
      throw new Error("Axis names: each axis needs a name of its own.");
    }
    return parts;
  }

  function permutations(items, k) {
    if (k === 0) return [[]];
    var out = [];
    items.forEach(function (item, i) {
      var rest = items.slice(0, i).concat(items.slice(i + 1));
      permutations(rest, k - 1).forEach(function (p) { out.push([item].concat(p)); });
    });
    return out;
  }

  // What one dimension's menu offers: None, each axis, each ordered tuple of axes.
  function choices(axisNames) {
    var out = [null];
    for (var k = 1; k <= axisNames.length; k++) out = out.concat(permutations(axisNames, k));
    return out;
  }

  function choiceValue(entry) {
    return entry === null ? "None" : entry.join("+");
  }

  function choiceLabel(entry) {
    if (entry === null) return "None";
    return entry.length === 1 ? quoted(entry[0]) : tuple(entry.map(quoted));
  }

  function ranges(block) {
    return block.map(function (r) { return r[0] + ":" + r[1]; }).join(", ");
  }

  function deviceList(ids) {
    // 0, 1, 2, 3 -> 0–3; 0, 4 -> 0, 4
    var out = [], start = 0;
    for (var i = 1; i <= ids.length; i++) {
      if (i === ids.length || ids[i] !== ids[i - 1] + 1) {
        out.push(i - start > 2 ? ids[start] + "–" + ids[i - 1] :
          ids.slice(start, i).join(", "));
        start = i;
      }
    }
    return out.join(", ");
  }

  function Explorer(root) {
    this.root = root;
    this.form = root.querySelector("form");
    this.fields = {};
    var self = this;
    ["shape", "mesh", "names", "dtype", "backend"].forEach(function (k) {
      self.fields[k] = self.form.elements[k];
    });
    this.specRow = root.querySelector("[data-explorer=spec]");
    this.targetRow = root.querySelector("[data-explorer=target]");
    this.out = root.querySelector("[data-explorer=answer]");
    this.moveOut = root.querySelector("[data-explorer=move]");
    this.form.addEventListener("input", function (event) {
      if (event.target.name !== "spec" && event.target.name !== "target") self.rebuildSpec();
      self.show();
    });
    this.form.addEventListener("change", function () { self.show(); });
    this.form.addEventListener("submit", function (event) { event.preventDefault(); });
    // the figures are drawn at the answer's width (their text at its size): again when it
    // changes
    window.addEventListener("resize", function () {
      if (self.out.clientWidth !== self.shownWidth) self.show();
    });
    this.rebuildSpec();
    this.show();
  }

  function menuSpec(row) {
    return Array.prototype.map.call(row.querySelectorAll("select"),
      function (s) { return s.value === "None" ? null : s.value.split("+"); });
  }

  // The form's case, or throws an Error whose message says what to change.
  Explorer.prototype.read = function () {
    var shape = sizes(this.fields.shape.value, "Array shape", 4);
    var mesh = sizes(this.fields.mesh.value, "Mesh shape", 3);
    if (prod(mesh) > MAX_DEVICES) {
      throw new Error("Mesh shape: " + prod(mesh) + " devices; the explorer draws up to " +
        MAX_DEVICES + ".");
    }
    var axisNames = names(this.fields.names.value, mesh.length);
    return { shape: shape, mesh: mesh, names: axisNames, spec: menuSpec(this.specRow),
      dtype: this.fields.dtype.value };
  };

  Explorer.prototype.rebuildSpec = function () {
    var shape, axisNames;
    try {
      shape = sizes(this.fields.shape.value, "Array shape", 4);
      axisNames = names(this.fields.names.value,
        sizes(this.fields.mesh.value, "Mesh shape", 3).length);
    } catch (err) {
      return; // show() says what is wrong
    }
    specMenus(this.specRow, "explorer-spec-", "spec", shape, axisNames);
    specMenus(this.targetRow, "explorer-target-", "target", shape, axisNames);
  };

  // One menu per dimension, keeping what was chosen where it still exists.
  function specMenus(row, prefix, name, shape, axisNames) {
    var old = Array.prototype.map.call(row.querySelectorAll("select"),
      function (s) { return s.value; });
    // the page's default spec (data-default: one entry per dimension) where nothing was
    // chosen yet
    var defaults = (row.dataset.default || "").split(" ");
    var key = shape.length + "|" + axisNames.join(",");
    if (row.dataset.key === key) return;
    row.dataset.key = key;
    row.textContent = "";
    row.appendChild(element("span", { "aria-hidden": "true" }, "P("));
    var options = choices(axisNames);
    for (var d = 0; d < shape.length; d++) {
      var id = prefix + d;
      var label = element("label", { for: id, class: "explorer-spec-dim" });
      label.appendChild(element("span", {}, "dimension " + d));
      var select = element("select", { id: id, name: name });
      options.forEach(function (entry) {
        select.appendChild(element("option", { value: choiceValue(entry) }, choiceLabel(entry)));
      });
      [defaults[d], old[d]].forEach(function (value) {
        if (value && Array.prototype.some.call(select.options,
          function (o) { return o.value === value; })) {
          select.value = value;
        }
      });
      label.appendChild(select);
      row.appendChild(label);
    }
    row.appendChild(element("span", { "aria-hidden": "true" }, ")"));
  }

  // The published link rates the page carries (docs_build/explorer.py, from costmodel.LINKS):
  // per backend, each chip's name, network, bytes per second out of one chip and source.
  function linkRates() {
    var source = document.getElementById("explorer-links");
    return source ? JSON.parse(source.textContent) : { tpu: [], gpu: [], per_node: {} };
  }

  // Two figures side by side where the answer is this wide, one above the other below it.
  var TWO_UP = 600;
  var FIGURE_GAP = 24;

  Explorer.prototype.figureWidth = function () {
    var width = this.out.clientWidth || 640;
    return width >= TWO_UP ? Math.floor((width - FIGURE_GAP) / 2) : width;
  };

  Explorer.prototype.show = function () {
    this.out.textContent = "";
    this.moveOut.textContent = "";
    this.shownWidth = this.out.clientWidth;
    var c;
    try {
      c = this.read();
    } catch (err) {
      this.out.appendChild(element("p", { class: "explorer-input-error", role: "alert" },
        err.message));
      return;
    }
    var found = layout(c);
    var target = menuSpec(this.targetRow);
    this.showMove(c, found, target);
    var code = element("p");
    code.appendChild(element("code", { "data-explorer": "spec-text" }, specText(c.spec)));
    this.out.appendChild(code);
    if (found.error) {
      this.out.appendChild(element("p", {}, "JAX refuses this spec:"));
      this.out.appendChild(element("pre", { "data-explorer": "error" }, found.error));
      return;
    }
    var copies = prod(c.mesh) / (prod(c.shape) / prod(found.block));
    var summary = element("p", { "data-explorer": "summary", "data-bytes": found.bytes });
    summary.textContent = "Each device holds a block of " + tuple(found.block) + ", " +
      sizeText(found.bytes) + " of " + c.dtype + "; each block is on " +
      copies + (copies === 1 ? " device." : " devices.");
    this.out.appendChild(summary);
    var figures = element("div", { class: "explorer-figures" });
    var width = this.figureWidth();
    figures.appendChild(this.picture(c, found, "source", width));
    var moved = { shape: c.shape, mesh: c.mesh, names: c.names, spec: target, dtype: c.dtype };
    var there = layout(moved);
    if (!there.error) figures.appendChild(this.picture(moved, there, "target", width));
    this.out.appendChild(figures);
    this.out.appendChild(this.table(c, found));
  };

  // The move from the spec to the target: JAX's error, nothing, the steps, or "not known".
  Explorer.prototype.showMove = function (c, found, target) {
    var backend = this.fields.backend.value;
    var out = this.moveOut;
    var head = element("p");
    head.appendChild(document.createTextNode("From "));
    head.appendChild(element("code", {}, specText(c.spec)));
    head.appendChild(document.createTextNode(" to "));
    head.appendChild(element("code", { "data-explorer": "target-text" }, specText(target)));
    head.appendChild(document.createTextNode(", compiled for " +
      { cpu: "the CPU backend:", tpu: "a TPU:", gpu: "an H100 GPU:" }[backend]));
    out.appendChild(head);
    var move = reshard(c, target, backend);
    if (move.error) {
      if (found.error) {
        out.appendChild(element("p", { "data-explorer": "move-refused" },
          "The source spec is refused (above)."));
      } else {
        out.appendChild(element("p", {}, "JAX refuses the target spec:"));
        out.appendChild(element("pre", { "data-explorer": "move-error" }, move.error));
      }
      return;
    }
    if (backend === "cpu" && c.dtype === "bfloat16") {
      out.appendChild(element("p", { "data-explorer": "cpu-bfloat16" }, "The CPU backend " +
        "sends bfloat16 as float32: twice the bytes a TPU or an H100 sends for the same move."));
    }
    if (move.steps === null) {
      out.appendChild(element("p", { "data-explorer": "move-unknown" }, move.why));
      out.appendChild(element("p", {}, "To see JAX's plan, run this program: it compiles " +
        "the move for the backend it runs on and prints the collectives it inserts."));
      var pre = element("pre", { class: "explorer-program" });
      pre.appendChild(element("code", { "data-explorer": "move-program" },
        moveProgram(c, target)));
      out.appendChild(pre);
      return;
    }
    if (!move.steps.length) {
      out.appendChild(element("p", { "data-explorer": "move-none" }, "Nothing is sent: " +
        "each device already holds its block, or cuts it from the block it holds."));
      return;
    }
    var devices = prod(c.mesh);
    var links = linkRates();
    var chips = backend === "gpu" && devices > links.per_node.gpu ? [] :
      links[backend] || [];
    var table = element("table", { "data-explorer": "move-steps" });
    var headRow = element("tr");
    ["step", "collective", "devices per group × groups", "sent per device"]
      .concat(chips.map(function (l) { return "at least, " + l.label + " " + l.network; }))
      .forEach(function (t) { headRow.appendChild(element("th", { scope: "col" }, t)); });
    table.appendChild(element("thead")).appendChild(headRow);
    var body = element("tbody"), total = 0;
    move.steps.forEach(function (st, i) {
      var row = element("tr", { "data-explorer": "move-step", "data-kind": st.kind,
        "data-group": st.group === null ? "" : st.group, "data-groups": st.groups,
        "data-wire": st.wire });
      row.appendChild(element("th", { scope: "row" }, String(i + 1)));
      row.appendChild(element("td", {}, st.kind));
      row.appendChild(element("td", {}, st.group === null ? st.groups + " pairs" :
        st.group + " × " + st.groups));
      row.appendChild(element("td", {}, sizeText(st.wire)));
      chips.forEach(function (l) {
        row.appendChild(element("td", {}, timeText(st.wire / l.rate)));
      });
      body.appendChild(row);
      total += st.wire;
    });
    table.appendChild(body);
    // in the theme's scrolling box (a11y.js names it where it scrolls)
    var wrap = element("div", { class: "md-typeset__scrollwrap" });
    wrap.appendChild(element("div", { class: "md-typeset__table" })).appendChild(table);
    out.appendChild(wrap);
    out.appendChild(element("p", { "data-explorer": "move-total", "data-wire": total },
      "In all, " + sizeText(total) + " sent per device (ring model)."));
    var time = element("p", { "data-explorer": "move-time" });
    if (!chips.length) {
      time.textContent = backend === "cpu" ?
        "No time bound: a CPU has no published link rate. Pick a TPU or a GPU." :
        "No time bound: a mesh of more than " + links.per_node.gpu + " GPUs spans NVLink " +
        "nodes, and the explorer does not work out which bytes cross InfiniBand.";
      out.appendChild(time);
      return;
    }
    var seconds = {};
    chips.forEach(function (l) { seconds[l.key] = moveSeconds(move.steps, l.rate); });
    time.dataset.seconds = JSON.stringify(seconds);
    time.appendChild(document.createTextNode("A lower bound on the time, every byte at the " +
      "published rate out of one chip, " + (backend === "tpu" ? "within one slice" :
      "within one node") + ": "));
    chips.forEach(function (l, i) {
      if (i) time.appendChild(document.createTextNode("; "));
      time.appendChild(document.createTextNode(timeText(seconds[l.key]) + " on " + l.label +
        " (" + l.network + ", " + l.rate / 1e9 + " GB/s, from "));
      time.appendChild(element("a", { href: l.url }, l.source));
      time.appendChild(document.createTextNode(")"));
    });
    time.appendChild(document.createTextNode(". A real move is slower."));
    out.appendChild(time);
  };

  Explorer.prototype.table = function (c, found) {
    var details = element("details", { "data-explorer": "devices" });
    details.appendChild(element("summary", {}, "Every device's block (" + found.blocks.length +
      " devices)"));
    var table = element("table");
    var head = element("tr");
    ["device", "mesh position"].concat(["indices"]).forEach(function (t) {
      head.appendChild(element("th", { scope: "col" }, t));
    });
    table.appendChild(element("thead")).appendChild(head);
    var body = element("tbody");
    found.blocks.forEach(function (block, device) {
      var row = element("tr");
      var coord = [], rest = device;
      for (var a = c.names.length - 1; a >= 0; a--) {
        coord.unshift(c.names[a] + "=" + (rest % c.mesh[a]));
        rest = Math.floor(rest / c.mesh[a]);
      }
      row.appendChild(element("th", { scope: "row" }, String(device)));
      row.appendChild(element("td", {}, coord.join(" ")));
      row.appendChild(element("td", { "data-explorer": "indices" }, ranges(block)));
      body.appendChild(row);
    });
    table.appendChild(body);
    details.appendChild(table);
    return details;
  };

  // How one dimension is cut, in words: "dimension 1 (4096), cut by 'y' into 4".
  function axisWords(c, d, ways) {
    var entry = c.spec[d];
    var text = "dimension " + d + " (" + c.shape[d] + ")";
    if (!entry) return text + ", whole";
    return text + ", cut by " + choiceLabel(entry) + " into " + ways[d];
  }

  // The figures' proportions: the longer side at most this many times the shorter.
  var MAX_RATIO = 8;
  var FONT = 12; // px: every text of the figures at its size, never scaled down

  /* The blocks as a picture, `width` pixels wide and drawn at that size: the last two
   * dimensions as a grid of blocks (rows, columns) in the array's proportions, the
   * dimensions before them as panels, each block labelled with the devices that hold it
   * and coloured by the first of them, so that copies share a colour and a device keeps
   * its colour from the source to the target. */
  Explorer.prototype.picture = function (c, found, role, width) {
    var nd = c.shape.length;
    var rowsDim = nd >= 2 ? nd - 2 : -1, colsDim = nd - 1;
    var ways = found.block.map(function (b, d) { return c.shape[d] / b; });
    var holders = {};
    found.blocks.forEach(function (block, device) {
      var key = block.map(function (r) { return r[0]; }).join(",");
      (holders[key] = holders[key] || []).push(device);
    });
    var panelDims = [];
    for (var d = 0; d < nd - 2; d++) panelDims.push(d);
    var panels = [[]];
    panelDims.forEach(function (d) {
      var next = [];
      panels.forEach(function (p) {
        for (var i = 0; i < ways[d]; i++) next.push(p.concat([i]));
      });
      panels = next;
    });
    var MAX_PANELS = 16;
    var shownPanels = panels.slice(0, MAX_PANELS);
    var rows = rowsDim >= 0 ? ways[rowsDim] : 1, cols = ways[colsDim];
    // the panels' size: the array's last two dimensions in proportion (within MAX_RATIO)
    var gap = 12, title = panelDims.length ? FONT + 8 : 0;
    var perLine = Math.min(shownPanels.length, width >= 480 ? 4 : 2);
    var room = Math.floor((width - gap * (perLine - 1)) / perLine);
    var tall = shownPanels.length > 1 ? 160 : 240;
    var ratio = rowsDim >= 0 ? c.shape[colsDim] / c.shape[rowsDim] : null;
    var clamped = ratio !== null && (ratio > MAX_RATIO || ratio < 1 / MAX_RATIO);
    var panelW, panelH;
    if (ratio === null) {
      panelW = room;
      panelH = 2 * FONT + 16; // a 1-D array: a strip
    } else {
      ratio = Math.min(MAX_RATIO, Math.max(1 / MAX_RATIO, ratio));
      panelW = room;
      panelH = room / ratio;
      if (panelH > tall) {
        panelH = tall;
        panelW = tall * ratio;
      }
    }
    var cellW = panelW / cols, cellH = panelH / rows;
    var lines = Math.ceil(shownPanels.length / perLine);
    var height = Math.ceil(lines * (panelH + title + gap));
    var order = Object.keys(holders);
    var svg = svgElement("svg", {
      viewBox: "0 0 " + width + " " + height, width: width, height: height,
      class: "explorer-picture", role: "img",
      "aria-label": "Blocks of the " + tuple(c.shape) + " array under " + specText(c.spec) +
        ": " + order.length + " distinct blocks over " + found.blocks.length + " devices."
    });
    var stroke = Math.min(cellW, cellH) >= 12 ? 2 : Math.min(cellW, cellH) >= 4 ? 1 : 0;
    shownPanels.forEach(function (panel, p) {
      var x0 = (p % perLine) * (panelW + gap);
      var y0 = title + Math.floor(p / perLine) * (panelH + title + gap);
      if (panelDims.length) {
        var name = panel.map(function (i, k) {
          var b = found.block[panelDims[k]];
          return (i * b) + ":" + ((i + 1) * b);
        }).join(", ");
        svg.appendChild(svgElement("text", { x: x0, y: y0 - 6, class: "explorer-panel" },
          "[" + name + ", …]"));
      }
      for (var r = 0; r < rows; r++) {
        for (var k = 0; k < cols; k++) {
          var start = [];
          for (var d = 0; d < nd; d++) {
            var i = d < panelDims.length ? panel[d] : d === rowsDim ? r : k;
            start.push(i * found.block[d]);
          }
          var key = start.join(",");
          var ids = holders[key] || [];
          var g = svgElement("g", { class: "explorer-block explorer-c" + (ids[0] % 8) });
          g.appendChild(svgElement("rect", {
            x: x0 + k * cellW, y: y0 + r * cellH, width: cellW, height: cellH,
            style: "stroke-width: " + stroke + "px"
          }));
          // the devices that hold it (0–3), or how many where that does not fit
          var label = deviceList(ids);
          if (cellW < label.length * 7.5 + 4) label = ids.length + "×";
          if (cellW >= label.length * 7.5 + 4 && cellH >= FONT + 4) {
            g.appendChild(svgElement("text", {
              x: x0 + k * cellW + cellW / 2, y: y0 + r * cellH + cellH / 2 + FONT / 3,
              "text-anchor": "middle"
            }, label));
          }
          g.appendChild(svgElement("title", {}, "block at " + tuple(start) + ": devices " +
            deviceList(ids)));
          svg.appendChild(g);
        }
      }
    });
    var figure = element("figure", { class: "explorer-figure",
      "data-explorer": "figure-" + role, style: "width: " + width + "px" });
    var heading = element("p", { class: "explorer-figure-title" });
    heading.appendChild(document.createTextNode(role === "source" ? "Now, " : "Moved to "));
    heading.appendChild(element("code", {}, specText(c.spec)));
    heading.appendChild(document.createTextNode(": blocks of " + tuple(found.block) + ", " +
      sizeText(found.bytes)));
    figure.appendChild(heading);
    var axes = element("p", { class: "explorer-axes", "data-explorer": "axes" });
    if (rowsDim >= 0) {
      axes.appendChild(element("span", {}, "↓ rows: " + axisWords(c, rowsDim, ways)));
      axes.appendChild(element("br"));
    }
    axes.appendChild(element("span", {}, "→ columns: " + axisWords(c, colsDim, ways)));
    if (panelDims.length) {
      axes.appendChild(element("br"));
      axes.appendChild(element("span", {}, "panels: " + panelDims.map(function (d) {
        return axisWords(c, d, ways);
      }).join("; ")));
    }
    figure.appendChild(axes);
    figure.appendChild(svg);
    var devices = found.blocks.length;
    var caption = (ratio === null ? "A 1-D array, drawn as a strip. " : clamped ?
      "Not to scale: one side is more than " + MAX_RATIO + " times the other. " :
      "Drawn to the array's proportions. ") + (role !== "source" ?
      "Labels and colours as in the first figure." :
      "Each rectangle is a block, labelled with the devices that hold it (or how many, " +
      "where they do not fit) and coloured as the first of them: copies share a colour, " +
      "and a device keeps its colour in the target" + (devices > 8 ? "; colours repeat " +
      "every 8 devices (devices 0 and 8 share one)." : "."));
    if (panels.length > MAX_PANELS) {
      caption += " The first " + MAX_PANELS + " of " + panels.length + " panels.";
    }
    figure.appendChild(element("figcaption", {}, caption));
    return figure;
  };

  var api = { layout: layout, reshard: reshard, specText: specText, sizeText: sizeText,
    timeText: timeText, moveSeconds: moveSeconds, moveProgram: moveProgram };
  // Under Node (the build checks the model against the compiled grid) there is no page.
  if (typeof module === "object" && module.exports) {
    module.exports = api;
    return;
  }
  window.ShardingExplorer = api;

  function start() {
    var root = document.getElementById("explorer-app");
    if (root) {
      root.hidden = false;
      api.page = new Explorer(root);
    }
  }

  // The page loads this script right after the form: draw at once, before the first paint,
  // so that nothing below moves when the explorer appears (layout shift, Lighthouse).
  if (document.getElementById("explorer-app") || document.readyState !== "loading") {
    start();
  } else {
    document.addEventListener("DOMContentLoaded", start);
  }
})();
