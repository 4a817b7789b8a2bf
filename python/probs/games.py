"""Games and positions (common/games/game.h)."""

import ctypes

from . import _lib
from ._lib import lib


class Game:
    """One of the games: probs.game("connect4"). Attributes: name, id,
    num_actions, planes, height, width (the network input's shape is
    (planes, height, width)), max_turns, state_bytes."""

    _cache = {}

    def __new__(cls, name):
        if isinstance(name, Game):
            return name
        g = cls._cache.get(name)
        if g is None:
            e = _lib.err()
            ptr = _lib.check_handle(lib.pb_capi_game(_lib.text(name), e), e)
            g = super().__new__(cls)
            g._ptr = ptr
            g.name = lib.pb_capi_game_name(ptr).decode()
            info = (ctypes.c_int * 7)()
            lib.pb_capi_game_info(ptr, info)
            (g.id, g.num_actions, g.planes, g.height, g.width, g.max_turns,
             g.state_bytes) = tuple(info)
            cls._cache[name] = g
        return g

    @classmethod
    def _from_ptr(cls, ptr):
        return cls(lib.pb_capi_game_name(ptr).decode())

    @property
    def shape(self):
        """The network input's shape: (planes, height, width)."""
        return (self.planes, self.height, self.width)

    def start(self):
        """The initial position."""
        return State(self)

    def position(self, moves):
        """The position after `moves` from the start, in the game's notation
        ("4453" in Connect Four, "f5d6c3" in Othello), or a list of moves
        (names or actions)."""
        s = State(self)
        if isinstance(moves, str):
            e = _lib.err()
            _lib.raise_for(lib.pb_capi_parse(self._ptr, ctypes.byref(s._s),
                                             _lib.text(moves), e), e)
        else:
            for m in moves:
                s.play(m)
        return s

    def unpack(self, data):
        """The position of its compact form (State.pack); Error if the bytes
        are not a position of this game."""
        s = State(self)
        e = _lib.err()
        data = bytes(data)
        _lib.raise_for(lib.pb_capi_unpack(self._ptr, ctypes.byref(s._s), data,
                                          len(data), e), e)
        return s

    def action_name(self, action):
        """The name of an action as users type it ("4" for Connect Four's
        action 3)."""
        buf = ctypes.create_string_buffer(32)
        n = lib.pb_capi_action_name(self._ptr, int(action), buf, len(buf))
        if n < 0:
            raise _lib.Error(n, "%s: action %r is out of range 0..%d" %
                             (self.name, action, self.num_actions - 1))
        return buf.value.decode()

    def perft(self, depth, state=None):
        """The number of move sequences of exactly `depth` plies from state
        (default the start), computed by the library."""
        s = state or self.start()
        return lib.pb_capi_perft(self._ptr, ctypes.byref(s._s), int(depth))

    def count_games(self, depth, state=None):
        """The number of distinct games that end within `depth` plies."""
        s = state or self.start()
        return lib.pb_capi_count_games(self._ptr, ctypes.byref(s._s), int(depth))

    def __repr__(self):
        return "probs.Game(%r)" % self.name

    def __reduce__(self):
        return (Game, (self.name,))


def game(name):
    """The game named `name` (probs.games() lists them)."""
    return Game(name)


def games():
    """The names of the games."""
    return lib.pb_capi_game_names().decode().split(", ")


