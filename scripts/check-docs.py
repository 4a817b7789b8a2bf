#!/usr/bin/env python3
"""check-docs.py - the figures the documents quote, recomputed from the
committed data they come from; fails when a document and its data disagree.

    python3 scripts/check-docs.py [--root DIR] [-v] [--list]

Every check below names a document, the text it must contain (a template
whose {fields} are filled in from the data), the data file(s) under
docs/results/, and how the fields are computed. Text is compared with runs
of whitespace (line breaks included) collapsed to one space, so a figure in
a wrapped paragraph matches. A check fails when the document does not
contain its text, filled in from the data; the message shows what the data
gives and what the document says at that place.

Exit status: 0 every check passes, 1 some document disagrees with its
data, 2 bad usage or a file missing. Python 3 standard library only.
tests/test_check_docs.sh runs it (ctest), and also on a doctored copy to
see it fail.

To add a check, append to CHECKS (at the end of this file's checks) a
Figure (one text, its fields from a function of the data) or a Rows (one
table row per selected row of the data), e.g.

    Figure("docs/results.md",                        # the document
           "greedy Q {r[acc_q]:.3f} at 60 minutes",  # the text it quotes
           R + "connect4-strong-60min-elo.csv",      # the data file(s)
           lambda rows: dict(r=at_mark(rows, 60))),  # the fields, computed

A .csv file arrives as a list of dicts (numbers converted, ':' dropped from
column names: lookahead:3_w is lookahead3_w), a .jsonl file as a list of
objects, any other file as its text; several files as a tuple. Format
specs are Python's, plus {x:dot3} (0.771 -> .771) and {x:min} (one decimal,
but 0 for 0). A value exactly halfway between two roundings (1904.5 to no
decimals) matches either. The helpers the checks compute with (at_mark,
marks, wdl, calibration, accuracy_output, ...) are in
scripts/check_docs_lib.py.
"""

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
# The helpers the checks compute with (at_mark, wdl, calibration, ...),
# Figure, Rows, R and FMT: scripts/check_docs_lib.py.
from check_docs_lib import *  # noqa: E402,F401,F403
from check_docs_lib import norm, pattern, plain, where, TIE  # noqa: E402


# --- the checks --------------------------------------------------------------

FAST = (R + "connect4-fast-elo.csv", R + "connect4-fast-metrics.jsonl")
FAST_ROW = ("| {iteration} | {minutes:.1f} | {elo:.0f} | [{elo_lo:.0f}, {elo_hi:.0f}] "
            "| {lookahead3_w}/{lookahead3_d}/{lookahead3_l} "
            "| {lookahead2_w}/{lookahead2_d}/{lookahead2_l} |")
STRONG60 = tuple(R + f"connect4-strong-60min-{p}-s{s}-elo.csv"
                 for p in ("fp32", "bf16") for s in (1, 2))
OTH60 = (R + "othello-probs-60min-elo.csv", R + "othello-probs-60min-abnet500-elo.csv",
         R + "othello-alphazero-60min-elo.csv", R + "othello-alphazero-60min-mcts500-elo.csv",
         R + "othello-60min-search-games.txt")
BASE_ACC = R + "connect4-baselines-accuracy.txt"
MODELS_ACC = R + "models-accuracy.txt"
MODELS_ELO = R + "models-elo.txt"
MODELS_MATCHES = R + "models-matches.txt"


def precision_output(text):
    """tests/test_precision.c's figures in its output: the shipped network's
    line and the largest random-network difference."""
    m = re.search(r"shipped connect4, \d+ positions: max \|dV\| ([\d.]+), max \|dQ\| "
                  r"([\d.]+), mean \|dV\| ([\d.]+), mean \|dQ\| ([\d.]+), greedy moves "
                  r"differ in (\d+) \(([\d.]+)\), optimal (\d+) fp32 / (\d+) bf16", text)
    if m is None:
        raise ValueError("no 'shipped connect4' line")
    r = [float(x) for x in re.findall(r"max \|bf16 - fp32\| = ([\d.]+)", text)]
    return dict(dv=float(m[1]), dq=float(m[2]), mv=float(m[3]), mq=float(m[4]),
                differ=int(m[5]), share=float(m[6]), opt32=int(m[7]),
                opt16=int(m[8]), random=max(r))


def wdl_score(m):
    """'W-D-L, score' of a match (score to two decimals)."""
    return f"{m['w']}-{m['d']}-{m['l']}, " + FMT.format_field(m["score"], ".2f")


def models_row(*rows):
    """A models README table, one row per (text, words of the match) pair:
    '{m}' in the text is the match's W-D-L, '{s}' its score, '{t}' its wall
    time."""
    def select(text):
        out = []
        for row, *words in rows:
            m = match(text, *words)
            out.append(row.format(m=f"{m['w']}-{m['d']}-{m['l']}",
                                  s=FMT.format_field(m["score"], ".2f"),
                                  t=m["wall"], ws=wdl_score(m)))
        return [dict(row=r) for r in out]
    return select
C4_MODEL, AZ_MODEL = "data/models/connect4.pbck", "data/models/connect4-alphazero.pbck"


