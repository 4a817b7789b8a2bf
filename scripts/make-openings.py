#!/usr/bin/env python3
"""make-openings.py - the balanced opening books of data/openings/, one
file a game, for `probs match --openings` (docs/evaluator.md, "Opening
books"). Python 3 standard library only; it runs the probs binary.

  scripts/make-openings.py [--probs build/bin/probs] [--game GAME]...
                           [--count N] [--seed S]

How each book is made (the candidates are random move sequences from the
start, drawn by `probs match --a random --b random --opening-random K`
and read back from its --record file; duplicates dropped):
  tictactoe  every 2-ply position the solver values a draw
             (`probs solve`): a fair start for both sides;
  connect4   random 8-ply positions the solver (weak) values a draw,
             none with a win in one for the side to move;
  othello    random 6-ply positions (toguz: random 4-ply positions)
  toguz      whose value V for the side to move by the shipped model
             (data/models/GAME.pbck, `probs analyze --json`) lies within
             +-0.08: neither side ahead by the engine's estimate.
A line a position, its moves in the game's notation, as --openings reads
them; a '#' header says how the book was made.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

PLIES = {"tictactoe": 2, "connect4": 8, "othello": 6, "toguz": 4}
V_MAX = 0.08


def run(args, check=True):
    p = subprocess.run(args, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit("make-openings: %s: exit %d: %s" %
                 (" ".join(args), p.returncode, p.stderr.strip()[:400]))
    return p.stdout


def split_moves(game, text):
    """The plies of a record's "moves" (othello: two characters each)."""
    if game == "othello":
        return [text[i:i + 2] for i in range(0, len(text), 2)]
    return list(text)


def candidates(probs, game, plies, n, seed):
    """n random sequences of `plies` plies (distinct, in order drawn)."""
    with tempfile.TemporaryDirectory() as d:
        rec = os.path.join(d, "g.jsonl")
        run([probs, "match", "--game", game, "--a", "random", "--b", "random",
             "--games", str(n), "--seed", str(seed), "--opening-random",
             str(plies), "--max-turns", str(plies + 1), "--progress", "off",
             "--record", rec])
        seen, out = set(), []
        with open(rec) as f:
            for line in f:
                r = json.loads(line)
                mv = split_moves(game, r["moves"])
                if len(mv) < plies or "pass" in mv[:plies]:
                    continue
                s = "".join(mv[:plies])
                if s not in seen:
                    seen.add(s)
                    out.append(s)
        return out


def solver_value(probs, game, pos, weak):
    args = [probs, "solve", "--game", game, "--position", pos]
    if weak:
        args.append("--weak")
    out = run(args, check=False)
    value, wins_now = None, False
    for line in out.splitlines():
        if line.startswith("value: "):
            value = line[len("value: "):].split()[0]
        if "win in 1 plies" in line:
            wins_now = True
    return value, wins_now


def model_value(probs, game, pos):
    out = run([probs, "analyze", "--model", "data/models/%s.pbck" % game,
               "--position", pos, "--json"], check=False)
    try:
        return float(json.loads(out)["v"])
    except (ValueError, KeyError):
        return None


def make(probs, game, count, seed):
    plies = PLIES[game]
    how = {
        "tictactoe": "every 2-ply position the solver values a draw",
        "connect4": "random 8-ply positions the solver (weak) values a draw",
        "othello": "random 6-ply positions with |V| <= %g by the shipped "
                   "model" % V_MAX,
        "toguz": "random 4-ply positions with |V| <= %g by the shipped "
                 "model" % V_MAX,
    }[game]
    path = os.path.join("data", "openings", game + ".txt")
    if game == "tictactoe":
        cands = [a + b for a in "123456789" for b in "123456789" if a != b]
    else:
        cands = candidates(probs, game, plies, 40 * count, seed)
    found = 0
    # Written as found, so that a stopped run leaves a book of those.
    with open(path, "w") as f:
        f.write("# %s openings: %s (scripts/make-openings.py, seed %d)\n" %
                (game, how, seed))
        f.write("# probs match --openings %s plays each with both colours\n"
                % path)
        for pos in cands:
            if found >= count and game != "tictactoe":
                break
            if game in ("tictactoe", "connect4"):
                value, wins_now = solver_value(probs, game, pos,
                                               weak=game == "connect4")
                keep = value == "draw" and not wins_now
            else:
                v = model_value(probs, game, pos)
                keep = v is not None and abs(v) <= V_MAX
            if keep:
                f.write(pos + "\n")
                f.flush()
                found += 1
            print("%s: %d of %d" % (game, found, count), file=sys.stderr)
    print("wrote %s: %d openings" % (path, found), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--probs", default="build/bin/probs")
    ap.add_argument("--game", action="append", choices=sorted(PLIES))
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    for game in a.game or sorted(PLIES):
        make(a.probs, game, a.count, a.seed)


if __name__ == "__main__":
    main()
