"""check_docs_lib.py - what scripts/check-docs.py computes with: loading the
committed data of docs/results/, the helpers its checks use, the Figure and
Rows checks, formatting (with the custom specs) and matching against a
document. Python 3 standard library only."""

import csv
import decimal
import json
import re
import statistics
import string

R = "docs/results/"


# --- data --------------------------------------------------------------------

def _num(s):
    """A CSV cell as int or float where it is a number, else the string."""
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def load(path):
    """A .csv file as a list of dicts (column names with ':' removed, so
    'lookahead:3_w' is 'lookahead3_w'; numbers converted), a .jsonl file as a
    list of objects, anything else as its text."""
    text = path.read_text()
    if path.suffix == ".csv":
        rows = csv.DictReader(text.splitlines())
        return [{k.replace(":", ""): _num(v) for k, v in r.items()} for r in rows]
    if path.suffix == ".jsonl":
        return [json.loads(l) for l in text.splitlines() if l.strip()]
    return text


# --- helpers the checks compute with -----------------------------------------

def at_iterations(*its):
    """Select the CSV rows of these iterations (each must exist)."""
    return lambda rows: [row_of(rows, it) for it in its]


def row_of(rows, iteration):
    for r in rows:
        if r["iteration"] == iteration:
            return r
    raise LookupError(f"no row for iteration {iteration}")


def at_mark(rows, minutes, key="minutes"):
    """The row whose wall time is nearest to `minutes`."""
    return min(rows, key=lambda r: abs(float(r[key]) - minutes))


def wdl(row, opp, sep="/"):
    """'W/D/L' of a CSV row against an opponent ('lookahead3')."""
    return sep.join(str(row[f"{opp}_{k}"]) for k in "wdl")


def with_minutes(metrics):
    """connect4-fast: wall minutes at each iteration's end, the sum of the
    iteration times of metrics.jsonl (the learner's clock)."""
    out, s = {0: 0.0}, 0.0
    for m in metrics:
        if m.get("event") == "iteration":
            s += m["iteration_s"]
            out[m["iteration"]] = s / 60
    return out


def fast_rows(data):
    """connect4-fast-elo.csv rows with a 'minutes' field from the metrics."""
    elo, metrics = data
    mins = with_minutes(metrics)
    return [dict(r, minutes=mins[r["iteration"]]) for r in elo]


def _and(items):
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join(filter(None, [", ".join(items[:-1]), items[-1]]))


def first_above(rows, elo):
    return next(r for r in rows if r["elo"] > elo)


def fast_headline(data):
    rows = fast_rows(data)
    first = first_above(rows, 1603)
    later = [r for r in rows if r["iteration"] > first["iteration"]]
    last = rows[-1]
    early = [r for r in rows if r["iteration"] < first["iteration"]
             and r["lookahead3_w"] > r["lookahead3_l"]]
    return dict(
        m=first["minutes"], it=first["iteration"], elo=first["elo"],
        l3=wdl(first, "lookahead3"),
        l3_29=wdl(row_of(rows, 29), "lookahead3"),
        pct=100 * sum(r["elo"] > 1603 for r in later) / len(later),
        final_it=last["iteration"], final_min=last["minutes"],
        final=last["elo"], lo=last["elo_lo"], hi=last["elo_hi"],
        # iterations before the first above 1603 where greedy already won
        # more than it lost against lookahead:3, and their ratings
        early=_and([f"{r['iteration']} ({wdl(r, 'lookahead3')})" for r in early]),
        early_elo=elo_range(early),
    )


def fast_phases(data):
    """Mean and median of each phase of connect4-fast-metrics.jsonl."""
    its = [m for m in data if m.get("event") == "iteration"]
    out = {"n": len(its)}
    for k in ("selfplay_s", "train_v_s", "search_s", "train_q_s",
              "checkpoint_s", "iteration_s"):
        v = [m[k] for m in its]
        out[k] = statistics.mean(v)
        out[k + "_med"] = statistics.median(v)
    total = sum(m["iteration_s"] for m in its)
    for k in ("selfplay_s", "train_v_s", "search_s", "train_q_s"):
        out[k + "_pct"] = 100 * sum(m[k] for m in its) / total
    out["states_per_s"] = (sum(m["distinct_positions"] for m in its)
                           / sum(m["search_s"] for m in its))
    out["states_per_s_100"] = round(out["states_per_s"], -2)
    out["positions"] = round(statistics.mean(m["positions"] for m in its), -2)
    out["distinct"] = round(statistics.mean(m["distinct_positions"] for m in its), -2)
    return out


