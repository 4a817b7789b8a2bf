"""probs from Python: games, models, agents, matches and the analysis
engine of the probs C library (libprobs.so, through ctypes; docs/python.md).

    import probs
    c4 = probs.game("connect4")
    s = c4.position("4453")
    s.legal(), s.play("4"), s.encode()
    with probs.Model("data/models/connect4.pbck") as m:
        m.value(s), m.q(s), m.policy(s)
        probs.Agent(c4, "abnet,nodes=500", model=m).act(s)
    probs.match("connect4", "lookahead:3", "random", games=20)

Errors of the library are raised as probs.Error, with its message.
"""

from ._lib import Error, VERSION as __version__, path as library_path
from .games import Game, State, game, games
from .models import Model
from .agents import Agent, agent_kinds
from .matches import MatchResult, match
from .engine import Engine

__all__ = ["Error", "Game", "State", "game", "games", "Model", "Agent",
           "agent_kinds", "MatchResult", "match", "Engine", "library_path"]
