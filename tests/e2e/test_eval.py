"""``gazetteer eval localize`` as a user runs it on a small benchmark of their own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SHA = "0123456789abcdef0123456789abcdef01234567"


def gazetteer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.cli", "--log-level", "warning", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_eval_localize_writes_predictions_and_the_baselines(tmp_path: Path) -> None:
    repo = tmp_path / "repos" / f"acme__shop__{SHA[:12]}"
    (repo / "shop").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "shop/cart.py").write_text(
        "class Cart:\n    def total_price(self, items):\n        return sum(items)\n"
    )
    (repo / "shop/payment.py").write_text("def charge_card(amount):\n    return amount\n")
    (repo / "tests/test_cart.py").write_text(
        "from shop.cart import Cart\ndef test_total_price():\n    Cart().total_price([])\n"
    )
    dataset = tmp_path / "dev.jsonl"
    rows = [
        {"instance_id": "acme__shop-1", "repo": "acme/shop", "base_commit": SHA,
         "problem_statement": "Cart.total_price is wrong for an empty cart"},
        {"instance_id": "acme__shop-2", "repo": "acme/shop", "base_commit": "f" * 40,
         "problem_statement": "not materialized"},
    ]  # fmt: skip
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out" / "predictions.jsonl"

    done = gazetteer("eval", "localize", "--dataset", str(dataset), "--repos",
                     str(tmp_path / "repos"), "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "1 instances localized" in done.stdout
    assert "instance_repository_missing" in done.stderr + done.stdout
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert line["instance_id"] == "acme__shop-1"
    assert line["ranked_files"][0] == "shop/cart.py"
    assert "tests/test_cart.py" not in line["ranked_files"]  # a fix lands in source
    for baseline in (
        "predictions.bm25-files.jsonl",
        "predictions.bm25-chunks.jsonl",
        "predictions.pack.jsonl",
    ):
        (row,) = [json.loads(x) for x in (out.parent / baseline).read_text().splitlines()]
        assert row["instance_id"] == "acme__shop-1"
    # the pack's files by tier (tests/bench/pack_recall.py reads them), and its functions
    (pack,) = [
        json.loads(x) for x in (out.parent / "predictions.pack.jsonl").read_text().splitlines()
    ]
    assert pack["excerpt_files"][0] == "shop/cart.py"
    assert set(pack["excerpt_files"]) <= set(pack["grouped_files"])
    assert pack["ranked_files"] == list(dict.fromkeys(pack["grouped_files"] + pack["map_files"]))
    assert "shop/cart.py::Cart.total_price" in pack["target_functions"]

    assert line["ranked_functions"][:2] == ["shop/cart.py::Cart.total_price", "shop/cart.py::Cart"]
    (peer,) = [
        json.loads(x)
        for x in (out.parent / "predictions.peer-bm25-functions.jsonl").read_text().splitlines()
    ]
    assert peer["ranked_functions"][0] == "shop/cart.py::Cart.total_price"

    # the functions scored, against given gold functions and against a patch's
    patch = (
        "--- a/shop/cart.py\n+++ b/shop/cart.py\n@@ -3 +3 @@\n"
        "-        return sum(items)\n+        return sum(items or [])\n"
    )
    given, derived = tmp_path / "given.jsonl", tmp_path / "derived.jsonl"
    given.write_text(json.dumps({**rows[0], "gold_functions": ["shop/cart.py::Cart.total_price"]}))
    derived.write_text(
        json.dumps(
            {**rows[0], "language": "Python", "gold_files": ["shop/cart.py"], "gold_patch": patch}
        )
    )
    for gold in (given, derived):
        scored = gazetteer("eval", "functions", "--dataset", str(gold), "--repos",
                           str(tmp_path / "repos"), str(out))  # fmt: skip
        assert scored.returncode == 0, scored.stderr
        row = json.loads(scored.stdout)[str(out)]["all"]
        assert (row["scored"], row["Acc@1"], row["MRR"]) == (1, 100.0, 100.0)

    dense = gazetteer("eval", "localize", "--dataset", str(dataset), "--repos",
                      str(tmp_path / "repos"), "--out", str(tmp_path / "dense" / "p.jsonl"),
                      "--embedder", "hash:64")  # fmt: skip
    assert dense.returncode == 0, dense.stderr
    (row,) = [json.loads(x) for x in (tmp_path / "dense" / "p.jsonl").read_text().splitlines()]
    assert row["ranked_files"][0] == "shop/cart.py"
    assert (tmp_path / "dense" / "embeddings").is_dir()  # the cache beside the predictions

    missing = gazetteer("eval", "localize", "--dataset", str(tmp_path / "nope.jsonl"),
                        "--repos", str(tmp_path), "--out", str(out))  # fmt: skip
    assert missing.returncode == 2 and "no dataset" in missing.stderr


def test_the_literal_and_history_signals_reach_eval_learn(tmp_path: Path) -> None:
    """An issue quoting an error message: `localize` gives the file raising it the
    ``literal`` signals; `history` adds what the commits up to the base commit say;
    `learn` weighs them, or holds them."""
    work = tmp_path / "work"
    (work / "shop").mkdir(parents=True)

    def git(*args: str, at: Path = work) -> str:
        return subprocess.run(
            ["git", "-C", str(at), *args], capture_output=True, check=True, text=True
        ).stdout.strip()

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (work / "shop/cart.py").write_text(
        "def total_price(items):\n"
        "    if items is None:\n"
        '        raise ValueError(f"cart has no items list: {items!r}")\n'
        "    return sum(items)\n"
    )
    (work / "shop/payment.py").write_text(
        "def charge_card(items, amount):\n    return amount  # items of the cart\n"
    )
    git("add", ".")
    git("commit", "-qm", "Fix total_price crash on an empty cart")
    base = git("rev-parse", "HEAD")
    mirrors = tmp_path / "mirrors"
    git("clone", "-q", "--bare", str(work), str(mirrors / "acme+shop" / "repo"), at=tmp_path)
    repo = tmp_path / "repos" / f"acme__shop__{base[:12]}"
    repo.mkdir(parents=True)
    for name in ("cart.py", "payment.py"):
        (repo / "shop").mkdir(exist_ok=True)
        (repo / "shop" / name).write_text((work / "shop" / name).read_text())
    dataset = tmp_path / "dev.jsonl"
    row = {
        "instance_id": "acme__shop-3",
        "repo": "acme/shop",
        "base_commit": base,
        "language": "Python",
        "gold_files": ["shop/cart.py"],
        "problem_statement": "Charging fails:\nValueError: cart has no items list: None\n",
    }
    dataset.write_text(json.dumps(row) + "\n")
    out = tmp_path / "out" / "p.jsonl"
    done = gazetteer("eval", "localize", "--dataset", str(dataset), "--repos",
                     str(tmp_path / "repos"), "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = [json.loads(x) for x in (out.parent / "p.signals.jsonl").read_text().splitlines()]
    signals = dict(line["candidates"])
    assert {k: signals["shop/cart.py"][k] for k in ("literal", "literal_error")} == {
        "literal": 1.0,
        "literal_error": 1.0,
    }
    assert "literal" not in signals.get("shop/payment.py", {})
    # the function ranking's evidence as file signals (weight 0: `learn` weighs them)
    assert {p: (s.get("function_best"), s.get("function_count")) for p, s in signals.items()} == {
        "shop/cart.py": (1.0, 1.0),
        "shop/payment.py": (0.146583, None),  # "cart" and "items" in a comment: weak
    }

    with_history = tmp_path / "out" / "p.hist.jsonl"
    added = gazetteer("eval", "history", "--dataset", str(dataset), "--mirrors", str(mirrors),
                      "--signals", str(out.parent / "p.signals.jsonl"),
                      "--out", str(with_history))  # fmt: skip
    assert added.returncode == 0, added.stderr
    (line,) = [json.loads(x) for x in with_history.read_text().splitlines()]
    signals = dict(line["candidates"])
    assert (signals["shop/cart.py"]["history"], signals["shop/cart.py"]["fixes"]) == (1.0, 1.0)

    learned = tmp_path / "learned.json"
    run = gazetteer("eval", "learn", "--split", str(dataset), str(with_history),
                    "--hold", "history", "--learn-python", "literal_error",
                    "--out", str(learned))  # fmt: skip
    assert run.returncode == 0, run.stderr
    found = json.loads(learned.read_text())
    assert found["off_python"]["history"] == 0.0
    assert "held: ['history']; Python's learned: ['literal_error']" in found["source"]
    refused = gazetteer("eval", "learn", "--split", str(dataset), str(with_history), "--hold",
                        "nonsense", "--out", str(learned))  # fmt: skip
    assert refused.returncode == 2 and "nonsense" in refused.stderr