def marks(*minutes, key="minutes"):
    """For joined tables: the row nearest each mark, of each data file."""
    def select(data):
        tables = data if isinstance(data, tuple) else (data,)
        return [dict(mark=m, **{f"t{i}": at_mark(t, m, key)
                                for i, t in enumerate(tables)})
                for m in minutes]
    return select


def elo_range(rows):
    return f"{min(r['elo'] for r in rows):.0f}-{max(r['elo'] for r in rows):.0f}"


def acc_range(rows, key="acc_q"):
    return f"{min(r[key] for r in rows):.3f}-{max(r[key] for r in rows):.3f}"


def ttt_summary(rows):
    """Tic-Tac-Toe's 2-minute runs: ranges and counts over the marks after
    version 0 (comparison.md's table)."""
    marks = rows[1:]
    perfect = [r for r in marks if r["acc_q"] == 1.0]
    return dict(n=len(marks), q=acc_range(marks), v=acc_range(marks, "acc_v"),
                b=acc_range(marks, "acc_beam"), q1=len(perfect),
                b1=sum(r["acc_beam"] == 1.0 for r in marks),
                first=round(perfect[0]["minutes"] * 60) if perfect else None,
                last=marks[-1]["acc_q"])


def precision_row(rows):
    """A row of docs/performance.md's fp32/bf16 table: iterations, Elo at
    10-60 minutes, greedy Q, V one ply and the beam at 10/30/60."""
    at = {m: at_mark(rows, m) for m in (10, 20, 30, 40, 50, 60)}
    f = FMT.format_field
    acc = lambda k: " / ".join(f(at[m][k], "dot3") for m in (10, 30, 60))
    return dict(
        iterations=rows[-1]["iteration"],
        elo=" / ".join(f(at[m]["elo"], ".0f") for m in at),
        q=acc("acc_q"), v=acc("acc_v"), beam=acc("acc_beam"))


def precision_means(data):
    """Means of the two seeds at 10 and 60 minutes, fp32 and bf16."""
    f1, f2, b1, b2 = data
    out = {}
    for name, pair in (("f", (f1, f2)), ("b", (b1, b2))):
        for m in (10, 60):
            for k in ("elo", "acc_q", "acc_v", "acc_beam"):
                out[f"{name}{m}_{k}"] = statistics.mean(
                    at_mark(t, m)[k] for t in pair)
    for s, (f, b) in (("1", (f1, b1)), ("2", (f2, b2))):
        for k in ("elo", "acc_q", "acc_v", "acc_beam"):
            out[f"f{s}_{k}"] = at_mark(f, 60)[k]
            out[f"b{s}_{k}"] = at_mark(b, 60)[k]
        out[f"dq{s}"] = out[f"b{s}_acc_q"] - out[f"f{s}_acc_q"]
    out["ratio1"] = b1[-1]["iteration"] / f1[-1]["iteration"]
    out["ratio2"] = b2[-1]["iteration"] / f2[-1]["iteration"]
    out["its"] = (f"{b1[-1]['iteration']} against {f1[-1]['iteration']}, "
                  f"{b2[-1]['iteration']} against {f2[-1]['iteration']}")
    return out


def search_games(text):
    """othello-60min-search-games.txt: {(version, opponent): 'W-D-L'}."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 5 and f[0].startswith("v"):
            out[(int(f[0][1:]), f[1])] = "-".join(f[2:])
    return out


def othello60_rows(data):
    """docs/results.md's 60-minute Othello table, one dict per mark."""
    pg, pab, ag, amc, games = data
    g = search_games(games)
    out = []
    for m in (10, 20, 30, 40, 50, 60):
        p, a = at_mark(pab, m), at_mark(amc, m)
        out.append(dict(mark=m, pg=at_mark(pg, m)["elo"], p=p, a=a,
                        ag=at_mark(ag, m)["elo"],
                        pw=g[(p["version"], "alphabeta:4")],
                        aw=g[(a["version"], "alphabeta:4")]))
    return out


