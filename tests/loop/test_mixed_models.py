"""Mixed-model debates on the loop: each agent's calls reach its own backend, auxiliary calls the
configured one, transcripts record each agent's model and usage per model, and R²-MAD still retrieves
from each agent's own memory. (tests/steer/test_steer_cli.py does the same through two loopback servers.)"""
import asyncio

import pytest

from r2mad.debate import Debate
from r2mad.memory.summaries import SummaryCache
from r2mad.methods import make_method
from r2mad.settings.config import DebateSettings
from r2mad.types import Task, Transcript
from tests import helpers
from tests.helpers import OPTIONS, SYSTEMS
from tests.helpers import r2mad_reply as reply
from tests.scripted import ScriptedBackend, persona_of

TASK = Task("mcq", "Question number 2: which planet is largest?", OPTIONS, "B", "new")
bank = helpers.bank  # the scripted bank fixture


def mixed(method, *, memory=None, aux=None):
    a, b = ScriptedBackend(reply, name="a"), ScriptedBackend(reply, name="b")
    s = DebateSettings(seed=1, early_stop=False)
    strategy = make_method(method, s, bank=memory, summaries=SummaryCache())
    debate = Debate(aux or a, strategy, agent_backends=[a, b, a])
    return asyncio.run(debate.run(TASK)), a, b


def test_each_agent_calls_its_own_backend_and_usage_is_per_model():
    t, a, b = mixed("mad")
    assert {persona_of(c.messages) for c in b.calls} == {SYSTEMS[1]} and len(b.calls) == 3
    assert {persona_of(c.messages) for c in a.calls} == {SYSTEMS[0], SYSTEMS[2]} and len(a.calls) == 6
    assert t.agent_backbones() == ["a", "b", "a"]
    per = t.usage_by_model()
    assert (per["a"].calls, per["b"].calls) == (6, 3) and per["a"] + per["b"] == t.usage()
    assert Transcript.from_json(t.to_json()) == t  # the models survive the JSON round trip


def test_judges_go_to_the_auxiliary_backbone():
    judge = ScriptedBackend(lambda m: "YES, fine.", name="judge")
    t, a, b = mixed("madm2-subjective", aux=judge)
    assert len(judge.calls) == 2 * 3 and len(a.calls) == 6 and len(b.calls) == 3
    assert {c.backbone for r in t.rounds for c in r.aux} == {"judge"} and t.usage_by_model()["judge"].calls == 6


def test_r2mad_banks_per_agent_still_work_with_mixed_models(bank):  # noqa: F811
    t, a, b = mixed("r2mad", memory=bank)
    for rnd in t.rounds[1:]:
        for turn in rnd.turns:
            cases = turn.details["retrieved"]
            assert cases and all(f":a{turn.agent}:" in c["case_id"] for c in cases)  # its own memory
    summaries = [c for r in t.rounds for c in r.aux if c.kind == "summary"]
    assert summaries and {c.backbone for c in summaries} == {"a"}  # agent 1's backbone by default
    assert len(b.calls) == 3 and all(persona_of(c.messages) == SYSTEMS[1] for c in b.calls)


def test_wrong_number_of_agent_backbones_is_one_sentence():
    with pytest.raises(ValueError, match="2 agent backbones were given for 3 agents; give one per agent."):
        Debate(ScriptedBackend(reply), make_method("mad", DebateSettings()),
               agent_backends=[ScriptedBackend(reply, name="a")] * 2)


# --- side by side, baselines, cost per model and what the app shows (scripted backends) --------------

def reply_or_alone(messages):
    """`reply` for the debaters and summaries; a single agent (CoT's persona) answers B."""
    return "Alone: ((B))" if "step by step" in persona_of(messages) else reply(messages)


def test_side_by_side_shares_round0_and_keeps_each_agent_on_its_backend():
    from r2mad.engine.runner import Setup, run_methods

    a, b = ScriptedBackend(reply_or_alone, name="a"), ScriptedBackend(reply_or_alone, name="b")
    s = DebateSettings(seed=1, early_stop=False)
    out = asyncio.run(run_methods(TASK, ["mad", "r2mad", "cot"], Setup(
        a, s, agent_backends=(a, b, a), summaries=SummaryCache())))
    # agent 2 only: shared round 0 once, then 2 rounds in each of the two debates; cot never reaches b
    assert len(b.calls) == 1 + 2 + 2 and {persona_of(c.messages) for c in b.calls} == {SYSTEMS[1]}
    assert out["mad"].shared_round0 and out["mad"].agent_backbones() == ["a", "b", "a"]
    assert out["r2mad"].agent_backbones() == ["a", "b", "a"]
    cot = out["cot"]
    assert cot.agent_backbones() == ["a"] and cot.usage_by_model()["a"].calls == 1
    assert any("runs on agent 1's backbone (a)" in n for n in cot.notices)


