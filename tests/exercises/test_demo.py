"""The grader at work on the index page: a wrong answer, then the reference solution."""

from snippets.exercises import demo


def test_the_forgotten_psum_is_reported_twice(capsys):
    assert demo.check_wrong_answer() == 1
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert flat.startswith(
        "Checking manual_dense from snippets/exercises/examples/psum_forgotten.py on 2 "
        "hidden cases (8 virtual CPU devices). FAILED case 1 of 2"
    )
    assert "- wrong values: 4 of 4 differ. The first is at index 0:" in flat
    assert "... 1 more case(s) not run: fix this one first." in flat
    assert (
        "FAILED program (uses shard_map, uses psum) - it does not use jax.lax.psum"
    ) in flat
    assert out.endswith(
        "NOT YET: 0 of 2 cases passed, and the program check failed. Fix manual_dense\n"
        "and run the check again.\nexit status: 1\n"
    )
    assert all(len(line) <= 76 for line in out.splitlines())


def test_the_reference_passes(capsys):
    assert demo.check_reference() == 0
    out = capsys.readouterr().out
    assert out.endswith(
        "  ok      program (uses shard_map, uses psum)\n\n"
        "PASSED: manual_dense is right on all 2 hidden cases.\nexit status: 0\n"
    )
