import numpy as np
import pytest

from snippets.concepts.three_approaches import explicit, layer, manual
from snippets.hlo import count_collectives


@pytest.fixture(scope="module")
def placed():
    x, W, b, reference = layer.make_data()
    return (x, W, b, reference, *explicit.place_on_explicit_mesh(x, W, b))


def test_psum_over_the_contracting_dimension(placed, capsys):
    *_, reference, explicit_mesh, x_exp, W_exp, b_exp = placed
    capsys.readouterr()
    manual_out, manual_compiled = manual.run_manual(
        explicit_mesh, x_exp, W_exp, b_exp, reference
    )
    np.testing.assert_allclose(manual_out, reference, rtol=1e-6)
    assert manual_out.sharding.is_fully_replicated
    assert count_collectives(manual_compiled) == {"all-reduce": 1}
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [
        "one device: float32[4]{V:x} float32[4,4]{V:x} float32[4]",
        "partial: float32[4]{V:x}  after psum: float32[4]",
    ]
    assert lines[3:] == ["matches NumPy: True", "all-reduce          1"]


def test_forgetting_the_psum_is_caught_by_check_vma(placed, capsys):
    *_, explicit_mesh, x_exp, W_exp, b_exp = placed
    capsys.readouterr()
    manual.forgot_psum(explicit_mesh, x_exp, W_exp, b_exp)
    out = capsys.readouterr().out
    assert out.startswith(
        "ValueError: shard_map applied to the function 'dense' was given out_specs "
        "which require replication which can't be statically inferred given the mesh:"
    )
    assert (
        "out_specs is P() which implies that the corresponding output value is "
        "replicated across mesh axis 'x', but could not infer replication over any axes"
    ) in out
    assert "check_vma=False" in out


def test_without_the_check_the_result_is_one_devices_partial(placed, capsys):
    x, W, b, reference, explicit_mesh, x_exp, W_exp, b_exp = placed
    specs = manual.forgot_psum(explicit_mesh, x_exp, W_exp, b_exp)
    capsys.readouterr()
    wrong = manual.unchecked(specs, x_exp, W_exp, b_exp, reference)
    # Whose partial comes back is unspecified; this CPU run's is device 0's, as the page says.
    device_0 = 1 / (1 + np.exp(-(x[:4] @ W[:4] + b)))
    np.testing.assert_allclose(wrong, device_0, rtol=1e-6)
    assert not np.allclose(wrong, reference, rtol=1e-6)
    assert capsys.readouterr().out.splitlines()[-1] == "matches NumPy: False"
