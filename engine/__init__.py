"""CUDA Matmul Explorer's engine: compiles, runs and traces the kernels; no Streamlit here."""
from engine import lifecycle  # noqa: F401 - whatever the engine starts ends with the process (atexit)
