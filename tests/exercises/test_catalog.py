"""Plausible wrong answers to every exercise fail, each with the message meant for it.

Messages are compared with runs of whitespace made single, as the grader wraps lines.
"""

import pytest

from snippets.exercises.catalog import EXERCISES

# exercise -> [(what the mistake is, the file, what the grader must say)]
WRONG = {
    "shard_map_double": [
        (
            "no shard_map",
            """
            def shard_map_double(x):
                return x * 2
            """,
            [
                "it does not use jax.shard_map: the traced program (jax.make_jaxpr) has no "
                "shard_map."
            ],
        ),
        (
            "squares instead of doubles",
            """
            import jax
            from jax import P
            from jax.sharding import AxisType


            def shard_map_double(x):
                mesh = jax.make_mesh((1,), ("data",), axis_types=(AxisType.Auto,))
                return jax.shard_map(
                    lambda y: y * y, mesh=mesh, in_specs=P("data"), out_specs=P("data")
                )(x)
            """,
            [
                "wrong values: 7 of 8 differ. The first is at index 0: expected -4, got 4."
            ],
        ),
        (
            "replicated in_specs and out_specs: every device does all the work",
            """
            import jax
            from jax import P
            from jax.sharding import AxisType


            def shard_map_double(x):
                mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
                return jax.shard_map(
                    lambda y: y * 2.0, mesh=mesh, in_specs=P(), out_specs=P()
                )(x)
            """,
            ["its shard_map gives every device the whole input"],
        ),
        (
            "a shard_map computed, then thrown away",
            """
            import jax
            from jax import P
            from jax.sharding import AxisType


            def shard_map_double(x):
                mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
                jax.shard_map(
                    lambda y: y * 2.0, mesh=mesh, in_specs=P("data"), out_specs=P("data")
                )(x)
                return x * 2.0
            """,
            ["what its shard_map computes never reaches the result"],
        ),
    ],
    "shard_map_vs_vmap": [
        (
            "stacked along the wrong axis",
            """
            import jax
            import jax.numpy as jnp
            from jax import P
            from jax.sharding import AxisType


            def shard_map_vs_vmap(x):
                row = jax.vmap(lambda r: jnp.sum(r**2))
                mesh = jax.make_mesh((8,), ("rows",), axis_types=(AxisType.Auto,))
                sm = jax.shard_map(row, mesh=mesh, in_specs=P("rows"),
                                   out_specs=P("rows"))(x)
                return jnp.stack([sm, row(x)], axis=1)
            """,
            [
                "wrong shape: expected (2, 8), got (8, 2): stack the two results along a "
                "new first axis (axis=0), one row per method."
            ],
        ),
        (
            "vmap twice",
            """
            import jax
            import jax.numpy as jnp


            def shard_map_vs_vmap(x):
                row = jax.vmap(lambda r: jnp.sum(r**2))
                return jnp.stack([row(x), row(x)])
            """,
            ["it does not use jax.shard_map"],
        ),
        (
            "all 8 devices whatever B",
            """
            import jax
            import jax.numpy as jnp
            from jax import P
            from jax.sharding import AxisType


            def shard_map_vs_vmap(x):
                row = jax.vmap(lambda r: jnp.sum(r**2))
                mesh = jax.make_mesh((8,), ("rows",), axis_types=(AxisType.Auto,))
                sm = jax.shard_map(row, mesh=mesh, in_specs=P("rows"),
                                   out_specs=P("rows"))(x)
                return jnp.stack([row(x), sm])
            """,
            ["build it from as many devices as divide B"],
        ),
        (
            "the shard_map result discarded, vmap returned twice",
            """
            import jax
            import jax.numpy as jnp
            from jax import P
            from jax.sharding import AxisType


            def shard_map_vs_vmap(x):
                row = jax.vmap(lambda r: jnp.sum(r**2))
                k = max(k for k in range(1, 9) if x.shape[0] % k == 0)
                mesh = jax.make_mesh(
                    (k,), ("rows",), axis_types=(AxisType.Auto,), devices=jax.devices()[:k]
                )
                jax.shard_map(row, mesh=mesh, in_specs=P("rows"), out_specs=P("rows"))(x)
                return jnp.stack([row(x), row(x)])
            """,
            ["what its shard_map computes never reaches the result"],
        ),
    ],
    "shard_map_simulate": [
        (
            "a new model for every shard",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx


            def shard_map_simulate(seed, x, num_shards, features):
                n, f = int(num_shards), int(features)
                rngs = nnx.Rngs(int(seed))
                chunk = x.shape[0] // n
                outs = []
                for i in range(n):
                    model = nnx.Linear(x.shape[-1], f, rngs=rngs)
                    part = jax.lax.dynamic_slice_in_dim(x, i * chunk, chunk, axis=0)
                    outs.append(model(part))
                return jnp.concatenate(outs, axis=0).reshape(-1)
            """,
            [
                "The first shard's outputs are right and a later shard's are not. Do all "
                "shards use the same model, built once before the loop?"
            ],
        ),
        (
            "concatenated along the features",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx


            def shard_map_simulate(seed, x, num_shards, features):
                n, f = int(num_shards), int(features)
                model = nnx.Linear(x.shape[-1], f, rngs=nnx.Rngs(int(seed)))
                chunk = x.shape[0] // n
                outs = [
                    model(jax.lax.dynamic_slice_in_dim(x, i * chunk, chunk, axis=0))
                    for i in range(n)
                ]
                return jnp.concatenate(outs, axis=1).reshape(-1)
            """,
            [
                "The right numbers in the wrong order: join the shards' outputs along the "
                "batch axis (axis=0), then flatten."
            ],
        ),
        (
            "floats not cast",
            """
            import jax.numpy as jnp
            from flax import nnx


            def shard_map_simulate(seed, x, num_shards, features):
                model = nnx.Linear(x.shape[-1], features, rngs=nnx.Rngs(seed))
                chunk = x.shape[0] // num_shards
                outs = [model(x[i * chunk:(i + 1) * chunk]) for i in range(num_shards)]
                return jnp.concatenate(outs).reshape(-1)
            """,
            [
                "your code raised an exception:",
                "line 6, in shard_map_simulate",
                "model = nnx.Linear(x.shape[-1], features, rngs=nnx.Rngs(seed))",
                "Hint: seed arrives as a float: nnx.Rngs(int(seed)).",
            ],
        ),
    ],
    "column_sums": [
        (
            "computed with NumPy on the host, then placed",
            """
            import jax
            import numpy as np
            from jax import P
            from jax.sharding import NamedSharding


            def column_sums(x, mesh):
                sums = np.asarray(x).sum(axis=0)
                return jax.device_put(sums, NamedSharding(mesh, P()))
            """,
            ["it computes the result with NumPy on the host and then places it"],
        ),
        (
            "no out_shardings",
            """
            import jax


            def column_sums(x, mesh):
                return jax.jit(lambda a: a.sum(axis=0))(x)
            """,
            ["wrong sharding: expected P(), got P('y',)."],
        ),
        (
            "the row sums",
            """
            import jax
            from jax import P
            from jax.sharding import NamedSharding


            def column_sums(x, mesh):
                everywhere = NamedSharding(mesh, P())
                return jax.jit(lambda a: a.sum(axis=1), out_shardings=everywhere)(x)
            """,
            ["wrong shape: expected (4,), got (8,)."],
        ),
    ],
    "matmul_rows": [
        (
            "computed with NumPy on the host, then placed",
            """
            import jax
            import numpy as np
            from jax import P
            from jax.sharding import NamedSharding


            def matmul_rows(x, w, mesh):
                product = np.asarray(x) @ np.asarray(w)
                return jax.device_put(product, NamedSharding(mesh, P("x", None)))
            """,
            ["it computes the result with NumPy on the host and then places it"],
        ),
        (
            "no out_sharding",
            """
            def matmul_rows(x, w, mesh):
                return x @ w
            """,
            [
                "your code raised an exception:",
                "return x @ w",
                "ShardingTypeError: Contracting dimensions are sharded and it is "
                "ambiguous how the output should be sharded.",
            ],
        ),
        (
            "a replicated result",
            """
            import jax.numpy as jnp
            from jax import P
            from jax.sharding import NamedSharding


            def matmul_rows(x, w, mesh):
                return jnp.matmul(x, w, out_sharding=NamedSharding(mesh, P()))
            """,
            [
                "wrong sharding: expected P('x', None), got P(), a whole copy on every "
                "device."
            ],
        ),
    ],
    "ring_all_gather": [
        (
            "all_gather",
            """
            import jax
            from jax import P


            def ring_all_gather(x, mesh):
                def body(block):
                    return jax.lax.all_gather(block, "x", tiled=True).reshape(1, -1)

                return jax.shard_map(body, mesh=mesh, in_specs=P("x"),
                                     out_specs=P("x"))(x)
            """,
            [
                "it does not use jax.lax.ppermute",
                "it uses jax.lax.all_gather, which this exercise rules out. Build the "
                "gather from jax.lax.ppermute steps instead.",
            ],
        ),
        (
            "one hop",
            """
            import jax
            import jax.numpy as jnp
            from jax import P


            def ring_all_gather(x, mesh):
                n = mesh.shape["x"]

                def body(block):
                    me = jax.lax.axis_index("x")
                    blocks = jnp.zeros((n, *block.shape)).at[me].set(block)
                    left = jax.lax.ppermute(block, "x", [(i, (i + 1) % n) for i in range(n)])
                    blocks = blocks.at[(me - 1) % n].set(left)
                    return blocks.reshape(1, -1)

                return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x"),
                                             out_specs=P("x")))(x)
            """,
            [
                "Row d is the copy device d built; the copies of devices "
                "[0, 1, 2, 3, 4, 5, 6, 7] are wrong. A ring of 8 devices needs 7 hops "
                "for every block to reach everyone."
            ],
        ),
        (
            "eight devices hard-coded",
            """
            import jax
            import jax.numpy as jnp
            from jax import P


            def ring_all_gather(x, mesh):
                def body(block):
                    me = jax.lax.axis_index("x")
                    blocks = jnp.zeros((8, *block.shape)).at[me].set(block)
                    for hop in range(1, 8):
                        block = jax.lax.ppermute(block, "x", [(i, (i + 1) % 8) for i in range(8)])
                        blocks = blocks.at[(me - hop) % 8].set(block)
                    return blocks.reshape(1, -1)

                return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x"),
                                             out_specs=P("x")))(x)
            """,
            [
                "  ok      case 1 of 2",
                "  FAILED  case 2 of 2",
                "your code raised an exception:",
            ],
        ),
    ],
    "manual_dense": [
        (
            "forgot the psum",
            """
            import jax
            from jax import P


            def manual_dense(x, W, b, mesh):
                def body(x, W, b):
                    return jax.nn.sigmoid(x @ W + b)

                return jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P("x", None), P()),
                                     out_specs=P())(x, W, b)
            """,
            [
                "your code raised an exception:",
                "was given out_specs which require replication which can't be "
                "statically inferred given the mesh",
                "Hint: each device's x @ W is only its part of the sum, different on "
                "every device; add the parts with jax.lax.psum before returning with "
                "out_specs=P().",
            ],
        ),
        (
            "forgot the psum, check off",
            """
            import jax
            from jax import P


            def manual_dense(x, W, b, mesh):
                def body(x, W, b):
                    return jax.nn.sigmoid(x @ W + b)

                return jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P("x", None), P()),
                                     out_specs=P(), check_vma=False)(x, W, b)
            """,
            [
                "wrong values: 4 of 4 differ.",
                "it does not use jax.lax.psum: the traced program (jax.make_jaxpr) has no "
                "psum. Add the devices' partial products with jax.lax.psum(..., 'x').",
            ],
        ),
        (
            "jit instead of shard_map",
            """
            import jax
            import jax.numpy as jnp
            from jax import P
            from jax.sharding import NamedSharding


            def manual_dense(x, W, b, mesh):
                everywhere = NamedSharding(mesh, P())
                return jax.nn.sigmoid(jnp.matmul(x, W, out_sharding=everywhere) + b)
            """,
            [
                "  ok      case 1 of 2",
                "  ok      case 2 of 2",
                "it does not use jax.shard_map",
            ],
        ),
    ],
    "place_batch": [
        (
            "no check of its own",
            """
            import jax
            from jax import P
            from jax.sharding import NamedSharding


            def place_batch(x, mesh):
                return jax.device_put(x, NamedSharding(mesh, P("data")))
            """,
            [
                "  FAILED  case 4 of 5 (x = float32[12, 4] on an Explicit mesh {'data': 8}: "
                "should raise)",
                "it raised ValueError, as it should, but its message should tell the caller "
                "what to change (mention 'multiple of 8'). It says: Sharding spec "
                "('data',) implies that array axis 0 is partitioned 8 times, but does not "
                "evenly divide the dimension size 12.",
            ],
        ),
        (
            "split over every axis",
            """
            import jax
            from jax import P
            from jax.sharding import NamedSharding


            def place_batch(x, mesh):
                n = mesh.shape["data"]
                if x.shape[0] % n:
                    raise ValueError(f"use a multiple of {n}")
                return jax.device_put(x, NamedSharding(mesh, P(mesh.axis_names)))
            """,
            ["wrong sharding: expected P('data',), got P(('data', 'model'),)."],
        ),
        (
            "left on the host",
            """
            def place_batch(x, mesh):
                n = mesh.shape["data"]
                if x.shape[0] % n:
                    raise ValueError(f"use a multiple of {n}")
                return x
            """,
            [
                "the result should be a jax.Array laid out as P('data',), but it is a "
                "NumPy array of shape (16, 4), which no device holds."
            ],
        ),
    ],
    "sharded_linear": [
        (
            "no mesh in context",
            """
            from flax import nnx


            def sharded_linear(d_in, d_out, mesh, seed):
                init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "model"))
                bias = nnx.with_partitioning(nnx.initializers.zeros_init(), ("model",))
                return nnx.Linear(d_in, d_out, kernel_init=init, bias_init=bias,
                                  rngs=nnx.Rngs(seed))
            """,
            [
                "your code raised an exception:",
                "ValueError: An auto mesh context or metadata is required",
            ],
        ),
        (
            "moved after the fact",
            """
            import jax
            from flax import nnx
            from jax import P
            from jax.sharding import NamedSharding


            def sharded_linear(d_in, d_out, mesh, seed):
                layer = nnx.Linear(d_in, d_out, rngs=nnx.Rngs(seed))
                for param, spec in [(layer.kernel, P(None, "model")),
                                    (layer.bias, P("model"))]:
                    param.set_value(jax.device_put(param[...], NamedSharding(mesh, spec)))
                return layer
            """,
            [
                "kernel carries no sharding annotation (None, 'model') (it has None): "
                "create it with nnx.with_partitioning(init, (None, 'model')), so that "
                "Flax knows its layout."
            ],
        ),
    ],
    "tp_specs": [
        (
            "everything replicated",
            """
            from jax import P


            def tp_specs(axis):
                return {name: P() for name in
                        ["up.kernel", "up.bias", "down.kernel", "down.bias"]}
            """,
            [
                "up.kernel and down.kernel are not split over 'model': tensor parallelism "
                "splits both kernels, so that each device holds 1/8 of them."
            ],
        ),
        (
            "row then column",
            """
            from jax import P


            def tp_specs(axis):
                return {"up.kernel": P(axis, None), "up.bias": P(),
                        "down.kernel": P(None, axis), "down.bias": P(axis)}
            """,
            [
                "compiles to {'all-reduce': 1, 'all-gather': 1} on CPU; the "
                "column-then-row layout needs exactly one all-reduce"
            ],
        ),
        (
            "the axis name hard-coded",
            """
            from jax import P


            def tp_specs(axis):
                return {"up.kernel": P(None, "model"), "up.bias": P("model"),
                        "down.kernel": P("model", None), "down.bias": P()}
            """,
            [
                "  ok      case 1 of 2",
                "up.kernel (shape (32, 128)) cannot be laid out as P(None, 'model') on "
                "this mesh:",
            ],
        ),
    ],
    "per_device_bytes": [
        (
            "elements, not bytes",
            """
            import math

            from jax.sharding import NamedSharding


            def per_device_bytes(shape, dtype, spec, mesh):
                return math.prod(NamedSharding(mesh, spec).shard_shape(shape))
            """,
            [
                "wrong number of bytes: expected 4,096 (a block of shape (32, 32) on each "
                "device), got 1,024."
            ],
        ),
        (
            "always split eight ways",
            """
            import math

            import numpy as np


            def per_device_bytes(shape, dtype, spec, mesh):
                total = math.prod(shape) * np.dtype(dtype).itemsize
                if total % mesh.size:
                    raise ValueError("does not split")
                return total // mesh.size
            """,
            [
                "wrong number of bytes: expected 4,096 (a block of shape (32, 32) on each "
                "device), got 1,024.",
                "  ...     5 more case(s) not run: fix this one first.",
            ],
        ),
        (
            "no check that the dimensions divide",
            """
            import math

            import numpy as np


            def per_device_bytes(shape, dtype, spec, mesh):
                block = list(shape)
                for dim, entry in enumerate(spec):
                    for name in (entry,) if isinstance(entry, str) else entry or ():
                        block[dim] //= mesh.shape[name]
                return math.prod(block) * np.dtype(dtype).itemsize
            """,
            [
                "  ok      case 5 of 6",
                "  FAILED  case 6 of 6 (float32[6, 4] as P('model') on a mesh "
                "{'data': 2, 'model': 4}: should raise)",
                "it should raise ValueError for these arguments, but it returned an int.",
            ],
        ),
    ],
    "fsdp_shard": [
        (
            "kernels only",
            """
            import jax
            from flax import nnx
            from jax import P
            from jax.sharding import NamedSharding


            def fsdp_shard(model, mesh):
                n = mesh.shape["data"]
                for path, param in nnx.iter_graph(model):
                    if isinstance(param, nnx.Param) and path[-1] == "kernel":
                        dim = next(d for d, s in enumerate(param[...].shape) if s % n == 0)
                        spec = P(*[None] * dim, "data")
                        param.set_value(jax.device_put(param[...], NamedSharding(mesh, spec)))
                return model
            """,
            [
                "device 0 holds 3,104 bytes of parameters; split 8 ways over 'data', "
                "every device would hold 2,628 bytes (the total, 21,024 bytes, divided "
                "by 8). Not split over 'data': down.bias, up.bias."
            ],
        ),
        (
            "always dimension 0",
            """
            import jax
            from flax import nnx
            from jax import P
            from jax.sharding import NamedSharding


            def fsdp_shard(model, mesh):
                for path, param in nnx.iter_graph(model):
                    if isinstance(param, nnx.Param):
                        sharding = NamedSharding(mesh, P("data"))
                        param.set_value(jax.device_put(param[...], sharding))
                return model
            """,
            [
                "  FAILED  case 1 of 3",
                "up.kernel (32, 128) is split along dimension 0 (size 32); its largest "
                "dimension that 8 divides is dimension 1 (size 128): split that one.",
            ],
        ),
        (
            "a new model instead of the one given",
            """
            import jax
            from flax import nnx
            from jax import P
            from jax.sharding import NamedSharding


            def fsdp_shard(model, mesh):
                n = mesh.shape["data"]
                state = nnx.state(model)

                def place(x):
                    dims = [d for d, s in enumerate(x.shape) if s % n == 0]
                    dim = max(dims, key=lambda d: x.shape[d])
                    return jax.device_put(x, NamedSharding(mesh, P(*[None] * dim, "data")))

                graph = nnx.graphdef(model)
                return nnx.merge(graph, jax.tree.map(place, state))
            """,
            ["it returned a new model: change the one it was given in place"],
        ),
    ],
    "gpipe_schedule": [
        (
            "float entries",
            """
            import numpy as np


            def gpipe_schedule(num_stages, num_microbatches):
                if num_stages < 1 or num_microbatches < 1:
                    raise ValueError("both must be >= 1")
                steps = num_microbatches + num_stages - 1
                m = np.arange(steps)[None, :] - np.arange(num_stages)[:, None]
                return np.where((m >= 0) & (m < num_microbatches), m, -1).astype(float)
            """,
            ["the entries are float64, not integers"],
        ),
        (
            "half a stage accepted",
            """
            import numpy as np


            def gpipe_schedule(num_stages, num_microbatches):
                if num_stages < 1 or num_microbatches < 1:
                    raise ValueError("both must be >= 1")
                steps = int(num_microbatches + num_stages - 1)
                m = np.arange(steps)[None, :] - np.arange(int(num_stages))[:, None]
                return np.where((m >= 0) & (m < num_microbatches), m, -1)
            """,
            [
                "FAILED  case 7 of 7 (num_stages=2.5, num_microbatches=4: should raise)",
                "it should raise ValueError for these arguments",
            ],
        ),
        (
            "no drain steps",
            """
            import numpy as np


            def gpipe_schedule(num_stages, num_microbatches):
                if num_stages < 1 or num_microbatches < 1:
                    raise ValueError("both must be >= 1")
                m = np.arange(num_microbatches)[None, :] - np.arange(num_stages)[:, None]
                return np.where(m >= 0, m, -1)
            """,
            [
                "wrong shape: expected (4, 7), got (4, 4).",
                "One column per microbatch is too few",
            ],
        ),
        (
            "stage added instead of subtracted, no check",
            """
            import numpy as np


            def gpipe_schedule(num_stages, num_microbatches):
                steps = num_microbatches + num_stages - 1
                m = np.arange(steps)[None, :] + np.arange(num_stages)[:, None]
                return np.where(m < num_microbatches, m, -1)
            """,
            [
                "wrong values: 16 of 28 differ. The first is at index (1, 0): expected -1, "
                "got 1."
            ],
        ),
        (
            "no check of the arguments",
            """
            import numpy as np


            def gpipe_schedule(num_stages, num_microbatches):
                steps = num_microbatches + num_stages - 1
                m = np.arange(steps)[None, :] - np.arange(num_stages)[:, None]
                return np.where((m >= 0) & (m < num_microbatches), m, -1)
            """,
            [
                "it should raise ValueError for these arguments, but it returned a NumPy "
                "array of shape (0, 3)."
            ],
        ),
    ],
    "process_rows": [
        (
            "rows in the order the devices are listed, never sorted",
            """
            def process_rows(sharding, global_shape, process_devices):
                where = sharding.devices_indices_map(tuple(global_shape))
                rows = []
                for device in process_devices:
                    for row in range(global_shape[0])[where[device][0]]:
                        if row not in rows:
                            rows.append(row)
                return rows
            """,
            [
                "  ok      case 5 of 6",
                "FAILED  case 6 of 6 (8 devices in order, P('data'), rows 16, process of "
                "devices 6, 2, 4, 0",
            ],
        ),
        (
            "contiguous blocks by device id",
            """
            def process_rows(sharding, global_shape, process_devices):
                per_device = global_shape[0] // len(sharding.mesh.devices.flat)
                first = min(d.id for d in process_devices)
                return list(range(first * per_device,
                                  (first + len(process_devices)) * per_device))
            """,
            [
                "  ok      case 1 of 6",
                "  ok      case 2 of 6",
                "wrong rows: expected [0, 1, 4, 5, 8, 9, 12, 13], got [0, 1, 2, 3, 4, 5, "
                "6, 7].",
            ],
        ),
        (
            "only the first device",
            """
            def process_rows(sharding, global_shape, process_devices):
                index = sharding.devices_indices_map(global_shape)[process_devices[0]]
                return list(range(global_shape[0]))[index[0]]
            """,
            ["wrong rows: expected [0, 1, 2, 3, 4, 5, 6, 7], got [0, 1]."],
        ),
    ],
    "mesh_shape_for": [
        (
            "a budget filled exactly does not count as fitting",
            """
            def mesh_shape_for(num_devices, state_bytes, budget_bytes):
                for model in range(1, num_devices + 1):
                    if num_devices % model == 0 and state_bytes / model < budget_bytes:
                        return num_devices // model, model
                raise ValueError("does not fit")
            """,
            [
                "case 6 of 8 (8 devices, 32 GiB of state, 16 GiB each)",
                "wrong mesh shape: expected (4, 2), got (2, 4).",
            ],
        ),
        (
            "each device's share rounded down",
            """
            def mesh_shape_for(num_devices, state_bytes, budget_bytes):
                for model in range(1, num_devices + 1):
                    if num_devices % model == 0 and state_bytes // model <= budget_bytes:
                        return num_devices // model, model
                raise ValueError("does not fit")
            """,
            [
                "case 7 of 8 (8 devices, 32 GiB + 1 byte of state, 16 GiB each)",
                "wrong mesh shape: expected (2, 4), got (4, 2).",
            ],
        ),
        (
            "as much model parallelism as possible",
            """
            def mesh_shape_for(num_devices, state_bytes, budget_bytes):
                if state_bytes / num_devices > budget_bytes:
                    raise ValueError("does not fit")
                return 1, num_devices
            """,
            ["wrong mesh shape: expected (8, 1), got (1, 8)."],
        ),
        (
            "a model axis that does not divide the devices",
            """
            import math


            def mesh_shape_for(num_devices, state_bytes, budget_bytes):
                model = math.ceil(state_bytes / budget_bytes)
                return num_devices // model, model
            """,
            ["wrong mesh shape: expected (2, 4), got (2, 3)."],
        ),
        (
            "None when nothing fits",
            """
            def mesh_shape_for(num_devices, state_bytes, budget_bytes):
                for model in range(1, num_devices + 1):
                    if num_devices % model == 0 and state_bytes / model <= budget_bytes:
                        return num_devices // model, model
                return None
            """,
            ["it should raise ValueError for these arguments, but it returned None."],
        ),
    ],
}


def test_every_exercise_has_at_least_two_wrong_answers():
    assert set(WRONG) == set(EXERCISES)
    assert all(len(answers) >= 2 for answers in WRONG.values())


@pytest.mark.parametrize(
    ("exercise", "source", "messages"),
    [
        pytest.param(name, source, messages, id=f"{name}: {mistake}")
        for name, answers in WRONG.items()
        for mistake, source, messages in answers
    ],
)
def test_a_wrong_answer_fails_with_its_message(grade, exercise, source, messages):
    status, out, _ = grade(exercise, source)
    assert status == 1
    flat = " ".join(out.split())  # the grader wraps its lines
    for message in messages:
        assert " ".join(message.split()) in flat
    assert out.split("\n\n")[-1].startswith("NOT YET: ")
    assert "Traceback" not in out
