"""The same worker on a real cluster: what changes (only how the processes find each other).

This cannot run on one machine without a cluster; the page shows it as code only.
"""

import jax


def start_on_cluster() -> None:
    # --8<-- [start:cluster]
    # One process per host, started by the cluster's launcher (SLURM, a TPU pod's
    # runtime, Kubernetes, mpirun...). With no arguments, JAX reads the coordinator
    # address, the number of processes and this process's id from the environment.
    jax.distributed.initialize()
    print(
        f"process {jax.process_index()} of {jax.process_count()}:",
        f"{jax.local_device_count()} of {jax.device_count()} devices",
    )
    # --8<-- [end:cluster]
