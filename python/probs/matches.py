"""Matches between two agents (common/play/match.h), as `probs match`."""

import ctypes

from . import _lib
from ._lib import lib
from .agents import Agent
from .games import Game

_FIELDS = ("games", "wins", "draws", "losses", "first_wins", "first_draws",
           "first_losses", "second_wins", "second_draws", "second_losses",
           "capped", "plies", "_sprt")
_VERDICT = {0: "undecided", 1: "H0", 2: "H1"}


class MatchResult:
    """A match's result, for agent A: games, wins, draws, losses (and
    first_*/second_*: those where A moved first / second), capped, plies,
    score (in [0, 1]), elo with its 95% interval (elo_lo, elo_hi), outcomes
    (A's result of each game in order, +1/0/-1), and with an SPRT sprt
    ("H0", "H1" or "undecided") and llr."""

    def __init__(self, values, elo, llr, outcomes, sprt):
        for k, v in zip(_FIELDS, values):
            setattr(self, k, v)
        self.elo, self.elo_lo, self.elo_hi = elo
        self.score = (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0
        self.outcomes = outcomes
        self.sprt = _VERDICT[self._sprt] if sprt else None
        self.llr = llr if sprt else None

    def __repr__(self):
        s = "W=%d D=%d L=%d score=%.3f elo=%+.0f [%+.0f, %+.0f]" % (
            self.wins, self.draws, self.losses, self.score, self.elo, self.elo_lo, self.elo_hi)
        if self.sprt is not None:
            s += " sprt=%s llr=%.3f" % (self.sprt, self.llr)
        return "<probs.MatchResult %s>" % s


def match(game, a, b, games=100, seed=1, threads=0, random_plies=0, openings=None,
          sprt=None):
    """Plays agent A against agent B (specs, as Agent takes them, with
    their checkpoint paths, or Agents: their specs) in `game`: A moves first in the even games;
    everything random in game i is seeded from (seed, i), so the result is
    the same whatever the threads (0: every CPU). random_plies: the first
    plies of each game are uniformly random. openings: a list of openings
    (moves from the start in the game's notation, "4453"; "-" the start),
    or the text of an openings file; game 2i and 2i+1 start from opening i.
    sprt: (elo0, elo1) or (elo0, elo1, alpha, beta): stop when the GSPRT
    decides, `games` the most played. Returns a MatchResult."""
    g = Game(game)
    a, b = (x.name if isinstance(x, Agent) else x for x in (a, b))
    if isinstance(openings, (list, tuple)):
        openings = "\n".join(openings) + "\n"
    sp = None
    if sprt is not None:
        t = tuple(float(x) for x in sprt)
        if len(t) == 2:
            t += (0.05, 0.05)
        if len(t) != 4:
            raise ValueError("sprt: (elo0, elo1) or (elo0, elo1, alpha, beta)")
        sp = (ctypes.c_double * 4)(*t)
    games = int(games)
    out = (ctypes.c_int * len(_FIELDS))()
    elo = (ctypes.c_double * 3)()
    llr = ctypes.c_double()
    outcomes = (ctypes.c_int8 * max(1, games))()
    e = _lib.err()
    _lib.raise_for(lib.pb_capi_match(g._ptr, _lib.text(a), _lib.text(b), games, int(seed),
                                     int(threads), int(random_plies), _lib.text(openings),
                                     sp, out, elo, ctypes.byref(llr), outcomes, e), e)
    played = out[0]
    return MatchResult(list(out), tuple(elo), llr.value, list(outcomes[:played]), sp is not None)
