"""Why bfloat16 needs no loss scaling and float16 does, why the weights stay float32, and
what Optax offers for both.

Run `python -m snippets.advanced.mixed_precision.scaling` to print what the page shows.
"""

# --8<-- [start:imports]
import jax
import jax.numpy as jnp
import optax

# --8<-- [end:imports]


def formats():
    # --8<-- [start:formats]
    print(
        f"{'dtype':<10}{'exponent bits':>15}{'mantissa bits':>15}{'smallest normal':>17}"
    )
    for dtype in (jnp.float32, jnp.bfloat16, jnp.float16):
        info = jnp.finfo(dtype)
        smallest = f"2**{info.minexp}"  # what finfo.smallest_normal is, exactly
        print(f"{info.dtype.name:<10}{info.nexp:>15}{info.nmant:>15}{smallest:>17}")
    # --8<-- [end:formats]


# --8<-- [start:small-gradients]
N = 2**14  # a mean over this many values gives each a gradient of 1/N


def activations():
    """N activations between 1e-4 and 2e-4: each one a normal float16."""
    return jnp.linspace(1e-4, 2e-4, N)


def gradient(dtype, scale=1.0):
    """d mean(x * w) / dw, computed in `dtype`, the loss multiplied by `scale` and the
    gradient divided by it again in float32."""
    x = activations()

    def loss(w):  # w: float32 weights, cast for the product as the model does
        return jnp.mean(x.astype(dtype) * w.astype(dtype)) * scale

    return jax.grad(loss)(jnp.ones(N)) / scale


# --8<-- [end:small-gradients]


def small_gradients():
    # --8<-- [start:underflow]
    exact = activations() / N  # the gradient: each entry between 6e-9 and 1.3e-8
    runs = {  # (1)!
        "float32": (gradient(jnp.float32), -22),
        "bfloat16": (gradient(jnp.bfloat16), -6),
        "float16": (gradient(jnp.float16), -9),
        "float16, loss x 2**15": (gradient(jnp.float16, scale=2.0**15), -9),
    }
    print(f"{'computed in':<23}{'zeros':>7}  within a relative 2**bound of the exact")
    for name, (grad, bound) in runs.items():
        zeros = int(jnp.sum(grad == 0))
        close = bool(jnp.all(jnp.abs(grad - exact) <= 2.0**bound * exact))
        print(f"{name:<23}{zeros:>7}  {close} (2**{bound})")
    # --8<-- [end:underflow]
    return exact, runs


def master_weights():
    # --8<-- [start:master-weights]
    tx = optax.adamw(learning_rate=1e-3)
    for dtype in (jnp.float32, jnp.bfloat16):
        params = {"w": jnp.ones(4, dtype)}
        grads = {"w": jnp.ones(4, dtype)}
        updates, _ = tx.update(grads, tx.init(params), params)
        new = optax.apply_updates(params, updates)
        moved = bool(jnp.all(new["w"] != params["w"]))
        print(
            f"weights in {dtype.__name__:<9} 1.0 -> {float(new['w'][0]):.4g}, moved: {moved}"
        )
    # --8<-- [end:master-weights]


def optax_tools():
    # --8<-- [start:optax-tools]
    params = {"w": jnp.ones(4, jnp.float32)}
    adam = optax.adamw(1e-3, mu_dtype=jnp.bfloat16).init(params)[0]  # (1)!
    print("mu_dtype=bfloat16: mu", adam.mu["w"].dtype, "and nu", adam.nu["w"].dtype)

    tx = optax.apply_if_finite(optax.adamw(1e-3), max_consecutive_errors=5)  # (2)!
    opt_state = tx.init(params)
    for grad in (jnp.inf, 1.0):
        updates, opt_state = tx.update({"w": jnp.full(4, grad)}, opt_state, params)
        print(
            f"gradient {grad}: update is zero {bool(jnp.all(updates['w'] == 0))}, "
            f"non-finite steps in a row {int(opt_state.notfinite_count)}"
        )
    # --8<-- [end:optax-tools]
    return adam, opt_state


def main() -> None:
    formats()
    small_gradients()
    master_weights()
    optax_tools()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