def equal_samples_rows(rows):
    """results.md's table of batch 128 against 512 at equal samples: one
    row per iteration, each cell seed 1 / seed 2, and 512's mean lead."""
    by = {}
    for r in rows:
        by.setdefault(int(r["iteration"]), {})[(int(r["batch"]), int(r["seed"]))] = r
    out = []
    for it in sorted(by):
        d, f = by[it], {"it": it}
        for m in ("acc_q", "acc_v", "acc_beam"):
            for b in (128, 512):
                f[f"{m}_{b}"] = f"{d[(b, 1)][m]:.3f} / {d[(b, 2)][m]:.3f}"
            f[m + "_d"] = (d[(512, 1)][m] + d[(512, 2)][m]
                           - d[(128, 1)][m] - d[(128, 2)][m]) / 2
        out.append(f)
    return out


def ablation(name, csv_file, mark, mark_key="minutes"):
    """A row of results.md's ablation tables: the run's row nearest mark."""
    return Rows("docs/results.md",
                "| " + name + " | {mk} | {t0[iteration]} | {t0[elo]:.0f} | {t0[acc_q]:.3f} "
                "| {t0[acc_v]:.3f} | {t0[acc_beam]:.3f} |",
                R + csv_file,
                lambda rows: [dict(mk=mark if isinstance(mark, int) else
                                   FMT.format_field(at_mark(rows, mark)["minutes"], ".1f"),
                                   t0=at_mark(rows, mark))])


