"""The grader at work, for the exercises' index page: a wrong answer, then the fix.

Run `python -m snippets.exercises.demo` to print what the page shows.
"""

# --8<-- [start:imports]
from snippets.exercises import check

# --8<-- [end:imports]


def check_wrong_answer() -> int:
    # --8<-- [start:check-wrong]
    status = check.main(
        ["manual_dense", "snippets/exercises/examples/psum_forgotten.py"]
    )
    print("exit status:", status)
    # --8<-- [end:check-wrong]
    return status


def check_reference() -> int:
    # --8<-- [start:check-reference]
    status = check.main(["manual_dense", "snippets/exercises/manual_dense/solution.py"])
    print("exit status:", status)
    # --8<-- [end:check-reference]
    return status


def main() -> None:
    check_wrong_answer()
    check_reference()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
