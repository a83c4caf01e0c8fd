"""A worker whose module takes a moment to import. A spawned worker imports its target's module while
Python's bootstrap unpickles it, before the worker's own first step (workers._child) runs: a Ctrl-C
then used to land in the bootstrap (tests/test_gpu_worker.py)."""
import time

from engine.devices import workers

IMPORT_S = 1.5
time.sleep(IMPORT_S)


def echo(conn) -> None:
    workers.serve(conn, "test worker", {"echo": lambda payload, reply: payload})
