"""Models: a checkpoint's or model file's networks (common/nn/model.h)."""

import ctypes
import math
import weakref

from . import _lib
from ._lib import lib
from .games import Game, State, states_array


class Model(_lib.Handle):
    """The networks of a probs checkpoint or model file (data/models/*.pbck,
    runs/*/checkpoints/*.pbck): probs.Model(path, device=None). A PROBS
    model has V and Q (kind "vq"); an AlphaZero model (kind "pv", alphazero
    True) a policy and a value head; a td model (kind "linear") a linear
    evaluation V. Close it with close() or a with block."""

    def __init__(self, path, device=None):
        self._h = None
        self._borrowers = weakref.WeakSet()  # engines over it, closed first
        e = _lib.err()
        self._h = _lib.check_handle(
            lib.pb_capi_model_open(_lib.text(str(path)), _lib.text(device), e), e)
        self.path = lib.pb_capi_model_path(self._h).decode()
        self.game = Game._from_ptr(lib.pb_capi_model_game(self._h))
        self.alphazero = bool(lib.pb_capi_model_alphazero(self._h))
        self.version = lib.pb_capi_model_version(self._h)
        self.algorithm = lib.pb_capi_model_algorithm(self._h).decode()
        self.kind = lib.pb_capi_model_kind(self._h).decode()

    _free = lib.pb_capi_model_close

    def close(self):
        """Frees the networks, after closing the engines over them."""
        for b in list(getattr(self, "_borrowers", ())):
            b.close()
        super().close()

    def _closed_what(self):
        return "model %s" % self.path

    def _call(self, fn, states, width):
        one = isinstance(states, State)
        arr, g = states_array([states] if one else states)
        if g is not None and g is not self.game:
            raise _lib.Error(_lib.EMISMATCH, "%s: a position of %s, the model plays %s"
                             % (self.path, g.name, self.game.name))
        n = len(arr)
        out = (ctypes.c_float * max(1, n * width))()
        e = _lib.err()
        _lib.raise_for(fn(self._handle(), arr, n, out, e), e)
        rows = [list(out[i * width:(i + 1) * width]) for i in range(n)]
        if width == 1:
            rows = [r[0] for r in rows]
        return rows[0] if one else rows

    def value(self, states):
        """V of a position (a float, from the side to move, in [-1, 1]), or
        of a list of positions (a list, evaluated in batches). An AlphaZero
        model: its value head."""
        return self._call(lib.pb_capi_model_value, states, 1)

    def q(self, states):
        """Q of a position: a list of num_actions floats, one per action
        (those of illegal actions mean nothing), or a list of such lists.
        Error (PB_EUNSUPP) for an AlphaZero model."""
        return self._call(lib.pb_capi_model_q, states, self.game.num_actions)

    def logits(self, states):
        """The logits whose softmax over the legal moves is the policy: an
        AlphaZero model's policy head, a PROBS model's Q."""
        return self._call(lib.pb_capi_model_logits, states, self.game.num_actions)

    def policy(self, state, temperature=1.0):
        """The policy of a position: {action: probability} over its legal
        moves, the softmax of logits / temperature (what MCTS takes as its
        priors; for a PROBS model softmax(Q / T), as mcts:CKPT,T=...)."""
        legal = state.legal()
        if not legal:
            return {}
        z = self.logits(state)
        m = max(z[a] for a in legal)
        w = {a: math.exp((z[a] - m) / temperature) for a in legal}
        t = sum(w.values())
        return {a: x / t for a, x in w.items()}

    def search(self, state, nodes=None, time_ms=None):
        """Alpha-beta over a PROBS model's V and Q at a position, as `probs
        analyze` searches it and the abnet: agent plays: at most `nodes`
        network evaluations (default 1000; with time_ms alone, no limit)
        and time_ms milliseconds. A dict: move (an action), value (from the
        side to move), depth (the deepest completed iteration), solved
        (the value is exact), evaluations, pv (the principal variation,
        actions from the position). Error (PB_EUNSUPP) for an AlphaZero or
        td model."""
        if state.game is not self.game:
            raise _lib.Error(_lib.EMISMATCH, "%s: a position of %s, the model plays %s"
                             % (self.path, state.game.name, self.game.name))
        move, depth, solved, pv_len = (ctypes.c_int() for _ in range(4))
        value = ctypes.c_float()
        evals = ctypes.c_uint64()
        pv = (ctypes.c_uint8 * 64)()
        e = _lib.err()
        _lib.raise_for(lib.pb_capi_model_search(
            self._handle(), ctypes.byref(state._s), int(nodes or 0), int(time_ms or 0),
            ctypes.byref(move), ctypes.byref(value), ctypes.byref(depth), ctypes.byref(solved),
            ctypes.byref(evals), pv, ctypes.byref(pv_len), e), e)
        return {"move": move.value, "value": value.value, "depth": depth.value,
                "solved": bool(solved.value), "evaluations": evals.value,
                "pv": list(pv[:pv_len.value])}

    def __repr__(self):
        return "<probs.Model %s: %s, %s, version %d>" % (
            self.path, self.game.name, self.algorithm, self.version)
