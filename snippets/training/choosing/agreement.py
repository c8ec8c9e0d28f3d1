"""Every strategy trains exactly like one device: the same losses and the same weights.

Run `python -m snippets.training.choosing.agreement` to print what the page shows.
"""

import jax
import numpy as np
from flax import nnx

from snippets.models import train_reference

# On the page, these are defined by earlier blocks.
from snippets.training.choosing.costs import Run, run_all


def agreement(runs: dict[str, Run]) -> tuple[dict, list[float], nnx.Module]:
    # --8<-- [start:agreement]
    ref_losses, ref_model = train_reference(steps=3, batch=64)
    ref_weights = nnx.state(ref_model, nnx.Param)
    print(f"within {1e-5:g} of train_reference after 3 steps")
    print(f"{'strategy':<16}{'losses':>7}{'weights':>8}")
    gaps = {}
    for strategy, run in runs.items():
        loss_gap = np.abs(np.subtract(run.losses, ref_losses)).max()
        weights = nnx.state(run.model, nnx.Param)
        diffs = jax.tree.map(lambda a, b: np.abs(a - b).max(), weights, ref_weights)
        weight_gap = max(jax.tree.leaves(diffs))
        gaps[strategy] = float(loss_gap), float(weight_gap)
        print(f"{strategy:<16}{loss_gap <= 1e-5!s:>7}{weight_gap <= 1e-5!s:>8}")
    # --8<-- [end:agreement]
    return gaps, ref_losses, ref_model


def main() -> None:
    agreement(run_all())


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
