"""Embedding work cut into shards (`tether.ingest.tasks.shards`)."""

from __future__ import annotations

from tether.ingest.tasks import SHARDS_PER_WORKER, shards


def test_a_batch_is_cut_so_every_worker_gets_several_shards() -> None:
    texts = [f"{'word ' * (i % 37)}{i}" for i in range(128)]
    cuts = shards(texts, 64, workers=2)
    assert len(cuts) == 2 * SHARDS_PER_WORKER  # not two shards of 64: one worker idle
    assert sorted(i for cut in cuts for i in cut) == list(range(128))
    lengths = [len(texts[i]) for cut in cuts for i in cut]
    assert lengths == sorted(lengths, reverse=True)  # longest first


def test_a_large_list_keeps_the_size_limit() -> None:
    texts = ["a text"] * 1000
    cuts = shards(texts, 64, workers=2)
    assert max(map(len, cuts)) == 64 and sum(map(len, cuts)) == 1000
    assert shards([], 64, workers=2) == [] and shards(["x"], 64) == [[0]]
