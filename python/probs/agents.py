"""Agents: the players of `probs match` (common/play/agent.h)."""

import ctypes

from . import _lib
from ._lib import lib
from .games import Game, states_array


def agent_kinds():
    """The valid agent specs, as one line of text."""
    buf = ctypes.create_string_buffer(4096)
    lib.pb_capi_agent_kinds(buf, len(buf))
    return buf.value.decode()


class Agent(_lib.Handle):
    """A player: Agent(game, spec, model=None, seed=1).

    spec is any agent of `probs match` ("random", "lookahead:3",
    "alphabeta:4", "uct:200", "abnet:PATH,nodes=2000", "mcts:PATH,N=200",
    "beam:PATH,E=100,M=8", "gtp:COMMAND", ...; agent_kinds() lists them).
    Its search budget is the spec's own setting (abnet's nodes=, beam's E=,
    mcts's N=, uct:N, alphabeta:D); model (a path or a Model) fills in the
    checkpoint of a network kind given without one ("abnet,nodes=500").
    act(state, time_ms=...) gives one move a time budget instead: abnet
    searches with time=, mcts, beam and bpip are sized to it from their
    measured rate (as `probs gtp` sizes them under a clock)."""

    def __init__(self, game, spec, model=None, seed=1):
        self._h = None
        self.game = Game(game)
        path = getattr(model, "path", model)
        e = _lib.err()
        self._h = _lib.check_handle(
            lib.pb_capi_agent_new(self.game._ptr, _lib.text(spec),
                                  _lib.text(None if path is None else str(path)),
                                  int(seed), e), e)
        self.name = lib.pb_capi_agent_name(self._h).decode()
        self.scales = bool(lib.pb_capi_agent_scales(self._h))

    _free = lib.pb_capi_agent_close

    def _closed_what(self):
        return "agent %s" % self.name

    def _check_game(self, g):
        if g is not None and g is not self.game:
            raise _lib.Error(_lib.EMISMATCH, "agent %s plays %s, not %s"
                             % (self.name, self.game.name, g.name))

    def act(self, state, time_ms=None):
        """The action the agent plays in state (not finished), within about
        time_ms milliseconds when given."""
        self._check_game(state.game)
        e = _lib.err()
        budget = -1 if time_ms is None else int(time_ms)
        return _lib.raise_for(lib.pb_capi_agent_act(self._handle(), ctypes.byref(state._s),
                                                    budget, e), e)

    def act_many(self, states, seed=0):
        """Its moves in many positions at once (the network kinds batch
        their network calls): a list of actions."""
        arr, g = states_array(states)
        self._check_game(g)
        n = len(arr)
        out = (ctypes.c_int * max(1, n))()
        e = _lib.err()
        if n:
            _lib.raise_for(lib.pb_capi_agent_act_many(self._handle(), arr, n, int(seed),
                                                      out, e), e)
        return list(out[:n])

    def reseed(self, seed):
        lib.pb_capi_agent_reseed(self._handle(), int(seed))

    @property
    def evaluations(self):
        """Network evaluations made so far (moves without time_ms)."""
        return lib.pb_capi_agent_evaluations(self._handle())

    @property
    def last_spec(self):
        """The spec that chose the last move, a time budget's size in it
        ("abnet:PATH,time=180")."""
        return lib.pb_capi_agent_last_spec(self._handle()).decode()

    def __repr__(self):
        return "<probs.Agent %s>" % self.name