CHECKS = [
    # docs/results.md: minibatches of 512 at equal samples (issue 45)
    Rows("docs/results.md",
         "| {it} | {acc_q_128} | {acc_q_512} | {acc_q_d:+.3f} | {acc_v_128} "
         "| {acc_v_512} | {acc_v_d:+.3f} | {acc_beam_128} | {acc_beam_512} "
         "| {acc_beam_d:+.3f} |",
         R + "connect4-b512-equal-samples.csv", equal_samples_rows),

    # README.md: the headline
    Figure("README.md",
           "after {m:.1f} minutes and reaches {final:.0f} [{lo:.0f}, {hi:.0f}] at the "
           "end of the hour (its evaluator's rating of iteration {final_it})",
           FAST, fast_headline),
    Figure("docs/results.md",
           "The final checkpoint (iteration {final_it}, {final_min:.1f} minutes) is "
           "rated **{final:.0f}** [{lo:.0f}, {hi:.0f}]", FAST, fast_headline),

    # docs/results.md: the headline and the Connect Four hour
    Figure("docs/results.md",
           "**in {m:.1f} minutes** (iteration {it}): there the greedy agent "
           "(argmax Q, no search, no noise) is first rated above lookahead:3's "
           "1603 ({elo:.0f}; {l3} against lookahead:3 over 400 games per "
           "checkpoint). It had already won more games than it lost against "
           "lookahead:3 at iterations {early}, rated {early_elo} then over the "
           "four baselines",
           FAST, fast_headline),
    Figure("docs/results.md",
           "(e.g. {l3_29} at iteration 29), and its fitted Elo stays above 1603 "
           "for {pct:.0f}% of the remaining checkpoints of the hour",
           FAST, fast_headline),
    Figure("docs/results.md",
           "This run made {n} iterations of 1000 games in an hour, at about "
           "{states_per_s_100:,.0f} beam searches per second", FAST[1], fast_phases),
    Rows("docs/results.md", FAST_ROW, FAST,
         lambda d: at_iterations(0, 1, 2, 5, 10, 15, 20, 25, 28, 30, 40, 50, 60,
                                 80, 100, 120, 150, 200, 250, 300, 350, 400,
                                 463)(fast_rows(d))),
    Figure("docs/results.md", "averaged over the {n} iterations", FAST[1], fast_phases),
    Figure("docs/results.md",
           "| self-play (2 actors, 1000 games, ~{positions:,.0f} positions) "
           "| {selfplay_s:.2f} | {selfplay_s_med:.2f} | {selfplay_s_pct:.0f}% |\n"
           "| train V (learner, ~147 minibatches of 128) | {train_v_s:.2f} "
           "| {train_v_s_med:.2f} | {train_v_s_pct:.0f}% |\n"
           "| beam search (2 searchers, ~{distinct:,.0f} distinct positions) "
           "| {search_s:.2f} | {search_s_med:.2f} | {search_s_pct:.0f}% |\n"
           "| train Q (learner) | {train_q_s:.2f} | {train_q_s_med:.2f} "
           "| {train_q_s_pct:.0f}% |\n"
           "| checkpoint | {checkpoint_s:.2f} | {checkpoint_s_med:.2f} | 0% |\n"
           "| **iteration** | **{iteration_s:.2f}** | **{iteration_s_med:.2f}** | |",
           FAST[1], fast_phases),

    # docs/results.md: Othello and Toguz Kumalak, 30 minutes
    Rows("docs/results.md",
         "| {minutes:min} | {iteration} | {elo:.0f} | [{elo_lo:.0f}, {elo_hi:.0f}] |",
         R + "othello-small-30min-elo.csv", at_iterations(0, 2, 10, 18, 30, 38, 44)),
    Figure("docs/results.md",
           "Othello ({n} rated checkpoints, iterations 0-{last}, 100 games",
           R + "othello-small-30min-elo.csv",
           lambda rows: dict(n=len(rows), last=rows[-1]["iteration"])),
    Figure("docs/results.md",
           "Elo rises from {e0:.0f} to {rng} within the first minutes",
           R + "othello-small-30min-elo.csv",
           lambda rows: dict(e0=rows[0]["elo"],
                             rng=elo_range([r for r in rows if r["iteration"] > 0]))),
    Rows("docs/results.md",
         "| {minutes:min} | {iteration} | {elo:.0f} | [{elo_lo:.0f}, {elo_hi:.0f}] |",
         R + "toguz-small-30min-elo.csv", at_iterations(0, 10, 18, 34, 66, 90)),
    Figure("docs/results.md",
           "({rng} from then on, below 1000 at {low}; the last checkpoint wins "
           "{last[random_w]} of 100 against random and {last[greedy_w]} against greedy)",
           R + "toguz-small-30min-elo.csv",
           lambda rows: dict(
               rng=elo_range([r for r in rows if r["iteration"] >= 10]),
               low=" and ".join(f"iteration {r['iteration']} ({r['elo']:.0f})"
                                for r in rows if r["iteration"] >= 10 and r["elo"] < 1000),
               last=rows[-1])),
    Figure("docs/results.md",
           "(alphabeta:2 and 3 concede {pts:g} points in all {n} ratings)",
           R + "toguz-small-30min-elo.csv",
           lambda rows: dict(n=len(rows), pts=sum(
               r[f"alphabeta{d}_w"] + r[f"alphabeta{d}_d"] / 2
               for r in rows for d in (2, 3)))),

    # docs/results.md: Othello, 60 minutes with search at play time
    Rows("docs/results.md",
         "| {mark} | {pg:.0f} | {p[elo]} [{p[elo_lo]}, {p[elo_hi]}] | {pw} "
         "| {ag:.0f} | {a[elo]} [{a[elo_lo]}, {a[elo_hi]}] | {aw} |",
         OTH60, othello60_rows),

    Figure("docs/results.md",
           "500 scores {a_ab4} of 50 against it at every mark and rates {a_elo}, and "
           "it takes {a_rhino} games of 50 from gtp-rhino. Its greedy policy, by itself, "
           "stays below alphabeta:3 ({a_greedy}).",
           OTH60, othello60_summary),
    Figure("docs/results.md",
           "{p_elo}, from {p_ab4} wins of 50 against it, and {p_above} 95% interval wholly "
           "above 1579. Its greedy Q does not rise after the first 10 minutes "
           "({p_greedy}), while AlphaZero's does ({a_greedy_first:.0f} -> "
           "{a_greedy_max[ag]:.0f} at {a_greedy_max[mark]} minutes)",
           OTH60, othello60_summary),

    # docs/results.md: strength measured exactly, 36 minutes
    Rows("docs/results.md",
         "| {mark} | {t0[iteration]} | {t0[elo]:.0f} | {t0[acc_q]:.3f} | {t0[acc_v]:.3f} "
         "| {t0[acc_beam]:.3f} | {t1[iteration]} | {t1[elo]:.0f} | {t1[acc_q]:.3f} "
         "| {t1[acc_v]:.3f} | {t1[acc_beam]:.3f} |",
         (R + "connect4-paper-36min-elo.csv", R + "connect4-strong-36min-elo.csv"),
         marks(0, 6, 12, 18, 24, 30, 36)),
    Figure("docs/results.md",
           "iteration {r[iteration]}, Elo {r[elo]:.0f}, greedy Q {r[acc_q]:.3f}, "
           "V {r[acc_v]:.3f}, beam {r[acc_beam]:.3f}.)",
           R + "connect4-strong-36min-elo.csv", lambda rows: dict(r=at_mark(rows, 9))),
    ablation("strong", "connect4-strong-36min-elo.csv", 6),
    ablation("`selfplay_temperature: 1`", "connect4-abl-temp-12min-elo.csv", 6),
    ablation("`v_search_mix: 0`", "connect4-abl-vmix-12min-elo.csv", 6),
    ablation("strong", "connect4-strong-36min-elo.csv", 12),
    ablation("`selfplay_temperature: 1`", "connect4-abl-temp-12min-elo.csv", 12),
    ablation("`v_search_mix: 0`", "connect4-abl-vmix-12min-elo.csv", 12),
    ablation("strong", "connect4-strong-36min-elo.csv", 9.0),
    ablation("`augment: none` (no mirroring)", "connect4-abl-mirror-9min-elo.csv", 9.0),
    ablation("`replay_iterations: 1` (this iteration's data only)",
             "connect4-abl-replay-9min-elo.csv", 9.0),
    ablation("no warm-up, decay or clipping", "connect4-abl-lr-9min-elo.csv", 9.0),
    ablation("`v_epochs: 2`, `q_epochs: 2` (more epochs)",
             "connect4-abl-epochs2-9min-elo.csv", 9.0),
    ablation("`search.expansions: 30` (larger E for the targets)",
             "connect4-abl-e30-9min-elo.csv", 9.0),
    Rows("docs/results.md", "| {name} | {p:.3f} | {s:.3f} |",
         (R + "connect4-paper-36min-elo.csv", R + "connect4-strong-36min-elo.csv"),
         lambda d: [dict(name=n, p=at_mark(d[0], 36)[k], s=at_mark(d[1], 36)[k])
                    for n, k in (("greedy Q", "acc_q"), ("V one ply", "acc_v"),
                                 ("beam E=100, M=10", "acc_beam"))]),
    Figure("docs/results.md",
           "| agent | paper (iteration {p[iteration]}) | strong (iteration {s[iteration]}) |",
           (R + "connect4-paper-36min-elo.csv", R + "connect4-strong-36min-elo.csv"),
           lambda d: dict(p=at_mark(d[0], 36), s=at_mark(d[1], 36))),
    Rows("docs/results.md",
         "| {mark} | {t0[iteration]} | {t0[elo]:.0f} | {t0[acc_q]:.3f} | {t0[acc_v]:.3f} "
         "| {t0[acc_beam]:.3f} | {t1[iteration]} | {t1[elo]:.0f} | {t1[acc_q]:.3f} "
         "| {t1[acc_v]:.3f} | {t1[acc_beam]:.3f} |",
         (R + "connect4-b128-30min-elo.csv", R + "connect4-b512-30min-elo.csv"),
         marks(5, 10, 15, 20, 25, 30)),
    Rows("docs/results.md",
         "| {mark} | {t0[iteration]} | {t0[elo]:.0f} | {t0[acc_q]:.3f} | {t0[acc_v]:.3f} "
         "| {t0[acc_beam]:.3f} |",
         R + "connect4-large-60min-elo.csv", marks(0, 5, 10, 20, 30, 40, 50, 60)),
    Figure("docs/results.md",
           "greedy Q {early} to 30 minutes, {late} from 35 minutes on, "
           "{end[acc_q]:.3f} at 60 (beam E=100 M=10 {end[acc_beam]:.3f}, Elo "
           "{end[elo]:.0f}; {end[iteration]} iterations)",
           R + "connect4-strong-60min-elo.csv",
           lambda rows: dict(
               early=acc_range([r for r in rows if 4 < r["minutes"] < 31]),
               late=acc_range([r for r in rows if r["minutes"] > 34]),
               end=rows[-1])),

    Figure("docs/results.md",
           "gives no better greedy Q ({large} from 30 minutes on",
           R + "connect4-large-60min-elo.csv",
           lambda rows: dict(large=acc_range([r for r in rows if r["minutes"] > 29]))),
    Figure("docs/results.md",
           "(166 against about {it36} for the paper's settings at 36 minutes)",
           FAST, lambda d: dict(it36=round(next(
               r["iteration"] for r in fast_rows(d) if r["minutes"] >= 36), -1))),

    Figure("docs/results.md",
           "Elo {s_elo} against {p_elo}; at 36 minutes the strong checkpoint wins "
           "{s[lookahead3_w]}, draws {s[lookahead3_d]}, loses {s[lookahead3_l]} of 200 "
           "against lookahead:3",
           (R + "connect4-paper-36min-elo.csv", R + "connect4-strong-36min-elo.csv"),
           lambda d: dict(p_elo=elo_range([r for r in d[0] if r["minutes"] > 5]),
                          s_elo=elo_range([r for r in d[1] if r["minutes"] > 5]),
                          s=at_mark(d[1], 36))),
    Figure("docs/results.md",
           "fewer iterations per hour ({s[iteration]} against {p[iteration]} in 36",
           (R + "connect4-paper-36min-elo.csv", R + "connect4-strong-36min-elo.csv"),
           lambda d: dict(p=at_mark(d[0], 36), s=at_mark(d[1], 36))),
    Figure("docs/results.md",
           "more iterations in the same time ({s[iteration]} against {v[iteration]} at 12 "
           "minutes)",
           (R + "connect4-strong-36min-elo.csv", R + "connect4-abl-vmix-12min-elo.csv"),
           lambda d: dict(s=at_mark(d[0], 12), v=at_mark(d[1], 12))),
    *[Figure("docs/results.md", text,
             (R + "connect4-strong-36min-elo.csv", R + f"connect4-abl-{name}-9min-elo.csv"),
             lambda d: dict(s=at_mark(d[0], 9.0), a=at_mark(d[1], 9.0)))
      for name, text in (
          ("replay", "more iterations ({a[iteration]} against {s[iteration]}: each trains"),
          ("epochs2", "iterations ({a[iteration]} against {s[iteration]}) and buy nothing"),
          ("e30", "the iterations ({a[iteration]} against {s[iteration]}) and is worse"))],
    Figure("docs/results.md",
           "({a[iteration]} and {b[iteration]} in 30 minutes; on average",
           (R + "connect4-b128-30min-elo.csv", R + "connect4-b512-30min-elo.csv"),
           lambda d: dict(a=d[0][-1], b=d[1][-1])),
    Figure("docs/results.md", "**But it is slow here**: {r[iteration]} iterations in the hour",
           R + "connect4-large-60min-elo.csv", lambda rows: dict(r=rows[-1])),

    # docs/results.md: the baselines on the solved set (probs accuracy)
    Figure("docs/results.md",
           "random {a[random][0]:.3f}, lookahead:3 {a[lookahead:3][0]:.3f}, "
           "alphabeta:4 {a[alphabeta:4][0]:.3f}, alphabeta:10 {a[alphabeta:10][0]:.3f}",
           BASE_ACC, lambda t: dict(a=accuracy_output(t))),

    # docs/strength.md: the same baselines
    Rows("docs/strength.md", "| {agent} | {share:.3f} |", BASE_ACC,
         lambda t: [dict(agent=k, share=v[0]) for k, v in accuracy_output(t).items()]),

    Figure("docs/strength.md",
           "alphabeta:8 keeps the best outcome in {a:.0%} of the positions at plies "
           "6-11 and in {b:.0%} at plies 30-35 (`--by-ply 6`)",
           BASE_ACC, lambda t: dict(a=by_ply(t, "6-11"), b=by_ply(t, "30-35"))),

    # docs/comparison.md: PROBS against AlphaZero, Connect Four and Othello
    Rows("docs/comparison.md",
         "| {mark} | {t0[elo]:.0f} | {t0[acc_q]:.3f} | {t0[acc_v]:.3f} | {t0[acc_beam]:.3f} "
         "| {t1[elo]:.0f} | {t1[acc_q]:.3f} | {t1[acc_v]:.3f} | {t1[acc_beam]:.3f} |",
         (R + "connect4-strong-60min-elo.csv", R + "connect4-alphazero-60min-elo.csv"),
         marks(*range(0, 61, 5))),
    Rows("docs/comparison.md",
         "| {mark} | {t0[elo]:.0f} | {t0[acc_q]:.3f} | {t0[acc_v]:.3f} | {t0[acc_beam]:.3f} "
         "| {t1[elo]:.0f} | {t1[acc_q]:.3f} | {t1[acc_v]:.3f} | {t1[acc_beam]:.3f} |",
         (R + "connect4-strong-36min-elo.csv", R + "connect4-alphazero-36min-elo.csv"),
         marks(0, 6, 12, 18, 24, 30, 36)),
    Rows("docs/comparison.md",
         "| {mark} | {t0[iteration]} | {t0[elo]:.0f} | {t1[iteration]} | {t1[elo]:.0f} |",
         (R + "othello-probs-30min-elo.csv", R + "othello-alphazero-30min-elo.csv"),
         marks(0, 5, 10, 15, 20, 25, 30)),

    Figure("docs/comparison.md",
           "the two greedy networks end level ({p[acc_q]:.3f} against {a[acc_q]:.3f} "
           "on solved positions;",
           (R + "connect4-strong-60min-elo.csv", R + "connect4-alphazero-60min-elo.csv"),
           lambda d: dict(p=d[0][-1], a=d[1][-1])),
    Figure("docs/comparison.md",
           "PROBS's value is better ({p[acc_v]:.3f} against {a[acc_v]:.3f}) and its Elo "
           "higher throughout ({p[elo]:.0f} against {a[elo]:.0f} at the end)",
           (R + "connect4-strong-60min-elo.csv", R + "connect4-alphazero-60min-elo.csv"),
           lambda d: dict(p=d[0][-1], a=d[1][-1])),

    Figure("docs/comparison.md",
           "| greedy (1 eval/move) | {p[q]} from 10 s on; 1.000 at {p[q1]} of the "
           "{p[n]} marks (first at {p[first]} s), {p[last]:.3f} at the last | {a[q]}; "
           "never 1.000 |\n| value one ply (4.3) | {p[v]} | {a[v]} |",
           (R + "tictactoe-probs-2min-elo.csv", R + "tictactoe-alphazero-2min-elo.csv"),
           lambda d: dict(p=ttt_summary(d[0]), a=ttt_summary(d[1]))),
    Figure("docs/comparison.md",
           "beam E=10 M=3 (21.7 evals/move): {p[b]}; never 1.000 | MCTS N=50 (14.6 "
           "evals/move): 1.000 at {a[b1]} of the {a[n]} marks from 10 s on",
           (R + "tictactoe-probs-2min-elo.csv", R + "tictactoe-alphazero-2min-elo.csv"),
           lambda d: dict(p=ttt_summary(d[0]), a=ttt_summary(d[1]))),
    Figure("docs/comparison.md", "PROBS made {p} iterations, AlphaZero {a}.",
           (R + "tictactoe-probs-2min-elo.csv", R + "tictactoe-alphazero-2min-elo.csv"),
           lambda d: dict(p=d[0][-1]["iteration"], a=d[1][-1]["iteration"])),
    Figure("docs/comparison.md", "PROBS made {p} iterations (93% of its time in beam "
           "search), AlphaZero {a}.",
           (R + "othello-probs-30min-elo.csv", R + "othello-alphazero-30min-elo.csv"),
           lambda d: dict(p=d[0][-1]["iteration"], a=d[1][-1]["iteration"])),

    Figure("docs/comparison.md",
           "In 60 minutes PROBS made {p[iteration]} iterations of 1000 games "
           "({pg:,} games); AlphaZero made {a[iteration]} iterations of 200 games "
           "({ag:,} games",
           (R + "connect4-strong-60min-elo.csv", R + "connect4-alphazero-60min-elo.csv"),
           lambda d: dict(p=d[0][-1], a=d[1][-1], pg=1000 * d[0][-1]["iteration"],
                          ag=200 * d[1][-1]["iteration"])),
    Figure("docs/comparison.md",
           "(PROBS at 5, 10, ... minutes is its checkpoints {p}; AlphaZero's {a}.",
           (R + "connect4-strong-60min-elo.csv", R + "connect4-alphazero-60min-elo.csv"),
           lambda d: dict(p=", ".join(str(r["iteration"]) for r in d[0][1:]),
                          a=", ".join(str(r["iteration"]) for r in d[1][1:]))),
    Rows("docs/comparison.md", "| {n} | {pn} | {p:.3f} | {an} | {a:.3f} |",
         (R + "connect4-strong-60min-elo.csv", R + "connect4-alphazero-60min-elo.csv"),
         lambda d: [dict(n=n, pn=pn, an=an, p=d[0][-1][k], a=d[1][-1][k])
                    for n, pn, an, k in ((1, "greedy Q", "greedy policy", "acc_q"),
                                         (5.2, "V one ply", "value one ply", "acc_v"))]),

    # docs/games.md: each game's ladder, and the anchors results.md quotes
    Rows("docs/games.md", "| {player} | {elo} | {interval} |",
         R + "othello-elo-calibrate.txt", calibration),
    Rows("docs/games.md", "| {player} | {elo} | {interval} |",
         R + "toguz-elo-calibrate.txt", calibration),
    Figure("docs/games.md", "gtp-rhino wins {w:g} of its {n} games",
           R + "othello-elo-calibrate.txt",
           lambda t: next(dict(w=r["score"], n=r["games"]) for r in calibration(t)
                          if r["player"] == "gtp:gtp-rhino")),
    Figure("docs/games.md",
           "against alphabeta:4 it scores {s:.2f} ({p[b]} wins, {p[d]} draws, {p[a]} losses)",
           R + "othello-elo-calibrate.txt",
           lambda t: dict(p=pairs(t)[("alphabeta:4", "gtp:gtp-rhino")],
                          s=1 - pairs(t)[("alphabeta:4", "gtp:gtp-rhino")]["score"])),
    Figure("docs/games.md",
           "Random play is hopeless in Toguz Kumalak ({r[score]:g} points in {r[games]} games)",
           R + "toguz-elo-calibrate.txt",
           lambda t: dict(r=next(r for r in calibration(t) if r["player"] == "random"))),
    Figure("docs/games.md",
           "alphabeta:1 is greedy with another tie order ({s:.2f} between them)",
           R + "toguz-elo-calibrate.txt",
           lambda t: dict(s=pairs(t)[("greedy", "alphabeta:1")]["score"])),
    Figure("docs/results.md",
           "anchors from `probs elo-calibrate`: greedy {e[greedy]}, alphabeta:1 "
           "{e[alphabeta:1]}, alphabeta:2 {e[alphabeta:2]}, alphabeta:3 {e[alphabeta:3]})",
           R + "othello-elo-calibrate.txt",
           lambda t: dict(e={r["player"]: r["elo"] for r in calibration(t)})),
    Figure("docs/results.md",
           "(90 iterations; anchors: greedy {e[greedy]}, alphabeta:2 {e[alphabeta:2]}, "
           "alphabeta:3 {e[alphabeta:3]};",
           R + "toguz-elo-calibrate.txt",
           lambda t: dict(e={r["player"]: r["elo"] for r in calibration(t)})),

    # docs/baselines.md: plain UCT on each ladder, the joint fit's column
    *[Rows("docs/baselines.md", "| " + game + " | {player} | {elo} {interval} |",
           R + f"uct-{name}-elo-calibrate.txt",
           lambda t: [r for r in calibration(t) if r["player"].startswith("uct:")])
      for game, name in (("Tic-Tac-Toe", "tictactoe"), ("Connect Four", "connect4"),
                         ("Othello", "othello"), ("Toguz Kumalak", "toguz"))],
    Figure("docs/baselines.md",
           "lookahead:1 and lookahead:2 at {e[lookahead:1]} and {e[lookahead:2]}",
           R + "uct-tictactoe-elo-calibrate.txt",
           lambda t: dict(e={r["player"]: r["elo"] for r in calibration(t)})),

    # docs/performance.md: fp32 against bf16, 60 minutes, two seeds
    *[Rows("docs/performance.md",
           "| " + name + " | {iterations} | {elo} | {q} | {v} | {beam} |",
           R + f"connect4-strong-60min-{p}-s{s}-elo.csv",
           lambda rows: [precision_row(rows)])
      for p, s, name in (("fp32", 1, "fp32, seed 1"), ("bf16", 1, "bf16, seed 1"),
                         ("fp32", 2, "fp32, seed 2"), ("bf16", 2, "bf16, seed 2"))],
    Figure("docs/performance.md",
           "bf16 made {ratio1:.2f}x the iterations of fp32 in both pairs ({its})",
           STRONG60, precision_means),
    Figure("docs/performance.md",
           "greedy Q {b60_acc_q:dot3} against {f60_acc_q:dot3} (bf16 ahead in both "
           "seeds, by {dq1:dot3} and {dq2:dot3}), the beam {b60_acc_beam:dot3} against "
           "{f60_acc_beam:dot3}",
           STRONG60, precision_means),
    Figure("docs/performance.md",
           "V one ply {b60_acc_v:dot3} against {f60_acc_v:dot3}, Elo {b60_elo:.0f} "
           "against {f60_elo:.0f}. At 10 minutes fp32 is ahead in Elo "
           "({f10_elo:.0f} against {b10_elo:.0f}) and V one ply ({f10_acc_v:dot3} "
           "against {b10_acc_v:dot3}), level in greedy Q ({f10_acc_q:dot3} against "
           "{b10_acc_q:dot3})",
           STRONG60, precision_means),
    Figure("docs/performance.md",
           "behind in seed 2's Elo ({b2_elo:.0f} against {f2_elo:.0f}) and V one ply "
           "({b2_acc_v:dot3} against {f2_acc_v:dot3})",
           STRONG60, precision_means),
    Figure("docs/performance.md",
           "the same iterations ({b[iteration]} against {a[iteration]}), greedy Q",
           (R + "connect4-b128-30min-elo.csv", R + "connect4-b512-30min-elo.csv"),
           lambda d: dict(a=d[0][-1], b=d[1][-1])),

    # data/models/README.md: the shipped networks on the solved set
    Figure("data/models/README.md",
           "greedy {c[checkpoint][0]:.3f}, V one ply {c[value][0]:.3f}, abnet "
           "(1000 nodes, {c[abnet][1]:.0f} evaluations a move) {c[abnet][0]:.3f}",
           MODELS_ACC, lambda t: dict(c=accuracy_output(t, C4_MODEL))),
    Figure("data/models/README.md",
           "greedy {z[checkpoint][0]:.3f}, mcts (N=100, {z[mcts,N=100][1]:.0f} "
           "evaluations a move) {z[mcts,N=100][0]:.3f}, mcts N=800 "
           "({z[mcts,N=800][1]:.0f}) {z[mcts,N=800][0]:.3f}",
           MODELS_ACC, lambda t: dict(z=accuracy_output(t, AZ_MODEL))),
    Figure("data/models/README.md",
           "| {e[connect4][elo]} [{e[connect4][lo]}, {e[connect4][hi]}] (lookahead:3 is 1603) |",
           MODELS_ELO, lambda t: dict(e=evaluator_log(t))),
    Figure("data/models/README.md",
           "| {e[connect4-alphazero][elo]} [{e[connect4-alphazero][lo]}, "
           "{e[connect4-alphazero][hi]}] |",
           MODELS_ELO, lambda t: dict(e=evaluator_log(t))),
    Figure("data/models/README.md",
           "| {e[othello][elo]} [{e[othello][lo]}, {e[othello][hi]}] (alphabeta:3 is 1427",
           MODELS_ELO, lambda t: dict(e=evaluator_log(t))),
    Figure("data/models/README.md",
           "| {e[othello-alphazero][elo]} [{e[othello-alphazero][lo]}, "
           "{e[othello-alphazero][hi]}] (rated afterwards, 500 games",
           MODELS_ELO, lambda t: dict(e=evaluator_log(t))),
    Figure("data/models/README.md",
           "| {e[toguz][elo]} [{e[toguz][lo]}, {e[toguz][hi]}] (random 1000, greedy 1853) |",
           MODELS_ELO, lambda t: dict(e=evaluator_log(t))),
    Figure("data/models/README.md",
           "beats lookahead:3 in {w} of 200 games even greedily",
           MODELS_ELO, lambda t: dict(w=evaluator_log(t)["connect4"]["wdl"]["lookahead:3"][0])),
    Figure("data/models/README.md",
           "Othello's alphabeta:3 won {l} of 100 games against the PROBS one played greedily",
           MODELS_ELO, lambda t: dict(l=evaluator_log(t)["othello"]["wdl"]["alphabeta:3"][2])),
    Rows("data/models/README.md", "{row}", MODELS_MATCHES, models_row(
        ("| Connect Four | `connect4-alphazero.pbck`, mcts N=100 | {ws} | (Othello only) "
         "| {t} s |", "--a 'gtp:build/bin/probs gtp --game connect4' --b"),
        ("| Toguz Kumalak | `toguz.pbck`, abnet 1000 | {ws} | (Othello only) | {t} s |",
         "--a 'gtp:build/bin/probs gtp --game toguz' --b"),
        ("| `abnet:connect4.pbck` (PROBS, the default before) | `mcts:connect4-alphazero"
         ".pbck` | 200 | {m} | {s} |", "--a abnet:", "--b mcts:"),
        ("| `abnet:connect4.pbck` | alphabeta:4 | 200 | {m} | {s} |", "--a abnet:", "--b alphabeta:4"),
        ("| `mcts:connect4-alphazero.pbck` | alphabeta:4 | 200 | {m} | {s} |", "--a mcts:"),
        ("| `gtp:probs gtp --model connect4.pbck` (abnet) | alphabeta:4 | 40 | {m} | {s} |",
         "--model data/models/connect4.pbck' --b alphabeta:4"),
        ("| `gtp:probs gtp --model othello.pbck` (PROBS abnet, the default before) "
         "| alphabeta:4 | 40 | {m} | {s} |", "--model data/models/othello.pbck' --b alphabeta:4"),
        ("| `gtp:probs gtp --model othello.pbck` | gtp-rhino | 40 | {m} | {s} |",
         "--model data/models/othello.pbck' --b gtp:gtp-rhino"),
        ("| `gtp:probs gtp --model toguz.pbck` (the only Toguz Kumalak network) "
         "| alphabeta:4 | 40 | {m} | {s} |", "--a 'gtp:build/bin/probs gtp --game toguz' --b"),
    )),
    Figure("data/models/README.md",
           "| Othello | `othello-alphazero.pbck`, mcts N=100 | {a} | {r} | {ta} s and {tr} s |",
           MODELS_MATCHES, lambda t: dict(
               a=wdl_score(match(t, "--a 'gtp:build/bin/probs gtp' --b alphabeta:4")),
               r=wdl_score(match(t, "--a 'gtp:build/bin/probs gtp' --b gtp:gtp-rhino")),
               ta=match(t, "--a 'gtp:build/bin/probs gtp' --b alphabeta:4")["wall"],
               tr=match(t, "--a 'gtp:build/bin/probs gtp' --b gtp:gtp-rhino")["wall"])),
    Figure("data/models/README.md",
           "AlphaZero network takes {a} of 40 games from alphabeta:4 where the PROBS "
           "network took {p}",
           MODELS_MATCHES, lambda t: dict(
               a=match(t, "--a 'gtp:build/bin/probs gtp' --b alphabeta:4")["w"],
               p=match(t, "--model data/models/othello.pbck' --b alphabeta:4")["w"])),
    Figure("data/models/README.md",
           "with `--agent mcts,N=800` (the same match: {m[wall]} s) the AlphaZero one "
           "takes {m[w]} of 40 ({m[w]}-{m[d]}-{m[l]};",
           MODELS_MATCHES, lambda t: dict(m=match(t, "--agent mcts,N=800"))),
    Figure("data/models/README.md",
           "ladder: {o[alphabeta:4]} and {o[gtp:gtp-rhino]} in Othello, {t[alphabeta:4]} "
           "in Toguz Kumalak; docs/games.md)",
           (R + "othello-elo-calibrate.txt", R + "toguz-elo-calibrate.txt"),
           lambda d: dict(o={r["player"]: r["elo"] for r in calibration(d[0])},
                          t={r["player"]: r["elo"] for r in calibration(d[1])})),
    Figure("data/models/README.md",
           "finds the best move in {c[abnet][0]:.0%} of the solved positions",
           MODELS_ACC, lambda t: dict(c=accuracy_output(t, C4_MODEL))),
    Figure("data/models/README.md",
           "the AlphaZero one with mcts finds fewer, {z[mcts,N=100][0]:.0%}",
           MODELS_ACC, lambda t: dict(z=accuracy_output(t, AZ_MODEL))),
    Figure("data/models/README.md",
           "moves on the solved set ({c[abnet][0]:.3f} against {z[mcts,N=100][0]:.3f})",
           MODELS_ACC, lambda t: dict(c=accuracy_output(t, C4_MODEL),
                                      z=accuracy_output(t, AZ_MODEL))),
    Figure("docs/nn.md",
           "the same network and test set give V within {p[dv]:.3f} and Q within "
           "{p[dq]:.3f} of fp32 (mean |dV| {p[mv]:.4f}, mean |dQ| {p[mq]:.4f}), the "
           "greedy move differs in {p[differ]} positions ({p[share]:.1%}), and "
           "{p[opt16]} optimal moves against {p[opt32]} in fp32; random networks "
           "{p[random]:.3f} at most",
           R + "precision-emulated.txt", lambda t: dict(p=precision_output(t))),
]


