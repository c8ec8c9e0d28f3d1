"""Plausible wrong answers to every exercise fail, each with the message meant for it.

The answers are data beside each grader: snippets/exercises/<name>/wrong_answers.toml.
Messages are compared with runs of whitespace made single, as the grader wraps lines.
"""

import tomllib

import pytest

from snippets.exercises.registry import EXERCISES, HERE

# exercise -> [(what the mistake is, the file, what the grader must say)]
WRONG = {
    name: [
        (answer["mistake"], answer["source"], answer["says"])
        for answer in tomllib.loads(
            (HERE / name / "wrong_answers.toml").read_text(encoding="utf-8")
        )["wrong"]
    ]
    for name in EXERCISES
}


def test_every_exercise_has_at_least_two_wrong_answers():
    assert set(WRONG) == set(EXERCISES)
    assert all(len(answers) >= 2 for answers in WRONG.values())


def every_push(answers: list, i: int) -> bool:
    """Each grader refuses its first and its newest wrong answer on every push, the others
    once a day (`daily`): 36 of 122 answers, about a minute less per push."""
    return i in (0, len(answers) - 1)


# A wrong answer gets its message and nothing else: no traceback printed later by what its
# failure left behind (a failed Orbax load's unfinished reads, for one; see check.py).
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize(
    ("exercise", "source", "messages"),
    [
        pytest.param(
            name,
            source,
            messages,
            id=f"{name}: {mistake}",
            marks=() if every_push(answers, i) else pytest.mark.daily,
        )
        for name, answers in WRONG.items()
        for i, (mistake, source, messages) in enumerate(answers)
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
