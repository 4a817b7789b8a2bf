#!/usr/bin/env python3
"""elo_anchored.py - rate players of `probs elo-calibrate` logs against fixed anchors.

    scripts/elo_anchored.py ANCHORS PLAYERS LOG [LOG...]
    scripts/elo_anchored.py random=1000,lookahead:1=1183 uct:100,uct:1000 c4.txt

Reads the pair lines of the logs ("A  B  A-wins  draws  B-wins ...", as
elo-calibrate prints them; other lines are skipped) and, for each of
PLAYERS, fits one rating R against the opponents that have an anchor,
as the evaluator rates a checkpoint (pb_elo_fit_one, docs/evaluator.md):
the R at which the expected score sum_j n_j / (1 + 10^((r_j - R)/400))
equals the actual score (draws count half), with the 95% profile-likelihood
interval {R : L(R) >= L(R^) - 1.92}. Games between unanchored players are
ignored. A player with all wins or all losses against the anchors has no
finite rating and is reported as such.
"""
import math
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    anchors = {}
    for item in sys.argv[1].split(","):
        spec, _, r = item.rpartition("=")
        anchors[spec] = float(r)
    results = {}
    for path in sys.argv[3:]:
        for line in open(path):
            f = line.split()
            if len(f) >= 5 and all(x.isdigit() for x in f[2:5]):
                a, b, w, d, l = f[0], f[1], int(f[2]), int(f[3]), int(f[4])
                results.setdefault(a, []).append((b, w, d, l))
                results.setdefault(b, []).append((a, l, d, w))
    for p in sys.argv[2].split(","):
        games = [(anchors[o], w + d / 2, w + d + l)
                 for o, w, d, l in results.get(p, []) if o in anchors]
        s = sum(g[1] for g in games)
        n = sum(g[2] for g in games)
        if n == 0 or s <= 0 or s >= n:
            print(f"{p}: no finite rating ({s:.1f} of {n} against the anchors)")
            continue

        def expected(r):
            return sum(m / (1 + 10 ** ((a - r) / 400)) for a, _, m in games)

        def loglik(r):
            t = 0.0
            for a, sc, m in games:
                q = 1 / (1 + 10 ** ((a - r) / 400))
                t += sc * math.log(q) + (m - sc) * math.log(1 - q)
            return t

        lo, hi = -2000.0, 6000.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if expected(mid) < s else (lo, mid)
        top = loglik(lo)
        a = b = lo
        while loglik(a) > top - 1.92:
            a -= 0.5
        while loglik(b) > top - 1.92:
            b += 0.5
        print(f"{p}: {lo:.0f} [{a:.0f}, {b:.0f}] from {n} games against "
              f"the anchors, score {s:.1f}")


if __name__ == "__main__":
    main()