def test_cost_per_model_is_counted_from_each_models_prices_and_an_unknown_price_says_so():
    from r2mad.evaluation.costs import Prices, format_cost, model_costs, total_cost
    from r2mad.types import Usage

    per_model = {"a": Usage(6, 60, 30), "b": Usage(3, 30, 15)}
    # a: 60 in at $1/M + 30 out at $4/M = 0.00006 + 0.00012 = $0.00018; b: 30 × 2 + 15 × 8 = $0.00018
    costs = model_costs(per_model, {"a": Prices(1, 4), "b": Prices(2, 8)})
    assert costs == pytest.approx({"a": 0.00018, "b": 0.00018}) and total_cost(costs) == pytest.approx(0.00036)
    costs = model_costs(per_model, {"a": Prices(1, 4), "b": None})
    assert costs["b"] is None and total_cost(costs) is None and format_cost(total_cost(costs)) == "unknown"
    assert model_costs(per_model, {"a": None}) is None  # no model priced: nothing to say in money


def test_the_cli_printout_and_the_outcome_line_give_usage_and_cost_per_model():
    import io

    from r2mad.commands.common import print_transcript
    from r2mad.evaluation.costs import Prices
    from r2mad.ui.render.chat import chat_messages, final_markdown
    from r2mad.ui.render.scoreboard import scoreboard_html

    t, _, _ = mixed("mad")  # 9 calls of 10 in + 5 out: a answers 6, b 3
    prices = {"a": Prices(1000, 2000), "b": None}  # a: 60 × 1000 + 30 × 2000 = 120,000 per M = $0.12
    out = io.StringIO()
    print_transcript(t, out, prices=prices)
    text = out.getvalue()
    assert "Agent 2 (Fact-checker) on b:" in text
    assert "Usage: 9 calls, 90 tokens in, 45 out (cost unknown: no price for b)" in text
    assert "Usage by model: a: 6 calls, 60 in, 30 out, $0.120; b: 3 calls, 30 in, 15 out, price unknown" in text
    line = final_markdown(t, prices)
    assert "mad on a (agents 1, 3), b (agent 2) · 3 round(s) · 9 calls · 135 tokens (cost unknown: no price for b)" \
        in line
    assert "By model: a 6 calls · 90 tokens ($0.120); b 3 calls · 45 tokens (price unknown)" in line
    titles = [m["metadata"].get("title", "") for m in chat_messages(t)]
    assert sum(" · on b —" in x for x in titles) == 3 and sum(" · on a —" in x for x in titles) == 6
    assert scoreboard_html(t).count("agent-model'") == 3
    one, _, _ = mixed("mad", aux=None)
    same = Transcript.from_json(one.to_json().replace('"backbone": "b"', '"backbone": "a"'))
    assert "agent-model" not in scoreboard_html(same) and " · on " not in str(chat_messages(same))


def test_the_apps_mixed_backbones_follow_the_single_backbones_rules_in_one_sentence(tmp_path):
    import dataclasses

    from r2mad.serving.services import Services
    from r2mad.settings.config import Backbone, ConfigError, load_config

    base = load_config(env={"R2MAD_DATA_DIR": str(tmp_path)})
    hf = Backbone("hf", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="HF_TOKEN", api_key_required=True,
                  visitor_token=True)
    paid = Backbone("paid", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="PAID_KEY",
                    api_key_required=True)
    local = Backbone("local", base_url="http://127.0.0.1:9/v1", model="m")
    config = dataclasses.replace(base, backbones={"local": local, "hf": hf, "paid": paid}, on_space=True)
    services = Services(config)
    refusals = [(["local", "hf"], {}, "Backbone 'hf' runs on your own account here: sign in with Hugging Face"),
                (["local"], {}, "1 agent backbones were given for 2 agents; give one backbone per agent."),
                (["local", ""], {}, "Agent 2 has no backbone; choose one for every agent"),
                (["local", "nope"], {}, "Unknown backbone 'nope'; choose one of: local, hf, paid."),
                (["local", "paid"], {"token": "hf_" + "X" * 20},
                 "Backbone 'paid' needs PAID_KEY set where the app runs; in a mixed-model debate a pasted token "
                 "serves only Hugging Face backbones.")]
    for names, kw, sentence in refusals:
        with pytest.raises(ConfigError) as caught:
            services.mixed_backends(names, n_agents=2, **kw)
        assert sentence in str(caught.value) and "X" * 20 not in str(caught.value)
    aux, agents = services.mixed_backends(["local", "hf"], "hf", n_agents=2, token="hf_" + "X" * 20)
    assert aux.name == "hf" and [b.name for b in agents] == ["local", "hf"] and agents[1] is aux
