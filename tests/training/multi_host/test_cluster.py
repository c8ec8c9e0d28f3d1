import jax

from snippets.training.multi_host import cluster


def test_on_a_cluster_initialize_takes_no_arguments(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(
        jax.distributed, "initialize", lambda *a, **kw: calls.append((a, kw))
    )
    cluster.start_on_cluster()
    assert calls == [((), {})]  # the cluster's environment says the rest
    assert capsys.readouterr().out == "process 0 of 1: 8 of 8 devices\n"
