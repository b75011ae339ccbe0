"""A backbone of kind `scripted` runs like any other, with no model and no network (as Inspect ships `mockllm`):
named in backbones.yaml, picked with --backbone, its debates parse whatever the answer kind."""
import asyncio
import shutil
from pathlib import Path

import yaml

from r2mad.backends import make_backend
from r2mad.debate import Debate
from r2mad.methods import PLAIN, make_method
from r2mad.settings.config import Backbone, DebateSettings
from r2mad.types import Task
from tests.helpers import debate_cli

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = DebateSettings(rounds=2, agents=2, seed=0)


def test_a_scripted_backbone_answers_in_the_form_each_kind_asks():
    backend = make_backend(Backbone(name="toy", kind="scripted"))
    mcq = Task("mcq", "Largest planet?", (("A", "Jupiter"), ("B", "Mars")), gold="A")
    math = Task("math", "What is 3 - 2?", gold="1")
    yesno = Task("yesno", "Is Jupiter a planet?", gold="yes")
    finals = [asyncio.run(Debate(backend, make_method(PLAIN, SETTINGS)).run(t)).final.value
              for t in (mcq, math, yesno)]
    assert finals == ["A", "1", "yes"]
    assert backend.calls == []  # a backbone serving for days keeps no record of its calls


def test_the_cli_debates_on_a_scripted_backbone_named_in_the_config(tmp_path, capsys):
    folder = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "backbones.yaml").write_text(yaml.safe_dump({"default": "toy", "backbones": {
        "toy": {"kind": "scripted", "label": "no model"}}}))
    code = debate_cli(folder, "--backbone", "toy", "--question", "Largest planet?", "--option", "A=Jupiter",
                      "--option", "B=Mars", "--rounds", "2", "--agents", "2")
    assert code == 0
    out = capsys.readouterr().out
    assert "Method mad on toy" in out and "Final answer: A  [done]" in out
