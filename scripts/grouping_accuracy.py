#!/usr/bin/env python3
"""Grouping accuracy of dlqf's message templates on labelled logs (Loghub-2.0 2k sets).

usage: grouping_accuracy.py FOLDER [--dlqf PATH] [--drain3] [--worst N] [--merges] [--learn-from FOLDER]

FOLDER holds labelled CSVs anywhere below it, with the columns Content (the message) and
EventTemplate (its true template), such as Loghub-2.0's `<System>_2k.log_structured_corrected.csv`
(corrected labels are preferred where a system has both). A line counts as grouped correctly when
its predicted group holds exactly the lines of its true template (the grouping accuracy of the
log-parsing literature). dlqf templates every line alone (`dlqf template`): no line's template
depends on the others. With --drain3 (needs `pip install drain3`), Drain3's default
TemplateMiner runs on the same lines, in file order, beside it. --worst N prints, per system,
the N true templates whose lines dlqf groups worst, to see why; --merges, how many predicted
groups hold lines of more than one true template (over-merging, which accuracy alone hides
among splits). --learn-from FOLDER learns
templates from other labelled lines first (`dlqf templates learn`) and applies them (Drain3
sees those lines first, in file order).
"""
import argparse
import collections
import contextlib
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile


def find_sets(folder):
    """(system, path) of each labelled CSV below FOLDER (one with Content and EventTemplate
    columns), named by the part of its file name before `_2k` (or its stem); where a system has
    several, corrected labels are preferred."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in sorted(names):
            if not name.endswith(".csv"):
                continue
            path = os.path.join(root, name)
            with open(path, newline="", encoding="utf-8", errors="replace") as f:
                header = next(csv.reader(f), [])
            if "Content" not in header or "EventTemplate" not in header:
                continue
            system = name.split("_2k")[0] if "_2k" in name else name[: -len(".csv")]
            rank = 0 if "corrected" in name else 1
            if system not in found or rank < found[system][0]:
                found[system] = (rank, path)
    return sorted((system, path) for system, (_, path) in found.items())


def default_dlqf():
    """The dlqf that `make` builds, else one on PATH."""
    targets = [os.environ.get("CARGO_TARGET_DIR"), os.path.expanduser("~/.cache/dlqf-target"),
               os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target")]
    for target in filter(None, targets):
        for profile in ("release", "debug"):
            path = os.path.join(target, profile, "dlqf")
            if os.access(path, os.X_OK):
                return path
    return shutil.which("dlqf") or "dlqf"


def read_set(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [r["Content"] for r in rows], [r["EventTemplate"] for r in rows]


def accuracy(predicted, truth):
    """Share of lines whose predicted group is exactly their true template's lines."""
    true_sizes = collections.Counter(truth)
    groups = collections.defaultdict(list)
    for i, p in enumerate(predicted):
        groups[p].append(i)
    correct = 0
    for members in groups.values():
        templates = {truth[i] for i in members}
        if len(templates) == 1 and true_sizes[truth[members[0]]] == len(members):
            correct += len(members)
    return correct / len(truth)


def merges(predicted, truth):
    """Over-merging: the predicted groups that hold lines of more than one true template, and
    how many lines those groups hold."""
    groups = collections.defaultdict(list)
    for i, p in enumerate(predicted):
        groups[p].append(i)
    merged = [members for members in groups.values() if len({truth[i] for i in members}) > 1]
    return len(merged), sum(len(m) for m in merged)


def one_per_line(lines):
    # A message holding a newline would change line counts: each line is its first line anyway.
    return "".join(line.replace("\n", " ").replace("\r", " ") + "\n" for line in lines)


def learn(dlqf, lines, out):
    """`dlqf templates learn --lines` over `lines`, into the file `out`."""
    subprocess.run([dlqf, "templates", "learn", "--lines", "-", "-o", out], input=one_per_line(lines), capture_output=True, text=True, check=True)


