"""The one exception the engine raises to its callers: a one-line message a user can act on."""


class EngineError(Exception):
    """Bad input, a refused request, or a kernel that failed. str(e) is the whole message."""


class WorkerCrashed(EngineError):
    """The GPU worker died or hung; it has been replaced and the next request starts clean."""