def run(root, verbose):
    failures, passed, missing, docs = 0, 0, 0, {}
    for check in CHECKS:
        files = check.data if isinstance(check.data, tuple) else (check.data,)
        try:
            loaded = tuple(load(root / f) for f in files)
            doc = docs.setdefault(check.doc, norm((root / check.doc).read_text()))
        except OSError as e:
            print(f"check-docs: {e}", file=sys.stderr)
            missing += 1
            continue
        data = loaded if isinstance(check.data, tuple) else loaded[0]
        try:
            wants = check.expected(data)
        except (LookupError, ValueError, TypeError, AttributeError,
                ZeroDivisionError, statistics.StatisticsError) as e:
            # the data no longer has what the check computes from
            failures += 1
            print(f"FAIL {check.doc}: {', '.join(files)} do not give "
                  f"'{check.text[:60]}...': {type(e).__name__}: {e}")
            continue
        for want in wants:
            want = norm(want)
            if re.search(pattern(want), doc):
                passed += 1
                if verbose:
                    print(f"ok   {check.doc}: {plain(want)}")
                continue
            failures += 1
            print(f"FAIL {check.doc} disagrees with {', '.join(files)}")
            print(f"     the data gives:     {plain(want)}")
            seen = where(doc, TIE.sub(lambda m: m.group(1), want))
            print(f"     the document says:  {seen}" if seen else
                  "     (no text like it in the document)")
    print(f"check-docs: {passed} figures agree with their data, {failures} do not"
          + (f", {missing} checks could not read their files" if missing else ""))
    return 2 if missing else 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=Path(__file__).resolve().parent.parent,
                    type=Path, help="the source tree (default: this script's)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every figure checked")
    ap.add_argument("--list", action="store_true",
                    help="list the checks: document and data files")
    a = ap.parse_args()
    if a.list:
        for c in CHECKS:
            files = c.data if isinstance(c.data, tuple) else (c.data,)
            print(f"{c.doc}: {type(c).__name__} from {', '.join(files)}")
        return 0
    return run(a.root, a.verbose)


if __name__ == "__main__":
    sys.exit(main())
