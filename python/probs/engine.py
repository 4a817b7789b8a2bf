"""The batch analysis engine of `probs analysis` (common/play/engine.h,
docs/analysis.md): JSON queries in, JSON answers out, the queries of a
batch answered together so that their network calls are batched."""

import json

from . import _lib
from ._lib import lib


class Engine(_lib.Handle):
    """Engine(model, batch=64) over a Model (kept open while the engine
    lives). query() hands it one query (a dict, or a JSON line) as
    `probs analysis` reads them; a bad one is answered at once, good ones
    wait until `batch` of them wait or flush(). Answers (dicts) are
    collected in order: flush() answers what waits and returns every
    answer not yet returned; analyze() is query() then flush()."""

    def __init__(self, model, batch=64):
        self.model = model
        self._h = None
        answers = self._answers = []

        # A closure over the list, not a method: the engine and its callback
        # make no cycle, so the engine is freed before its model.
        def emit(ctx, line, n):
            answers.append(json.loads(line[:n].decode("utf-8", "replace")))
            return 0

        self._emit = _lib.EMIT(emit)  # kept alive with the engine
        e = _lib.err()
        self._h = _lib.check_handle(
            lib.pb_capi_engine_new(model._handle(), int(batch), self._emit, None, e), e)
        model._borrowers.add(self)

    _free = lib.pb_capi_engine_close

    def _closed_what(self):
        return "the analysis engine"

    def query(self, q):
        """Hands the engine one query: a dict (sent as JSON) or a line of
        JSON text. Returns the number of queries waiting."""
        line = (q if isinstance(q, str) else json.dumps(q)).encode()
        e = _lib.err()
        _lib.raise_for(lib.pb_capi_engine_query(self._handle(), line, len(line), e), e)
        return lib.pb_capi_engine_waiting(self._h)

    def flush(self):
        """Answers every waiting query; returns the answers not yet
        returned, in the order they were written (an error object, with an
        "error" field, for each bad query)."""
        e = _lib.err()
        _lib.raise_for(lib.pb_capi_engine_flush(self._handle(), e), e)
        out = list(self._answers)
        del self._answers[:]
        return out

    def analyze(self, *queries):
        """query() each, then flush(): the answers, or the one answer when
        one query was given."""
        for q in queries:
            self.query(q)
        out = self.flush()
        return out[0] if len(queries) == 1 and len(out) == 1 else out