def othello60_summary(data):
    """The ranges docs/results.md's 60-minute Othello bullets quote."""
    g = search_games(data[4])
    rows = othello60_rows(data)
    rng = lambda vals: f"{min(vals)} to {max(vals)}"
    span = lambda vals: f"{min(vals):.0f}-{max(vals):.0f}"
    wins = lambda key: [int(r[key].split("-")[0]) for r in rows]
    return dict(
        a_ab4=rng(wins("aw")), a_elo=span([r["a"]["elo"] for r in rows]),
        a_rhino=rng([int(g[(r["a"]["version"], "gtp:gtp-rhino")].split("-")[0])
                     for r in rows]),
        a_greedy=span([r["ag"] for r in rows]),
        p_elo=span([r["p"]["elo"] for r in rows]), p_ab4=rng(wins("pw")),
        p_greedy=span([r["pg"] for r in rows]),
        # "no 95% interval wholly above" alphabeta:4's 1579
        p_above="no" if all(r["p"]["elo_lo"] <= 1579 for r in rows) else "a",
        a_greedy_first=rows[0]["ag"],
        a_greedy_max=max(rows, key=lambda r: r["ag"]))


def pairs(text):
    """`probs elo-calibrate` output: {(A, B): dict(a, d, b, score)} per pair."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([01]\.\d+)\s", line)
        if m:
            out[(m.group(1), m.group(2))] = dict(
                a=int(m.group(3)), d=int(m.group(4)), b=int(m.group(5)),
                score=float(m.group(6)))
    return out


def calibration(text):
    """`probs elo-calibrate` output: the fit's table as a list of dicts
    (player, games, score, elo, interval)."""
    out = []
    for line in text.splitlines():
        f = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(f) >= 5 and re.fullmatch(r"\d+", f[1] or "x") and f[0] != "player":
            out.append(dict(player=f[0].rstrip(" *"), games=int(f[1]), score=float(f[2]),
                            elo=int(f[3]), interval=f[4]))
    return out


def matches(text):
    """A log of `probs match` runs (each '$ command' line, then its output):
    one dict per match, with the command and W, D, L, score and wall s."""
    out = []
    for line in text.splitlines():
        if line.startswith("$ "):
            out.append(dict(cmd=line[2:]))
        m = re.match(r"result: W=(\d+) D=(\d+) L=(\d+) score=([\d.]+)", line)
        if m and out:
            out[-1].update(w=int(m.group(1)), d=int(m.group(2)), l=int(m.group(3)),
                           score=float(m.group(4)))
        m = re.match(r"# wall time (\d+) s", line)
        if m and out:
            out[-1]["wall"] = int(m.group(1))
    return out


def match(text, *words):
    """The one match of a log whose command has all these words."""
    found = [m for m in matches(text) if all(w in m["cmd"] for w in words)]
    if len(found) != 1:
        raise LookupError(f"{len(found)} matches have {words}")
    return found[0]


def evaluator_log(text):
    """docs/results/models-elo.txt: {model name: rating} from the evaluator's
    'version N: Elo E [LO, HI] ... (W/D/L: opp w/d/l, ...)' line after each
    model's 'cp data/models/NAME.pbck' line."""
    out, model = {}, None
    for line in text.splitlines():
        m = re.search(r"cp data/models/(\S+)\.pbck", line)
        if m:
            model = m.group(1)
        m = re.search(r"version (\d+): Elo (\d+) \[(\d+), (\d+)\].*W/D/L: (.*)\)", line)
        if m and model:
            wdl = {o: tuple(map(int, r.split("/")))
                   for o, r in (x.split() for x in m.group(5).split(", "))}
            out[model] = dict(version=int(m.group(1)), elo=m.group(2), lo=m.group(3),
                              hi=m.group(4), wdl=wdl)
    return out


