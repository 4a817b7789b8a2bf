"""The shared library libprobs.so and its C API (python/probs_capi.h).

Found, in this order: the file the environment variable PROBS_LIB names;
libprobs.so next to this package; lib/libprobs.so of the build trees of
the source tree this package sits in (build/, then build-test/).
"""

import ctypes
import os

STATE_WORDS = 4
MAX_ACTIONS = 72
ERR_MSG_MAX = 512

# PB_E* codes (common/base/err.h).
EINVAL, ENOMEM, EIO, ECORRUPT, EMISMATCH, ERANGE, EILLEGAL = range(-1, -8, -1)
EUNSUPP = -14


class Error(Exception):
    """An error of the probs library: .code is the PB_E* code (negative),
    .name its name ("PB_EINVAL"), str() the library's message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.name = ""


class State_t(ctypes.Structure):
    _fields_ = [("w", ctypes.c_uint64 * STATE_WORDS)]


class Err_t(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * ERR_MSG_MAX)]


_here = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("PROBS_LIB")
    if env:
        return [env]
    root = os.path.dirname(os.path.dirname(_here))
    return [os.path.join(_here, "libprobs.so")] + [
        os.path.join(root, b, "lib", "libprobs.so") for b in ("build", "build-test")]


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            return ctypes.CDLL(path), path
        tried.append(path)
    raise ImportError(
        "probs: libprobs.so not found (tried %s); build it with "
        "`cmake --build build --target probs_py` or set PROBS_LIB" % ", ".join(tried))


lib, path = _load()

P = ctypes.c_void_p
S = ctypes.POINTER(State_t)
E = ctypes.POINTER(Err_t)
I, U64, F, CP, SZ = ctypes.c_int, ctypes.c_uint64, ctypes.c_float, ctypes.c_char_p, ctypes.c_size_t
FP = ctypes.POINTER(ctypes.c_float)
IP = ctypes.POINTER(ctypes.c_int)
U8P = ctypes.POINTER(ctypes.c_uint8)
EMIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t)

_protos = {
    "pb_capi_sizes": (I, [IP]),
    "pb_capi_version": (CP, []),
    "pb_capi_err_name": (CP, [I]),
    "pb_capi_strerror": (CP, [I]),
    "pb_capi_game": (P, [CP, E]),
    "pb_capi_game_names": (CP, []),
    "pb_capi_game_name": (CP, [P]),
    "pb_capi_game_info": (None, [P, IP]),
    "pb_capi_reset": (None, [P, S]),
    "pb_capi_legal": (I, [P, S, U8P]),
    "pb_capi_play": (I, [P, S, I, FP, IP, E]),
    "pb_capi_terminal": (I, [P, S, FP]),
    "pb_capi_encode": (None, [P, S, FP]),
    "pb_capi_parse": (I, [P, S, CP, E]),
    "pb_capi_parse_move": (I, [P, S, CP, IP, E]),
    "pb_capi_action_name": (I, [P, I, CP, SZ]),
    "pb_capi_render": (I, [P, S, CP, SZ]),
    "pb_capi_hash": (U64, [P, S]),
    "pb_capi_ply": (I, [P, S]),
    "pb_capi_side": (I, [P, S]),
    "pb_capi_pack": (None, [P, S, U8P]),
    "pb_capi_unpack": (I, [P, S, CP, SZ, E]),
    "pb_capi_perft": (U64, [P, S, I]),
    "pb_capi_count_games": (U64, [P, S, I]),
    "pb_capi_model_open": (P, [CP, CP, E]),
    "pb_capi_model_close": (None, [P]),
    "pb_capi_model_game": (P, [P]),
    "pb_capi_model_alphazero": (I, [P]),
    "pb_capi_model_version": (U64, [P]),
    "pb_capi_model_path": (CP, [P]),
    "pb_capi_model_algorithm": (CP, [P]),
    "pb_capi_model_kind": (CP, [P]),
    "pb_capi_model_value": (I, [P, S, I, FP, E]),
    "pb_capi_model_q": (I, [P, S, I, FP, E]),
    "pb_capi_model_logits": (I, [P, S, I, FP, E]),
    "pb_capi_model_search": (I, [P, S, U64, I, IP, FP, IP, IP, ctypes.POINTER(U64), U8P, IP,
                                 E]),
    "pb_capi_agent_new": (P, [P, CP, CP, U64, E]),
    "pb_capi_agent_close": (None, [P]),
    "pb_capi_agent_act": (I, [P, S, ctypes.c_int64, E]),
    "pb_capi_agent_act_many": (I, [P, S, I, U64, IP, E]),
    "pb_capi_agent_reseed": (None, [P, U64]),
    "pb_capi_agent_evaluations": (U64, [P]),
    "pb_capi_agent_name": (CP, [P]),
    "pb_capi_agent_scales": (I, [P]),
    "pb_capi_agent_last_spec": (CP, [P]),
    "pb_capi_agent_kinds": (I, [CP, SZ]),
    "pb_capi_match": (I, [P, CP, CP, I, U64, I, I, CP, ctypes.POINTER(ctypes.c_double),
                          IP, ctypes.POINTER(ctypes.c_double),
                          ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int8), E]),
    "pb_capi_engine_new": (P, [P, I, EMIT, P, E]),
    "pb_capi_engine_close": (None, [P]),
    "pb_capi_engine_query": (I, [P, CP, SZ, E]),
    "pb_capi_engine_flush": (I, [P, E]),
    "pb_capi_engine_waiting": (I, [P]),
}

for _name, (_res, _args) in _protos.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        raise ImportError("probs: %s has no %s: a library older than this package; "
                          "rebuild it (the probs_py target)" % (path, _name)) from None
    _f.restype = _res
    _f.argtypes = _args

_sizes = (ctypes.c_int * 4)()
API_VERSION = lib.pb_capi_sizes(_sizes)
if tuple(_sizes) != (ctypes.sizeof(State_t), ctypes.sizeof(Err_t), MAX_ACTIONS, ERR_MSG_MAX):
    raise ImportError("probs: %s was built with another ABI (sizes %s)" % (path, tuple(_sizes)))
VERSION = lib.pb_capi_version().decode()


def err():
    """A fresh pb_err_t."""
    return Err_t()


def raise_for(code, e):
    """Raises Error for a negative code, with the message in e."""
    if code >= 0:
        return code
    msg = e.msg.decode("utf-8", "replace") or lib.pb_capi_strerror(code).decode()
    x = Error(code, msg)
    x.name = lib.pb_capi_err_name(code).decode()
    raise x


def check_handle(h, e):
    """The handle h, or Error with e's message when it is NULL."""
    if not h:
        raise_for(e.code if e.code < 0 else EINVAL, e)
    return h


def text(s):
    """A str argument as bytes for the C side (None stays None)."""
    if s is None:
        return None
    if not isinstance(s, str):
        raise TypeError("expected a str, got %s" % type(s).__name__)
    if "\0" in s:
        raise ValueError("a string with NUL inside")
    return s.encode()


class Handle:
    """An object over a C handle (self._h) that close() frees with
    self._free; usable in a with block, freed when collected too. A closed
    one raises Error naming what it was (self._closed_what())."""

    _h = None
    _free = None  # the C function that frees the handle

    def close(self):
        if self._h:
            type(self)._free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _closed_what(self):
        return type(self).__name__.lower()

    def _handle(self):
        if not self._h:
            raise Error(EINVAL, "%s is closed" % self._closed_what())
        return self._h
