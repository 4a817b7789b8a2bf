"""The Python package (python/probs, docs/python.md) against the programs:
run by tests/test_python.sh, which sets PROBS_BIN (build/bin), PROBS_SRC
(the source tree), PROBS_LIB and PYTHONPATH."""

import contextlib
import io
import json
import os
import re
import subprocess
import unittest

import probs

BIN = os.environ["PROBS_BIN"]
SRC = os.environ["PROBS_SRC"]
C4 = os.path.join(SRC, "data", "models", "connect4.pbck")
C4AZ = os.path.join(SRC, "data", "models", "connect4-alphazero.pbck")


def run(*args):
    """stdout of build/bin/probs ARGS (which must exit 0)."""
    p = subprocess.run([os.path.join(BIN, "probs")] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError("probs %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def perft(s, depth):
    if depth == 0:
        return 1
    return sum(perft(s.child(a), depth - 1) for a in s.legal())


class Games(unittest.TestCase):
    def test_perft_as_probs_perft(self):
        for name, depth in (("connect4", 4), ("othello", 4), ("tictactoe", 5), ("toguz", 2)):
            want = int(run("perft", "--game", name, "--depth", str(depth)).split()[-1])
            g = probs.game(name)
            self.assertEqual(perft(g.start(), depth), want, name)
            self.assertEqual(g.perft(depth), want, name)

    def test_play_encode_pack(self):
        c4 = probs.game("connect4")
        self.assertIn("connect4", probs.games())
        self.assertEqual((c4.num_actions, c4.shape), (7, (c4.planes, 6, 7)))
        s = c4.start()
        self.assertEqual((s.ply, s.to_move, s.legal()), (0, "X", list(range(7))))
        self.assertEqual(s.play("4"), 0.0)
        self.assertEqual((s.ply, s.to_move), (1, "O"))
        x = s.encode()
        self.assertEqual(len(x), c4.planes * 42)
        # from O's side: none of its own stones, X's one in plane 1
        self.assertEqual((sum(x[:42]), sum(x[42:84])), (0.0, 1.0))
        t = c4.position("4")
        self.assertEqual(s, t)
        self.assertEqual(hash(s), hash(t))
        self.assertEqual(c4.unpack(s.pack()), s)
        self.assertEqual(c4.position([3]), s)
        self.assertNotEqual(s.child(0), s)
        # X wins in column 1
        w = c4.position("171717")
        self.assertEqual(w.play(0), 1.0)
        self.assertTrue(w.is_over())
        self.assertEqual((w.legal(), w.result()), ([], -1.0))
        self.assertIsNone(s.result())
        self.assertIn("1", str(c4.start()))
        o = probs.game("othello")
        names = o.position("f5d6").legal_names()
        self.assertEqual(len(names), len(o.position("f5d6").legal()))
        self.assertTrue(all(re.fullmatch("[a-h][1-8]", n) for n in names), names)
        self.assertEqual(o.action_name(o.start().action("F5")), "f5")

    def test_errors(self):
        c4 = probs.game("connect4")
        s = c4.position("444444")
        with self.assertRaises(probs.Error) as cm:
            s.play("4")
        self.assertEqual(cm.exception.name, "PB_EILLEGAL")
        self.assertIn("4", str(cm.exception))
        self.assertEqual(s, c4.position("444444"))  # unchanged
        with self.assertRaises(probs.Error) as cm:
            s.play(3)
        self.assertEqual(cm.exception.name, "PB_EILLEGAL")
        with self.assertRaises(probs.Error) as cm:
            c4.position("48")
        self.assertRegex(str(cm.exception), "8")
        with self.assertRaises(probs.Error) as cm:
            probs.game("chess")
        self.assertIn("connect4", str(cm.exception))
        with self.assertRaises(probs.Error):
            c4.unpack(b"\xff" * 3)
        with self.assertRaises(probs.Error) as cm:
            probs.Model(os.path.join(SRC, "no-such-model.pbck"))
        self.assertIn("no-such-model.pbck", str(cm.exception))
        with self.assertRaises(probs.Error) as cm:
            probs.Agent(c4, "no-such-kind")
        self.assertIn("lookahead", str(cm.exception))


class Models(unittest.TestCase):
    def test_v_q_as_probs_analyze(self):
        want = json.loads(run("analyze", "--model", C4, "--position", "4453", "--json"))
        c4 = probs.game("connect4")
        s = c4.position("4453")
        with probs.Model(C4) as m:
            self.assertEqual((m.game, m.alphazero, m.kind), (c4, False, "vq"))
            self.assertAlmostEqual(m.value(s), want["v"], places=5)
            q = m.q(s)
            self.assertEqual(len(q), 7)
            for mv in want["moves"]:
                a = s.action(mv["move"])
                self.assertAlmostEqual(q[a], mv["q"], places=5)
                kid = s.child(a)
                if not kid.is_over():
                    self.assertAlmostEqual(-m.value(kid), mv["v1"], places=5)
            # a batch gives what one position at a time gives
            kids = [s.child(a) for a in s.legal()]
            vs = m.value(kids)
            for k, v in zip(kids, vs):
                self.assertAlmostEqual(v, m.value(k), places=5)
            p = m.policy(s)
            self.assertEqual(sorted(p), s.legal())
            self.assertAlmostEqual(sum(p.values()), 1.0, places=5)
            best = max(s.legal(), key=lambda a: q[a])
            self.assertEqual(max(p, key=p.get), best)
            self.assertEqual(c4.action_name(best), want["best_q"])

    def test_search_as_probs_analyze(self):
        want = json.loads(run("analyze", "--model", C4, "--position", "4453", "--nodes", "300",
                              "--json"))["abnet"]
        c4 = probs.game("connect4")
        s = c4.position("4453")
        with probs.Model(C4) as m:
            r = m.search(s, nodes=300)
            self.assertEqual([c4.action_name(a) for a in r["pv"]], want["pv"])
            self.assertEqual((r["depth"], r["solved"], r["evaluations"]),
                             (want["depth"], want["solved"], want["evaluations"]))
            self.assertAlmostEqual(r["value"], want["value"], places=5)
            self.assertEqual(r["move"], r["pv"][0])
            r = m.search(s, time_ms=50)
            self.assertIn(r["move"], s.legal())

    def test_alphazero_policy_as_probs_analyze(self):
        want = json.loads(run("analyze", "--model", C4AZ, "--position", "44", "--json"))
        s = probs.game("connect4").position("44")
        with probs.Model(C4AZ) as m:
            self.assertTrue(m.alphazero)
            self.assertEqual(m.kind, "pv")
            self.assertAlmostEqual(m.value(s), want["v"], places=5)
            p = m.policy(s)
            for mv in want["moves"]:
                self.assertAlmostEqual(p[s.action(mv["move"])], mv["p"], places=5)
            with self.assertRaises(probs.Error) as cm:
                m.q(s)
            self.assertEqual(cm.exception.name, "PB_EUNSUPP")
            with self.assertRaises(probs.Error) as cm:
                m.search(s)
            self.assertEqual(cm.exception.name, "PB_EUNSUPP")

    def test_wrong_game(self):
        with probs.Model(C4) as m:
            with self.assertRaises(probs.Error):
                m.value(probs.game("othello").start())
        with self.assertRaises(probs.Error):
            m.value(probs.game("connect4").start())  # closed


class Agents(unittest.TestCase):
    def test_budget(self):
        c4 = probs.game("connect4")
        s = c4.position("4453")
        want = json.loads(run("analyze", "--model", C4, "--position", "4453", "--nodes", "200",
                              "--json"))
        with probs.Agent(c4, "abnet,nodes=200", model=C4) as a:
            self.assertTrue(a.name.startswith("abnet:") and a.scales)
            self.assertEqual(c4.action_name(a.act(s)), want["best_abnet"])
            self.assertGreater(a.evaluations, 0)
            self.assertLessEqual(a.evaluations, want["abnet"]["evaluations"] + 8)
            # a time budget per move: abnet searches with time=
            mv = a.act(s, time_ms=100)
            self.assertIn(mv, s.legal())
            self.assertIn("time=", a.last_spec)
        # deterministic baselines and the batched form
        with probs.Agent(c4, "lookahead:2", seed=5) as a:
            states = [c4.position(p) for p in ("4", "44", "171717", "4453")]
            many = a.act_many(states, seed=9)
            self.assertEqual(len(many), 4)
            self.assertEqual(many[2], 0)  # the win in column 1
            for st, mv in zip(states, many):
                self.assertIn(mv, st.legal())
        with probs.Agent(c4, "random") as a:
            with self.assertRaises(probs.Error):
                a.act(c4.position("1717171"))  # over
            with self.assertRaises(probs.Error):
                a.act(probs.game("othello").start())
        self.assertIn("abnet", probs.agent_kinds())


class Matches(unittest.TestCase):
    def test_as_probs_match(self):
        out = run("match", "--game", "connect4", "--a", "lookahead:3", "--b", "random",
                  "--games", "20", "--seed", "3")
        w, d, l = map(int, re.search(r"^result: W=(\d+) D=(\d+) L=(\d+)", out, re.M).groups())
        fw, fd, fl = map(int, re.search(r"^A moving first *: W=(\d+) D=(\d+) L=(\d+)", out,
                                        re.M).groups())
        r = probs.match("connect4", "lookahead:3", "random", games=20, seed=3, threads=2)
        self.assertEqual((r.games, r.wins, r.draws, r.losses), (20, w, d, l))
        self.assertEqual((r.first_wins, r.first_draws, r.first_losses), (fw, fd, fl))
        self.assertEqual(len(r.outcomes), 20)
        self.assertEqual(r.outcomes.count(1), w)
        self.assertTrue(r.elo_lo <= r.elo <= r.elo_hi)
        self.assertIsNone(r.sprt)

    def test_openings_and_sprt(self):
        r = probs.match("connect4", "lookahead:2", "lookahead:1", games=1000,
                        sprt=(0, 200), seed=1)
        self.assertEqual(r.sprt, "H1")
        self.assertLess(r.games, 1000)
        with probs.Agent("tictactoe", "alphabeta:9") as ab:
            r = probs.match("tictactoe", ab, "alphabeta:9", openings=["5", "1"], games=4)
            self.assertEqual((r.games, r.draws), (4, 4))
        with self.assertRaises(probs.Error) as cm:
            probs.match("connect4", "random", "random", openings=["44444444"], games=2)
        self.assertIn("openings", str(cm.exception))
        with self.assertRaises(probs.Error):
            probs.match("connect4", "random", "nonsense", games=2)


class Engine(unittest.TestCase):
    def test_queries(self):
        s = probs.game("connect4").position("4453")
        with probs.Model(C4) as m:
            e = probs.Engine(m, batch=4)
            self.assertEqual(e.query({"id": "a", "position": "4453"}), 1)
            e.query('{"id": 2, "moves": ["4", "4"], "agent": "lookahead:1", "seed": 1}')
            e.query({"id": "bad", "moves": ["8"]})
            answers = e.flush()
            self.assertEqual([a["id"] for a in answers], ["bad", "a", 2])
            self.assertIn("error", answers[0])
            self.assertAlmostEqual(answers[1]["v"], m.value(s), places=5)
            self.assertEqual(len(answers[1]["moves"]), len(s.legal()))
            self.assertIn("move", answers[2])
            self.assertEqual(e.flush(), [])
            one = e.analyze({"id": 7, "position": "1717171"})
            self.assertEqual(one["result"], "X wins")
        # closing the model closed its engine
        with self.assertRaises(probs.Error):
            e.flush()


class Doc(unittest.TestCase):
    def test_docs_example_runs(self):
        with open(os.path.join(SRC, "docs", "python.md")) as f:
            text = f.read()
        blocks = re.findall(r"```python\n(.*?)```", text, re.S)
        self.assertEqual(len(blocks), 1)
        # what the page says it prints: the indented block after "It prints"
        said = re.search(r"It prints.*?:\n\n(.*?)\n## ", text, re.S).group(1)
        said = [l[4:] for l in said.rstrip().split("\n")]
        cwd = os.getcwd()
        os.chdir(SRC)
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(blocks[0], "docs/python.md", "exec"), {})
        finally:
            os.chdir(cwd)
        got = out.getvalue().rstrip().split("\n")
        timed = [i for i, l in enumerate(said) if l.startswith("in 50 ms:")]
        self.assertEqual(len(timed), 1)
        del said[timed[0]], got[timed[0]]  # the time budget's line varies
        self.assertEqual(got, said)


if __name__ == "__main__":
    unittest.main(verbosity=2)
