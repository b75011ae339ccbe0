"""The embedded model's weights in a form llama.cpp computes well in batches on a CPU. Q4_1 and Q5 weights have
no matrix-matrix kernel there: a prompt or a batch of sequences costs about what as many single tokens cost.
Q8_0 has one (llamafile's), so the shipped Q4_1 SmolLM2 is copied once as Q8_0 into the cache folder: every
Q4_1 value is kept to within 1/254 of its block's largest, and prompts read ~1.45x and batches of 8 decode
~1.4x faster (measured for issue 25). Run in the model's process; a copy that cannot be written is skipped."""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from pathlib import Path

import llama_cpp.llama_cpp as low

# llama.cpp's file types (general.file_type) without a batched CPU kernel
SLOW_FILE_TYPES = {low.LLAMA_FTYPE_MOSTLY_Q4_1, low.LLAMA_FTYPE_MOSTLY_Q5_0, low.LLAMA_FTYPE_MOSTLY_Q5_1}


def file_type(path: Path) -> int | None:
    """The GGUF's general.file_type, read from its header without loading the weights."""
    from llama_cpp import Llama

    meta = Llama(model_path=str(path), vocab_only=True, verbose=False).metadata
    value = meta.get("general.file_type")
    return int(value) if value is not None and str(value).isdigit() else None


def batched_weights(path: Path, folder: Path) -> Path:
    """`path` itself, or its Q8_0 copy in `folder` (made once; named by the source's size and time, so a new
    file makes a new copy) when its weights have no batched kernel."""
    stat = path.stat()
    copy = folder / f"{path.stem}.{stat.st_size}-{stat.st_mtime_ns}.q8_0.gguf"
    if copy.is_file():  # made at an earlier start: the header need not be read again
        return copy
    if file_type(path) not in SLOW_FILE_TYPES:
        return path
    partial = copy.with_name(f"{copy.name}.{os.getpid()}.partial")
    params = low.llama_model_quantize_default_params()
    params.ftype, params.allow_requantize, params.nthread = low.LLAMA_FTYPE_MOSTLY_Q8_0, True, 1
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if low.llama_model_quantize(str(path).encode(), str(partial).encode(), ctypes.byref(params)) != 0:
            raise OSError("llama.cpp could not convert it")
        os.replace(partial, copy)
    except OSError as exc:  # a full or read-only disk: the original weights still work, only slower
        with contextlib.suppress(OSError):
            partial.unlink()
        print(f"Using {path.name} as it is: its Q8_0 copy could not be written to {folder} ({exc}).",
              file=sys.stderr)
        return path
    return copy
