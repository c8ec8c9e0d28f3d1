from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import P
from jax.sharding import NamedSharding

from snippets.advanced.expert_parallel import balance
from snippets.advanced.expert_parallel.capacity import expert_load
from snippets.advanced.expert_parallel.dispatch import moe_layer
from snippets.hlo import read_collectives
from tests.advanced.expert_parallel.conftest import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "expert-parallel.md"


def prose() -> str:
    return " ".join(PAGE.read_text(encoding="utf-8").split())


@pytest.fixture(scope="module")
def aux_loss(expert_mesh):
    return balance.balance_loss(expert_mesh, experts=8)


def split(expert_mesh, tokens):
    return jax.device_put(tokens, NamedSharding(expert_mesh, P("expert")))


def by_loop(tokens, router):
    """The loss token by token: top-1 counts and summed probabilities, in float64."""
    tokens, router = np.asarray(tokens, np.float64), np.asarray(router, np.float64)
    experts = router.shape[1]
    counts, prob_sums = np.zeros(experts), np.zeros(experts)
    for t in tokens:
        z = np.exp(t @ router - (t @ router).max())
        p = z / z.sum()
        counts[p.argmax()] += 1
        prob_sums += p
    return experts * np.sum(counts / len(tokens) * prob_sums / len(tokens))


def test_the_sharded_loss_equals_numpy_over_the_whole_batch(
    x, tokens, params, expert_mesh, capsys
):
    _, sharded, on_one = balance.against_numpy(x, tokens, params, expert_mesh)
    assert abs(on_one - by_loop(tokens, params["router"])) < 1e-9
    assert abs(sharded - on_one) <= 1e-5
    out = capsys.readouterr().out
    assert out == (
        f"sharded {sharded:.3f}, NumPy {on_one:.3f}, within 1e-05: True\n"
        "all-reduce          2\n"
    )
    # Global, not per group: the mean of the 8 groups' own losses is something else.
    groups = np.split(np.asarray(tokens), 8)
    per_group = np.mean(
        [balance.reference_balance(g, params["router"]) for g in groups]
    )
    assert abs(per_group - on_one) > 1e-3


def test_the_program_adds_up_counts_and_probabilities_once(x, params, aux_loss):
    """'two all-reduces of eight numbers each': the counts and the probability sums."""
    compiled = jax.jit(aux_loss).lower(x, params["router"]).compile()
    results = sorted(c.result for c in read_collectives(compiled))
    assert [c.kind for c in read_collectives(compiled)] == ["all-reduce"] * 2
    assert results == ["f32[8]", "s32[8]"]
    assert "two all-reduces of eight numbers each" in prose()


def test_a_uniform_router_gives_one(expert_mesh, aux_loss, tokens):
    """Uniform probabilities: experts * sum_e f_e / experts = 1, whatever the counts."""
    router = jnp.zeros((16, 8))
    assert float(aux_loss(split(expert_mesh, tokens), router)) == pytest.approx(1.0)
    assert balance.reference_balance(tokens, router) == pytest.approx(1.0)


def test_one_is_not_a_lower_bound():
    """The prose says so: two tokens just over 1/2 on expert 0, one sure of expert 1."""
    eps = 1e-3
    router = np.eye(2)
    x = np.log([[0.5 + eps, 0.5 - eps], [0.5 + eps, 0.5 - eps], [1e-9, 1.0]])
    assert balance.reference_balance(x, router) == pytest.approx(8 / 9, abs=1e-2)
    assert "1 is not a floor" in prose()


def test_everything_on_one_expert_gives_the_number_of_experts(
    expert_mesh, aux_loss, tokens
):
    router = jnp.zeros((16, 8)).at[:, 0].set(1.0)
    sure = jnp.abs(tokens).at[:, 0].set(1000.0)  # every token far into expert 0
    assert float(aux_loss(split(expert_mesh, sure), router)) == pytest.approx(8.0)