def by_ply(text, plies):
    """The share at 'plies A-B' of `probs accuracy --by-ply` output."""
    return float(re.search(rf"plies +{plies} +\d+/\d+ +([01]\.\d+)", text).group(1))


def accuracy_output(text, model=None):
    """`probs accuracy` output: {agent: (share, evaluations per move)}, the
    agents as named in its table ('alphabeta:4'); with model, only the
    agents of that model's runs, named by their kind ('checkpoint')."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"(\S+)\s+\d+/\d+\s+([01]\.\d+)\s+[\d.]+s\s+([\d.]+)\s*$", line)
        if not m:
            continue
        name, share, evals = m.group(1), float(m.group(2)), float(m.group(3))
        if model:
            kind, _, rest = name.partition(":")
            path, _, opts = rest.partition(",")
            if path != model:
                continue
            name = kind + ("," + opts if opts else "")
        out[name] = (share, evals)
    return out


# --- formatting --------------------------------------------------------------

# A value that lies exactly halfway between two roundings (1904.5 to no
# decimals, the mean .7485 to three) may be quoted either way: the data is
# itself rounded, and the documents were written with both conventions.
# Such a field is filled in as "\0low\1high\2", and matched as either.
TIE = re.compile("\0([^\1]*)\1([^\2]*)\2")


def _round(value, places):
    """Both roundings of value to places decimals: (half down, half up)."""
    d = decimal.Decimal(repr(round(value, 9)))
    q = decimal.Decimal(1).scaleb(-places)
    return (d.quantize(q, rounding=decimal.ROUND_HALF_DOWN),
            d.quantize(q, rounding=decimal.ROUND_HALF_UP))


class _Formatter(string.Formatter):
    def format_field(self, value, spec):
        if spec == "dot3":  # every alternative of a tie without its "0"
            return re.sub(r"(^|[\0\1])0\.", r"\1.",
                          self.format_field(value, ".3f"))
        if spec == "min":
            return "0" if value == 0 else self.format_field(value, ".1f")
        m = re.fullmatch(r"(,?)\.(\d+)f", spec)
        if isinstance(value, float) and m:
            lo, hi = (super(_Formatter, self).format_field(v, spec)
                      for v in _round(value, int(m.group(2))))
            return lo if lo == hi else f"\0{lo}\1{hi}\2"
        return super().format_field(value, spec)


FMT = _Formatter()


def _fill(template, fields):
    return FMT.vformat(template, (), fields)


def pattern(text):
    """The regular expression of a filled-in text (whitespace normalised)."""
    parts, at = [], 0
    for m in TIE.finditer(text):
        parts.append(re.escape(text[at:m.start()]))
        parts.append(f"(?:{re.escape(m.group(1))}|{re.escape(m.group(2))})")
        at = m.end()
    parts.append(re.escape(text[at:]))
    return "".join(parts)


def plain(text):
    """A filled-in text as shown to a reader: ties as low|high."""
    return TIE.sub(lambda m: f"{m.group(1)}|{m.group(2)}", text)


# --- the two kinds of check --------------------------------------------------

class Figure:
    """doc must contain text, formatted with the dict compute(data)."""

    def __init__(self, doc, text, data, compute):
        self.doc, self.text, self.data, self.compute = doc, text, data, compute

    def expected(self, data):
        return [_fill(self.text, self.compute(data))]


class Rows:
    """doc must contain text once for each dict that select(data) gives
    (a CSV row, or a joined row of several files)."""

    def __init__(self, doc, text, data, select):
        self.doc, self.text, self.data, self.compute = doc, text, data, select

    def expected(self, data):
        return [_fill(self.text, r) for r in self.compute(data)]


# --- matching ----------------------------------------------------------------

def norm(text):
    return re.sub(r"\s+", " ", text).strip()


def where(doc, want):
    """What the document says where it should say want: the text after the
    longest prefix of want that the document contains."""
    lo, hi = 0, len(want)
    while lo < hi:  # longest prefix present (presence is monotone in length)
        mid = (lo + hi + 1) // 2
        if want[:mid] in doc:
            lo = mid
        else:
            hi = mid - 1
    if lo < 8:
        return None
    at = doc.index(want[:lo])
    return doc[at:at + len(want) + 20]
