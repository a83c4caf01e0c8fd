"""`python -m engine bench`: registered by engine/cli.py (see engine/benchmark.py)."""


def register(sub) -> None:
    return None