class State:
    """A position of a game: a small value that play() changes in place
    (copy() or child() for a new one). Two equal positions compare and hash
    equal."""

    __slots__ = ("game", "_s")

    def __init__(self, game, _words=None):
        self.game = Game(game)
        self._s = _lib.State_t()
        if _words is None:
            lib.pb_capi_reset(self.game._ptr, ctypes.byref(self._s))
        else:
            self._s.w[:] = _words

    def copy(self):
        return State(self.game, list(self._s.w))

    def legal(self):
        """The legal actions, increasing ([] when the game is over)."""
        buf = (ctypes.c_uint8 * _lib.MAX_ACTIONS)()
        n = lib.pb_capi_legal(self.game._ptr, ctypes.byref(self._s), buf)
        return list(buf[:n])

    def legal_names(self):
        """The legal moves' names, in the order of legal()."""
        return [self.game.action_name(a) for a in self.legal()]

    def action(self, move):
        """The action of a move: an int is checked to be legal, a str is
        read as a user types it ("4", "F5", "pass")."""
        if isinstance(move, str):
            a = ctypes.c_int()
            e = _lib.err()
            _lib.raise_for(lib.pb_capi_parse_move(
                self.game._ptr, ctypes.byref(self._s), _lib.text(move),
                ctypes.byref(a), e), e)
            return a.value
        return int(move)

    def play(self, move):
        """Plays a legal move (an action, or its name) in place. Returns
        the mover's reward (+1 a win, 0 a draw or not over, -1 a loss);
        Error (PB_EILLEGAL) if the move is not legal, the state unchanged."""
        a = self.action(move)
        r = ctypes.c_float()
        done = ctypes.c_int()
        e = _lib.err()
        _lib.raise_for(lib.pb_capi_play(self.game._ptr, ctypes.byref(self._s), a,
                                        ctypes.byref(r), ctypes.byref(done), e), e)
        return r.value

    def child(self, move):
        """A copy with the move played."""
        c = self.copy()
        c.play(move)
        return c

    def is_over(self):
        return lib.pb_capi_terminal(self.game._ptr, ctypes.byref(self._s), None) != 0

    def result(self):
        """The result for the side to move when the game is over (+1, 0,
        -1), else None."""
        r = ctypes.c_float()
        if lib.pb_capi_terminal(self.game._ptr, ctypes.byref(self._s), ctypes.byref(r)):
            return r.value
        return None

    def encode(self):
        """The network input from the side to move: planes*height*width
        floats, a flat list (game.shape gives its shape; plane 0 the
        mover's stones, plane 1 the opponent's)."""
        n = self.game.planes * self.game.height * self.game.width
        buf = (ctypes.c_float * n)()
        lib.pb_capi_encode(self.game._ptr, ctypes.byref(self._s), buf)
        return list(buf)

    def pack(self):
        """The compact wire form (game.state_bytes bytes)."""
        buf = (ctypes.c_uint8 * self.game.state_bytes)()
        lib.pb_capi_pack(self.game._ptr, ctypes.byref(self._s), buf)
        return bytes(buf)

    @property
    def ply(self):
        """Moves played so far."""
        return lib.pb_capi_ply(self.game._ptr, ctypes.byref(self._s))

    @property
    def to_move(self):
        """The side to move: "X" (the first player) or "O"."""
        return chr(lib.pb_capi_side(self.game._ptr, ctypes.byref(self._s)))

    def board(self):
        """The board drawn with its coordinates."""
        buf = ctypes.create_string_buffer(1024)
        lib.pb_capi_render(self.game._ptr, ctypes.byref(self._s), buf, len(buf))
        return buf.value.decode()

    __str__ = board

    def __eq__(self, other):
        return (isinstance(other, State) and other.game is self.game
                and list(other._s.w) == list(self._s.w))

    def __hash__(self):
        return lib.pb_capi_hash(self.game._ptr, ctypes.byref(self._s))

    def __repr__(self):
        return "<probs.State %s ply %d, %s to move>" % (self.game.name, self.ply, self.to_move)


def states_array(states):
    """A C array of the positions (all of one game) and that game."""
    states = list(states)
    if not states:
        return (_lib.State_t * 0)(), None
    g = states[0].game
    arr = (_lib.State_t * len(states))()
    for i, s in enumerate(states):
        if not isinstance(s, State) or s.game is not g:
            raise ValueError("positions of one game expected (item %d)" % i)
        arr[i].w[:] = s._s.w
    return arr, g