def dlqf_templates(dlqf, lines, templates=None):
    extra = ["--templates", templates] if templates else []
    out = subprocess.run([dlqf, "template", *extra], input=one_per_line(lines), capture_output=True, text=True, check=True).stdout
    templates = out.split("\n")[: len(lines)]
    assert len(templates) == len(lines), (len(templates), len(lines))
    return templates


def drain3_clusters(lines, learn_lines=()):
    """Drain3's clusters of `lines`, after it has seen `learn_lines` first (its learning)."""
    from drain3 import TemplateMiner  # noqa: PLC0415 (optional)

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        miner = TemplateMiner()  # its defaults; it says so when no drain3.ini is found
    for line in learn_lines:
        miner.add_log_message(line)
    return [miner.add_log_message(line)["cluster_id"] for line in lines]


def worst(predicted, truth, lines, n):
    """The true templates dlqf splits or merges, with the most lines first."""
    by_true = collections.defaultdict(list)
    for i, t in enumerate(truth):
        by_true[t].append(i)
    by_pred = collections.defaultdict(set)
    for i, p in enumerate(predicted):
        by_pred[p].add(truth[i])
    bad = []
    for t, members in by_true.items():
        preds = {predicted[i] for i in members}
        merged = any(len(by_pred[p]) > 1 for p in preds)
        if len(preds) > 1 or merged:
            bad.append((len(members), t, preds, merged, lines[members[0]]))
    bad.sort(key=lambda b: -b[0])
    for count, t, preds, merged, example in bad[:n]:
        print(f"  {count:5d} lines  true: {t}")
        print(f"               e.g.: {example}")
        for p in sorted(preds)[:4]:
            print(f"               dlqf: {p}" + ("   (merged with others)" if len(by_pred[p]) > 1 else ""))
        if len(preds) > 4:
            print(f"               … {len(preds)} groups")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--dlqf", default=None, help="the dlqf binary (default: the one make builds, else on PATH)")
    ap.add_argument("--drain3", action="store_true")
    ap.add_argument("--worst", type=int, default=0)
    ap.add_argument("--merges", action="store_true", help="after each row, how many groups merge true templates")
    ap.add_argument("--learn-from", metavar="FOLDER", help="learn templates (dlqf templates learn) from the Content of "
                    "FOLDER's CSVs first, and apply them; Drain3 sees those lines first too")
    args = ap.parse_args()
    args.dlqf = args.dlqf or default_dlqf()
    sets = find_sets(args.folder)
    if not sets:
        sys.exit(f"{args.folder}: no CSV files with Content and EventTemplate columns")
    print("| system | lines | true templates | dlqf groups | dlqf accuracy |" + (" Drain3 default |" if args.drain3 else ""))
    print("|---|---:|---:|---:|---:|" + ("---:|" if args.drain3 else ""))
    scores, drain_scores = [], []
    learn_lines, templates = [], None
    if args.learn_from:
        for _, path in find_sets(args.learn_from):
            learn_lines.extend(read_set(path)[0])
        scratch = tempfile.mkdtemp()
        templates = os.path.join(scratch, "templates.toml")
        learn(args.dlqf, learn_lines, templates)
    for system, path in sets:
        lines, truth = read_set(path)
        predicted = dlqf_templates(args.dlqf, lines, templates)
        score = accuracy(predicted, truth)
        scores.append(score)
        row = f"| {system} | {len(lines)} | {len(set(truth))} | {len(set(predicted))} | {score:.3f} |"
        if args.drain3:
            d = accuracy(drain3_clusters(lines, learn_lines), truth)
            drain_scores.append(d)
            row += f" {d:.3f} |"
        print(row)
        if args.merges:
            groups, held = merges(predicted, truth)
            print(f"  merges: {groups} groups hold lines of more than one true template ({held} lines)")
        if args.worst:
            worst(predicted, truth, lines, args.worst)
    row = f"| **mean** | | | | **{sum(scores) / len(scores):.3f}** |"
    if args.drain3:
        row += f" {sum(drain_scores) / len(drain_scores):.3f} |"
    print(row)


if __name__ == "__main__":
    main()
