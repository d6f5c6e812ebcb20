"""Scratch that outlives a call: int32 buffers that kernels return to zero, private to a stream or to a capture.

Two kernels coordinate their programs through global memory: the hier select's per-row arrival counters and the
parallel radix select's row totals.  Each call returns the slots it used to zero (the radix select's last ones at
its next call's first launch), so a buffer is zeroed once and reused by later calls -- but only by calls that
cannot run at the same time as the one before:

* an eager call takes the buffer of its (device, current stream): calls on one stream run in order, calls on two
  streams never share one;
* a call being captured in a CUDA graph takes the buffer of its (capture, stream), allocated inside the capture
  (from the graph's memory pool; its zeroing is captured once, so a graph holding many calls replays one memset);
  a graph shares it with no other graph and with no eager call.

Freeing: eager buffers live in a table bounded to :data:`MAX_STREAMS` entries, least recently used dropped first.
Dropping one is safe while its stream still runs work on it: the buffer was allocated on that stream, so PyTorch's
caching allocator hands its memory only to later allocations on the same stream, which run after that work.  A
capture's entry is dropped when the next capture or eager call on its stream arrives; the graph keeps the memory
(a graph's pool holds what its capture allocated).  When the capture cannot be identified (no driver entry point),
each captured call allocates its own zeroed buffer: correct, one memset node more per call.
"""
from __future__ import annotations

import collections
import ctypes
import functools
import threading

import torch

__all__ = ["zeroed", "MAX_STREAMS"]

MAX_STREAMS = 64  # eager buffers kept per name, least recently used dropped first
MIN_NUMEL = 1024

_LOCK = threading.Lock()
_EAGER: collections.OrderedDict = collections.OrderedDict()  # (name, device, stream) -> tensor
_CAPTURE: dict = {}  # (name, device, stream) -> (capture id, tensor)


@functools.lru_cache(maxsize=None)
def _capture_info():
    """The driver's capture query, or None where it cannot be loaded.  Every version's first three parameters are
    (stream, status*, id*); the later ones are optional outputs, passed as NULL (extra arguments are harmless to
    the shorter forms)."""
    try:
        lib = ctypes.CDLL("libamdhip64.so" if torch.version.hip else "libcuda.so.1")
    except OSError:
        return None
    names = ("hipStreamGetCaptureInfo",) if torch.version.hip else ("cuStreamGetCaptureInfo_v2",
                                                                      "cuStreamGetCaptureInfo")
    for name in names:
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_ulonglong)] + [
                ctypes.c_void_p] * 4
            return fn
    return None


def _capture_id(stream: int) -> int | None:
    """The id of the capture under way on ``stream`` (None if it cannot be read)."""
    fn = _capture_info()
    if fn is None:
        return None
    status, cid = ctypes.c_int(0), ctypes.c_ulonglong(0)
    if fn(ctypes.c_void_p(stream), ctypes.byref(status), ctypes.byref(cid), None, None, None, None) != 0:
        return None
    return int(cid.value) if status.value == 1 else None  # 1: a capture is active


def _stream(device: torch.device) -> int:
    return torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0


def zeroed(name: str, device: torch.device, numel: int, *, capturing: bool = False) -> torch.Tensor:
    """An int32 buffer of at least ``numel`` zeros for the named purpose on ``device``, private to the current
    stream (eager) or to the capture under way on it (``capturing``).  The caller's kernels must return every slot
    they use to zero before a later call on the buffer adds into it (by the call's end, or at the next call's first
    launch)."""
    numel = max(int(numel), 1)
    if device.type == "meta":
        return torch.zeros(numel, dtype=torch.int32, device=device)
    stream = _stream(device)
    key = (name, device.type, device.index, stream)
    if capturing:
        cid = _capture_id(stream)
        with _LOCK:
            hit = _CAPTURE.get(key)
            if cid is not None and hit is not None and hit[0] == cid and hit[1].numel() >= numel:
                return hit[1]
        buf = torch.zeros(numel, dtype=torch.int32, device=device)  # graph-private: captured with its memset
        if cid is not None:
            with _LOCK:
                _CAPTURE[key] = (cid, buf)
        return buf
    with _LOCK:
        _CAPTURE.pop(key, None)
        buf = _EAGER.get(key)
        if buf is not None and buf.numel() >= numel:
            _EAGER.move_to_end(key)
            return buf
    buf = torch.zeros(max(numel, MIN_NUMEL), dtype=torch.int32, device=device)  # on this stream
    with _LOCK:
        _EAGER[key] = buf
        _EAGER.move_to_end(key)
        while len(_EAGER) > MAX_STREAMS:
            _EAGER.popitem(last=False)
    return buf
