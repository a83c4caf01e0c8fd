"""The five source documents the explorer's kernels and claims come from, named as users see them.

The registry and the claims cite a document by its stable id ("000".."004"); every text a user
reads shows the document's title instead, through this module. A title is the document's own first
heading; the one document without a heading gets a short title that says what it is about, and its
description says that it is untitled.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.errors import lookup


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    about: str      # one line: what the document covers


DOCUMENTS: tuple[Document, ...] = (
    Document("000", "Matrix Multiplication",
             "From the CPU triple loop to a one-thread-per-output CUDA kernel (threadIdx.x on rows), memory "
             "access patterns and the memory hierarchy, then a shared-memory tiled kernel with boundary guards."),
    Document("001", "CUDA Kernel for Non-Square Matrix Multiplication",
             "A homework write-up for an n×k by k×n product: transposing B for coalesced reads, a shared-memory "
             "kernel, padding against bank conflicts, and V100 results with the relative error."),
    Document("002", "Matrix Multiplication in CUDA",
             "A ladder from naive CPU and CUDA kernels through shared-memory tiling to cuBLAS, tensor cores "
             "with WMMA, and rough A100 throughput figures."),
    Document("003", "Tiled Matrix Multiplication in Phases",
             "Untitled notes: each output's dot product computed phase by phase from shared-memory tiles, "
             "with __syncthreads() between loading and computing, and a kernel without bounds checks."),
    Document("004", "Matrix Multiplication using Shared Memory Tiling",
             "Why the naive kernel's 2N³ global reads saturate memory, and a step-by-step walkthrough of a "
             "tiled kernel that cuts them by TILE_SIZE."),
)

_BY_ID = {d.id: d for d in DOCUMENTS}


def get(doc_id: str) -> Document:
    return lookup(_BY_ID, doc_id, "source document")


def cite(ids: tuple[str, ...] | list[str] | str, mark: str = "“{}”") -> str:
    """The titles of the documents `ids`, each put into `mark` ("“{}”" for plain text, "*{}*" or
    "**{}**" for Markdown), as a list in words: "A", "A and B", "A, B and C"."""
    if isinstance(ids, str):
        ids = (ids,)
    names = [mark.format(get(i).title) for i in ids]
    if not names:   # a kernel from outside the catalog (declared.spec_from_source) cites none
        return ""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
