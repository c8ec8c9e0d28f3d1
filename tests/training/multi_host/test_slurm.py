"""Processes started with srun's variables, on this machine: what
`jax.distributed.initialize()` takes from them when it gets no arguments."""

import socket

import pytest

from snippets.training.multi_host import slurm
from snippets.training.multi_host.launch import LaunchError

pytestmark = pytest.mark.slow


def test_one_task_per_gpu_uses_the_gpu_of_its_local_id():
    """Two tasks on one node. Job 4242's derived port, 61440 + 4242 % 4096 = 61586, is
    held taken meanwhile: the run still starts, on the port passed in
    JAX_COORDINATOR_PORT (one launch checks both, to keep the per-push run short)."""
    with socket.socket() as taken:
        try:
            taken.bind(("", 61586))
            taken.listen()
        except OSError:  # in use already: taken either way
            pass
        logs = slurm.like_srun(local_ids=[0, 1])
    assert [log.strip() for log in logs] == [
        "process 0 of 2: 2 of 4 devices, GPUs it would use: 0",
        "process 1 of 2: 2 of 4 devices, GPUs it would use: 1",
    ]


@pytest.mark.daily  # each a launch of two processes; one launch runs per push
def test_one_task_per_node_still_gets_only_gpu_0():
    """Two nodes with one task each: both tasks have SLURM_LOCALID 0, and JAX
    restricts each to GPU 0 unless told otherwise."""
    logs = slurm.like_srun(local_ids=[0, 0])
    assert [log.strip()[-len("use: 0") :] for log in logs] == ["use: 0", "use: 0"]


@pytest.mark.daily  # each a launch of two processes; one launch runs per push
def test_jax_local_device_ids_gives_a_process_every_gpu_of_its_node():
    every = "0,1,2,3,4,5,6,7"
    logs = slurm.like_srun(local_ids=[0, 0], extra={"JAX_LOCAL_DEVICE_IDS": every})
    assert [log.strip().endswith(f"use: {every}") for log in logs] == [True, True]


@pytest.mark.daily  # each a launch of two processes; one launch runs per push
def test_without_one_of_the_variables_slurm_is_not_recognised(monkeypatch):
    srun_variables = slurm.srun_variables

    def without_localid(*args):
        return {k: v for k, v in srun_variables(*args).items() if k != "SLURM_LOCALID"}

    monkeypatch.setattr(slurm, "srun_variables", without_localid)
    with pytest.raises(LaunchError, match="coordinator_address should be defined"):
        slurm.like_srun(local_ids=[0, 1])


def test_kubernetes_needs_the_kubernetes_package(monkeypatch):
    """In a pod (KUBERNETES_SERVICE_HOST set) without `jax[k8s]`, JAX says what to
    install and finds no coordinator."""
    monkeypatch.setattr(slurm, "srun_variables", lambda *args: {})
    pod = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    with pytest.raises(LaunchError) as error:
        slurm.like_srun(local_ids=[0], extra=pod)
    assert "pip install jax[k8s]" in str(error.value)
    assert "coordinator_address should be defined" in str(error.value)


def test_srun_variables_are_the_five_jax_reads():
    assert sorted(slurm.srun_variables(1, 2, 0)) == [
        "SLURM_JOB_ID",
        "SLURM_LOCALID",
        "SLURM_NTASKS",
        "SLURM_PROCID",
        "SLURM_STEP_NODELIST",
    ]
