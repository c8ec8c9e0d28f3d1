import numpy as np

from snippets.training.simulated_data_parallel import model_in_loop, simulate


def test_a_model_per_shard_gives_other_parameters_and_wrong_outputs(capsys):
    x, _, expected = simulate.run_simulation()
    capsys.readouterr()
    wrong = model_in_loop.model_per_shard(x, expected)
    assert wrong.shape == expected.shape == (48,)
    by_shard = np.abs(np.asarray(wrong - expected)).reshape(8, -1).max(axis=1)
    assert by_shard[0] <= 1e-6  # shard 0 drew the same keys as the model built once
    assert (by_shard[1:] > 1e-2).all()

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "shard  kernel[0]              same as shard 0  right outputs"
    rows = [line.split() for line in lines[1:9]]
    assert [row[0] for row in rows] == [str(i) for i in range(8)]
    assert [row[-2:] for row in rows] == [["True", "True"]] + [["False", "False"]] * 7
    assert lines[9] == "output matches model(x): False"
