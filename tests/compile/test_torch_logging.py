"""``ember._logging.set_logs``: PyTorch's keyword names over ember.compile's log artifacts."""

from __future__ import annotations

import inspect
import logging

import pytest
import torch

import ember
from ember._logging import ARTIFACTS, COMPONENTS, WITHOUT_COUNTERPART
from ember.compiler import logs


@pytest.fixture(autouse=True)
def _logs_off():
    levels = {name: logging.getLogger(name).level for name in ("ember.compiler", "ember._dynamo")}
    yield
    ember._logging.set_logs()
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def _item_break(x):
    return x * x.sum().item()


def test_graph_breaks_and_recompiles_print_and_a_bare_call_turns_them_off(capsys):
    ember._logging.set_logs(graph_breaks=True, recompiles=True)
    assert logs.enabled("graph_breaks") and logs.enabled("recompiles")
    compiled = ember.compile(_item_break)
    compiled(ember.ones(2))
    compiled(ember.ones(3))  # another size: a recompile
    err = capsys.readouterr().err
    assert "[graph_breaks]" in err and "Unsupported Tensor.item() call" in err
    assert "[recompiles]" in err
    ember._logging.set_logs()  # as PyTorch's: what a call does not name is off
    assert not any(logs.enabled(a) for a in logs.ARTIFACTS)
    ember.compile(_item_break)(ember.ones(4))
    assert "[graph_breaks]" not in capsys.readouterr().err


def test_every_torch_keyword_is_accepted():
    names = set(inspect.signature(torch._logging.set_logs).parameters) - {"modules"}
    ours = set(ARTIFACTS) | WITHOUT_COUNTERPART | set(COMPONENTS)
    assert names <= ours, sorted(names - ours)


def test_an_unknown_keyword_raises_as_torch():
    with pytest.raises(TypeError) as want:
        torch._logging.set_logs(nope=True)
    with pytest.raises(TypeError) as got:
        ember._logging.set_logs(nope=True)
    assert str(got.value) == str(want.value)


def test_artifacts_without_counterpart_warn_and_levels_reach_the_loggers():
    with pytest.warns(UserWarning, match="no 'cudagraphs' artifact"):
        ember._logging.set_logs(cudagraphs=True, dynamo=logging.DEBUG)
    assert logging.getLogger("ember._dynamo").level == logging.DEBUG
    ember._logging.set_logs(dynamo=logging.WARNING, guards=True)
    assert logging.getLogger("ember._dynamo").level == logging.WARNING
    assert logs.enabled("guards") and not logs.enabled("graphs")
