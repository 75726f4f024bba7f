"""Frozen dataclasses hashed once (roofline_lib.core.frozen): the hash dataclass makes, and pickles without it."""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import subprocess
import sys

import roofline_lib as rl
from roofline_lib.core.frozen import hash_once, pickled_state
from roofline_lib.workloads.serving import Chunk


def test_the_kept_hash_is_the_one_dataclass_makes_and_equal_objects_share_it():
    cfg = rl.model_config("llama-3-8b")
    compared = tuple(getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.compare)
    assert hash(cfg) == hash(compared) == hash_once(cfg)
    renamed = dataclasses.replace(cfg, name="another name")  # name is not compared
    assert renamed == cfg and hash(renamed) == hash(cfg)
    assert hash(dataclasses.replace(cfg, n_layers=cfg.n_layers + 1)) != hash(cfg)
    assert hash(Chunk(3, 4, 1)) == hash((3, 4, 1)) and {Chunk(3, 4, 1): "kept"}[Chunk(3, 4, 1)] == "kept"


def test_a_pickle_carries_no_hash_and_is_found_by_value_in_another_process():
    # a string hashes differently in each process: a hash kept in the pickle would lose the object
    # in every dict and cache of the process that loads it
    cfg = rl.model_config("llama-3-8b")
    assert "_hash" in cfg.__dict__ and "_hash" not in pickled_state(cfg)
    code = (
        "import pickle, sys, roofline_lib as rl\n"
        "loaded = pickle.loads(sys.stdin.buffer.read())\n"
        "fresh = rl.model_config('llama-3-8b')\n"
        "print(loaded == fresh, hash(loaded) == hash(fresh), {fresh: 'found'}.get(loaded))"
    )
    seen = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code], input=pickle.dumps(cfg), capture_output=True, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout.decode().split() == ["True", "True", "found"]
        seen.add(seed)
    assert seen == {"1", "2"}
    for obj in (Chunk(2, 5, 0), cfg):  # loaded, and copied, in this process: hashed again here
        for again in (pickle.loads(pickle.dumps(obj)), copy.copy(obj), copy.deepcopy(obj)):
            assert again == obj and hash(again) == hash(obj)
