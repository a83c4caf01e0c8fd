import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# No background compiling of every kernel variant in tests (or in the app servers they start): each
# test's timings and CPU are its own. tests/test_engine_speed.py tests prebuild() itself.
os.environ.setdefault("MATMUL_EXPLORER_PREBUILD", "0")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU and PyCUDA (run on the device)")


def _gpu_available() -> tuple[bool, str]:
    from engine import gpu_client
    st = gpu_client.status()
    return st.available, st.reason


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items):
        return
    ok, reason = _gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"no GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    from engine import gpu_client
    gpu_client.shutdown()
