"""The one exception the engine raises to its callers: a one-line message a user can act on."""


class EngineError(Exception):
    """Bad input, a refused request, or a kernel that failed. str(e) is the whole message."""


class WorkerCrashed(EngineError):
    """A worker process (CPU or GPU) died, hung or faulted; it has been replaced and the next request
    starts clean."""


def lookup(table: dict, key, what: str):
    """table[key], or an EngineError naming what was asked for and what there is."""
    try:
        return table[key]
    except KeyError:
        raise EngineError(f"unknown {what} {key!r}; known: {', '.join(map(str, table))}") from None