def test_the_loss_and_the_drops_grow_with_the_skew(x, params, aux_loss, capsys):
    losses, drops = [], []
    for scale in (1.0, 4.0, 8.0):
        router = params["router"].at[:, 0].multiply(scale)
        losses.append(float(aux_loss(x, router)))
        _, routed, kept = expert_load(x, router, 8, 1.0)
        drops.append(int((routed - kept).sum()))
    assert losses == sorted(losses) and len(set(losses)) == 3
    assert drops == sorted(drops) and len(set(drops)) == 3
    balance.unbalanced(x, params, aux_loss)
    lines = capsys.readouterr().out.splitlines()
    assert [
        f"loss {v:.3f}, {d:>2} of 256 dropped" in line
        for v, d, line in zip(losses, drops, lines, strict=True)
    ] == [True] * 3


def test_the_drops_are_the_dispatchs_zeros(x, params, expert_mesh):
    """The report counts drops with expert_load; the layer itself zeros the same many."""
    router = params["router"].at[:, 0].multiply(4.0)
    y = moe_layer(expert_mesh, 1.0)(x, {**params, "router": router})
    _, routed, kept = expert_load(x, router, 8, 1.0)
    assert int((~np.asarray(y).any(axis=1)).sum()) == int((routed - kept).sum())


def test_descent_on_the_loss_alone_lowers_it_and_the_drops(x, params, aux_loss, capsys):
    report = quietly(balance.unbalanced, x, params, aux_loss)[0]
    router = balance.descend(x, params, aux_loss, report)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["0", "4", "8", "12"]
    losses = [float(line.split("loss ")[1].split(",")[0]) for line in lines]
    drops = [int(line.split(", ")[1].split()[0]) for line in lines]
    assert losses == sorted(losses, reverse=True) and len(set(losses)) == 4
    assert drops == sorted(drops, reverse=True) and len(set(drops)) == 4
    assert losses[-1] < 1.05 and drops[-1] < 50
    # Only the router moved, and not into a collapse onto one expert.
    assert router.shape == params["router"].shape
    _, routed, _ = expert_load(x, router, 8, 1.0)
    assert routed.max() < 64 and routed.min() > 0


@pytest.mark.parametrize("experts", [4, 16])
def test_a_router_for_another_number_of_experts_is_refused(
    x, params, expert_mesh, experts
):
    with pytest.raises(ValueError, match=r"scores 8 experts but the loss was made for"):
        balance.balance_loss(expert_mesh, experts)(x, params["router"])
    with pytest.raises(ValueError, match=r"call balance_loss\(mesh, experts=8\)"):
        balance.balance_loss(expert_mesh, experts)(x, params["router"])


def test_an_empty_batch_is_refused(expert_mesh, aux_loss, params):
    with pytest.raises(ValueError, match=r"no tokens.*at least one token per device"):
        aux_loss(jnp.zeros((0, 16)), params["router"])


def test_a_mesh_without_an_expert_axis_is_refused():
    mesh = jax.make_mesh((8,), ("data",))
    with pytest.raises(ValueError, match="name one of them 'expert'"):
        balance.balance_loss(mesh, 8)


def test_the_prose_quotes_the_printed_numbers(x, params, aux_loss, capsys):
    report = balance.unbalanced(x, params, aux_loss)
    balance.descend(x, params, aux_loss, report)
    lines = capsys.readouterr().out.splitlines()
    first, start, end = lines[0], lines[3], lines[-1]

    def loss(line):
        return line.split("loss ")[1].split(",")[0]

    def dropped(line):
        return line.split(", ")[1].split()[0]

    def busiest(line):
        return line.split("busiest expert")[1].split()[0]

    assert f"The page's router scores {loss(first)}, a little above 1" in prose()
    assert (
        f"the loss falls from {loss(start)} to {loss(end)} and the drops from "
        f"{dropped(start)} to {dropped(end)}, while the busiest expert goes from "
        f"{busiest(start)} tokens to {busiest(end)}, against an even share of 32"
    ) in prose()


def test_the_routers_gradient_is_the_same_on_every_device(x, params, aux_loss):
    grad = jax.jit(jax.grad(lambda r: aux_loss(x, r)))(params["router"])
    assert grad.sharding.is_fully_replicated
    shards = [np.asarray(s.data) for s in grad.addressable_shards]
    assert all((s == shards[0]).all() for s in shards) and np.abs(shards[0]).max() > 0
