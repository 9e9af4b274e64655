"""The docstring examples of the package run and print what they say."""

import doctest
from pathlib import Path

import fasthts
from fasthts import _fasthts

ROOT = Path(__file__).resolve().parents[2]


def test_docstring_examples(monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples read tests/data/small.bam
    total = 0
    for mod in [fasthts, _fasthts]:
        r = doctest.testmod(mod, extraglobs=vars(_fasthts) | {"fasthts": fasthts}, optionflags=doctest.ELLIPSIS)
        assert r.failed == 0, mod
        total += r.attempted
    assert total >= 12
