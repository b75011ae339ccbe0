"""The owner's allowance for anonymous visitors: calls and dollars counted per visitor and per day (safe under
concurrency, kept across a restart), the one refusal sentence past it, and the owner's token going only to the
Hugging Face router, never to an endpoint a visitor types or a configured non-router backbone."""
import asyncio
import os
import re
import threading
from pathlib import Path

import pytest
import yaml

from r2mad.engine.service import Endpoint
from r2mad.evaluation.costs import Prices
from r2mad.serving.allowance import AllowanceSpent, Ledger, Metered
from r2mad.serving.shared import Shared
from r2mad.settings.config import Allowance, ConfigError, load_config
from r2mad.types import Message
from testing.scripted_server import FakeServer, ok

ROOT = Path(__file__).resolve().parents[2]
OWNER = "hf_" + "OwnerAllowanceSecret" + "7" * 12  # token-shaped, built
DAY = 1_800_000_000.0  # a fixed clock: 2027-01-15 08:00 UTC
ASK = [Message("user", "What is 1+1? Answer with a boxed number please.")]  # 47 characters


def sentences(text: str) -> int:
    return len(re.findall(r"[.!?](\s|$)", text))  # "$1.00" is no sentence end


def ledger(tmp_path, clock=lambda: DAY, **limits) -> Ledger:
    return Ledger(tmp_path / "allowance.sqlite", Allowance(enabled=True, **limits), clock=clock)


def test_calls_and_dollars_are_counted_per_visitor_and_for_everyone(tmp_path):
    book = ledger(tmp_path, visitor_calls=5, visitor_usd=0.10, daily_calls=8, daily_usd=1.0)
    day = book.reserve("browser:a", 2, 0.03)
    book.settle("browser:a", day, 0.01 - 0.03)  # the calls cost $0.01, not the $0.03 estimate
    left = book.left("browser:a")
    assert (left.calls, round(left.usd, 6), left.everyone) == (3, 0.09, False)
    book.reserve("browser:b", 5, 0.0)
    left = book.left("browser:a")  # everyone has spent 7 of 8 calls: that binds before a's own 3
    assert (left.calls, left.everyone) == (1, True)


def test_past_the_visitors_allowance_one_sentence_offers_sign_in(tmp_path):
    book = ledger(tmp_path, visitor_calls=2, visitor_usd=1.0)
    book.reserve("browser:a", 2, 0.0)
    with pytest.raises(AllowanceSpent) as refused:
        book.reserve("browser:a", 1, 0.0)
    words = str(refused.value)
    assert sentences(words) == 1 and words.endswith("choose the embedded model.")
    assert "used up for today (2 calls" in words and "sign in with Hugging Face" in words
    assert book.left("browser:b").calls == 2  # another visitor still has theirs


def test_dollars_bind_too_and_an_estimate_over_what_is_left_is_refused(tmp_path):
    book = ledger(tmp_path, visitor_calls=100, visitor_usd=0.01)
    book.reserve("browser:a", 1, 0.008)
    with pytest.raises(AllowanceSpent):
        book.reserve("browser:a", 1, 0.003)  # 0.008 + 0.003 > 0.01
    book.reserve("browser:a", 1, 0.002)  # exactly what is left
    assert book.left("browser:a").spent


def test_concurrent_reservations_never_take_more_than_the_allowance(tmp_path):
    book = ledger(tmp_path, visitor_calls=5, visitor_usd=1.0)
    taken, refused = [], []

    def take():
        try:
            taken.append(Ledger(book.path, book.allowance, clock=lambda: DAY).reserve("browser:a", 1, 0.0))
        except AllowanceSpent:
            refused.append(1)

    threads = [threading.Thread(target=take) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert (len(taken), len(refused)) == (5, 7)


def test_what_was_spent_survives_a_restart_and_a_new_utc_day_starts_afresh(tmp_path):
    book = ledger(tmp_path, visitor_calls=3)
    book.reserve("browser:a", 3, 0.0)
    assert ledger(tmp_path, visitor_calls=3).left("browser:a").spent  # a new process reads the same file
    tomorrow = ledger(tmp_path, clock=lambda: DAY + 86_400, visitor_calls=3)
    assert tomorrow.left("browser:a").calls == 3
    assert "browser:a" not in (tmp_path / "allowance.sqlite").read_bytes().decode("latin-1")  # kept hashed


def test_a_metered_call_is_charged_at_its_tokens_and_a_spent_one_never_goes_out(tmp_path):
    from r2mad.backends.openai_compat import OpenAICompatBackend

    book = ledger(tmp_path, visitor_calls=1, visitor_usd=1.0)
    with FakeServer(models=["m"], responder=lambda body: ok("((B))", prompt_tokens=100, completion_tokens=10)) as srv:
        inner = OpenAICompatBackend(base_url=srv.base_url, model="m", api_key=OWNER, name="hf")
        metered = Metered(inner, book, "browser:a", Prices(2.0, 4.0))
        asyncio.run(metered.chat(ASK, max_tokens=32))
        # 100 prompt tokens at $2/M + 10 completion tokens at $4/M = $0.00024, the estimate given back
        assert round(1.0 - book.left("browser:a").usd, 8) == 0.00024
        with pytest.raises(AllowanceSpent):
            asyncio.run(metered.chat(ASK, max_tokens=32))
        assert srv.hits == 1


# --- the app's resources: who gets the owner's token ----------------------------------------------------------

def configs(tmp_path: Path, router: str, other: str, **allowance) -> Path:
    folder = tmp_path / "configs"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("methods.yaml", "annotation.yaml"):
        (folder / name).write_text((ROOT / "configs" / name).read_text())
    hf = {"model": "m", "api_key_env": "HF_TOKEN", "api_key_required": True, "visitor_token": True, "timeout_s": 10,
          "max_retries": 0}
    (folder / "backbones.yaml").write_text(yaml.safe_dump({"backbones": {
        "hf-7b": {**hf, "base_url": "https://router.huggingface.co/v1", "price_input_per_m": 2.0,
                  "price_output_per_m": 4.0},
        "not-the-router": {**hf, "base_url": other}}}))
    app = yaml.safe_load((ROOT / "configs" / "app.yaml").read_text())
    app["allowance"] = {"enabled": True, "visitor_calls": 2, "visitor_usd": 1.0, **allowance}
    (folder / "app.yaml").write_text(yaml.safe_dump({**app, "default_bank": None}))
    return folder


@pytest.fixture
def servers():
    reply = lambda body: ok("((B))", prompt_tokens=10, completion_tokens=5)  # noqa: E731
    with FakeServer(models=["m"], responder=reply) as router, FakeServer(models=["m"], responder=reply) as other:
        yield router, other


def shared(tmp_path, router, other, *, space=True, **allowance) -> Shared:
    env = {**os.environ, "HF_TOKEN": OWNER, "R2MAD_HF_ROUTER_URL": router.base_url, **({"SPACE_ID": "o/s"} if space
                                                                                         else {})}
    return Shared(load_config(configs(tmp_path, router.base_url, other.base_url, **allowance), env=env),
                  secrets=[OWNER])


def test_an_anonymous_visitor_spends_the_owners_token_on_the_router_up_to_the_allowance(tmp_path, servers,
                                                                                      monkeypatch):
    monkeypatch.setenv("HF_TOKEN", OWNER)
    router, other = servers
    services = shared(tmp_path, router, other)
    backend = services.backend("hf-7b", visitor="browser:" + "a" * 32)
    assert backend.name == "hf-7b"  # metered, and named as the runs record it
    asyncio.run(backend.chat(ASK, max_tokens=16))
    asyncio.run(backend.chat(ASK, max_tokens=16))
    assert [r.authorization for r in router.requests] == [f"Bearer {OWNER}"] * 2
    assert services.allowance_left("browser:" + "a" * 32).calls == 0
    with pytest.raises(ConfigError, match="sign in with Hugging Face") as refused:  # the next debate: refused
        services.backend("hf-7b", visitor="browser:" + "a" * 32)
    assert sentences(str(refused.value)) == 1
    assert services.backend("hf-7b", visitor="browser:" + "b" * 32)  # another visitor has their own
    # a signed-in visitor's own token is used, not the owner's, and is not charged to anyone
    mine = services.backend("hf-7b", login_token="hf_oauth_VisitorOwn0123456789", visitor="browser:" + "c" * 32)
    asyncio.run(mine.chat(ASK, max_tokens=16))
    assert router.requests[-1].authorization == "Bearer hf_oauth_VisitorOwn0123456789"
    assert services.allowance_left("browser:" + "c" * 32).calls == 2


def test_the_owners_token_never_reaches_an_endpoint_that_is_not_the_router(tmp_path, servers, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", OWNER)
    router, other = servers
    # a configured backbone that takes HF_TOKEN but is not the router: refused on a Space, nothing sent
    services = shared(tmp_path, router, other)
    with pytest.raises(ConfigError, match="sign in with Hugging Face"):
        services.backend("not-the-router", visitor="browser:" + "a" * 32)
    # a custom endpoint a visitor types (allowed off a Space): it gets no key at all
    local = shared(tmp_path / "local", router, other, space=False)
    backend = local.backend("hf-7b", endpoint=Endpoint(other.base_url, "m"), visitor="browser:" + "a" * 32)
    assert backend.name == "custom:m"  # named as the run records it
    asyncio.run(backend.chat(ASK, max_tokens=16))
    assert other.hits == 1 and all(OWNER not in repr(dict(r.headers)) for r in other.requests)
    assert router.hits == 0


def test_the_allowance_is_off_by_default_and_set_by_environment_variables(tmp_path):
    assert load_config(env={}).app.allowance.enabled is False
    on = load_config(env={"R2MAD_ALLOWANCE": "on", "R2MAD_ALLOWANCE_VISITOR_CALLS": "40",
                          "R2MAD_ALLOWANCE_DAILY_USD": "3.5"}).app.allowance
    assert (on.enabled, on.visitor_calls, on.daily_usd) == (True, 40, 3.5)
    with pytest.raises(ConfigError, match="R2MAD_ALLOWANCE_VISITOR_USD='lots' is not a valid value"):
        load_config(env={"R2MAD_ALLOWANCE_VISITOR_USD": "lots"})


def test_the_allowance_line_names_what_is_left_the_paid_backbone_and_past_it_sign_in(tmp_path, servers):
    from r2mad.serving.allowance import Left
    from r2mad.ui.render.allowance_line import allowance_words

    config = shared(tmp_path, *servers).config
    left = Left(calls=12, usd=0.0375, everyone=False)
    assert allowance_words(config, left, False, "hf-7b") == (
        "**This Space pays for your debates on hf-7b:** **12 model calls and $0.0375** left today.")
    assert "choose a Hugging Face backbone such as hf-7b under *Advanced*" in allowance_words(config, left, False)
    assert "sign in with Hugging Face" in allowance_words(config, Left(0, 0.01, False), False, "hf-7b")
    assert allowance_words(config, None, False) == ""  # no allowance: no line
    assert allowance_words(config, None, True).startswith("Signed in: the Hugging Face backbones run on your own")


@pytest.mark.slow  # the app's debate handler end to end on the scripted server
def test_a_debate_that_runs_out_midway_ends_with_the_refused_calls_named(tmp_path, monkeypatch):
    import itertools

    import gradio as gr

    from r2mad.serving.services import Services
    from r2mad.ui.handlers import DebateHandlers

    monkeypatch.setenv("HF_TOKEN", OWNER)
    answers = itertools.cycle(["\\boxed{1}", "\\boxed{2}", "\\boxed{3}"])  # they never agree: round 1 is run
    with FakeServer(models=["m"], responder=lambda body: ok(next(answers))) as router, \
            FakeServer(models=["m"]) as other:
        config = load_config(configs(tmp_path, router.base_url, other.base_url, visitor_calls=4),
                             env={**os.environ, "SPACE_ID": "o/s", "R2MAD_HF_ROUTER_URL": router.base_url})
        form = dict(backbone="hf-7b", token="", base_url="", model="", methods=["mad"], bank="", agents=3, rounds=2,
                    temperature=0.7, max_tokens=32, seed=0, answer_guard="off", question="What is 1+1?", gold="2")

        async def run():
            request = gr.Request(username=None)
            request.session_hash = "s1"
            return [u async for u in DebateHandlers(Services(config, secrets=[OWNER])).run_debate(
                **form, visitor_id="a" * 32, request=request)]

        with pytest.warns(UserWarning) as warned:
            asyncio.run(run())
    assert router.hits == 4  # round 0's three calls and one of round 1; the other two were never sent
    said = " ".join(str(w.message) for w in warned)
    assert "2 agent call(s) failed and abstained: Your free allowance on this Space's account is used up" in said
    assert OWNER not in said


# --- the caps hold for any script -----------------------------------------------------------------------------

CJK = "一个农夫有十七只羊，除了九只以外都死了。他还剩下几只羊？请一步一步地思考，并把答案写在方框里。" * 6
EMOJI = "🐑🐑🐑 + 🐑🐑 = ? Count the sheep 🧮✨ and box the number 👩‍👩‍👧‍👦. " * 12


def worst_tokenizer(body):
    """A server whose tokenizer makes one token per UTF-8 byte (the most a byte-level one can) and writes to
    max_tokens every time."""
    prompt = sum(len(str(m["content"]).encode("utf-8")) for m in body["messages"])
    return ok("((B))", prompt_tokens=prompt, completion_tokens=body.get("max_tokens") or 64)


@pytest.mark.parametrize("question", [CJK, EMOJI], ids=["cjk", "emoji"])
def test_a_chinese_or_emoji_question_never_spends_past_the_caps(tmp_path, question):
    """The probe: a question in Chinese characters cost one visitor $0.01193 against $0.01, and the day $0.03579
    against $0.03, when a prompt's tokens were guessed as characters / 3."""
    from r2mad.backends.openai_compat import OpenAICompatBackend

    book = ledger(tmp_path, visitor_calls=100, visitor_usd=0.01, daily_calls=1000, daily_usd=0.03)
    prices, ask = Prices(2.0, 4.0), [Message("system", "You are a careful solver."), Message("user", question)]
    with FakeServer(models=["m"], responder=worst_tokenizer) as srv:
        inner = OpenAICompatBackend(base_url=srv.base_url, model="m", api_key=OWNER, name="hf")
        for visitor in ("browser:a", "browser:b", "browser:c", "browser:d"):
            metered = Metered(inner, book, visitor, prices)
            with pytest.raises(AllowanceSpent):
                for _ in range(100):
                    asyncio.run(metered.chat(ask, max_tokens=64))
        assert srv.hits > 0
    with book._db() as db:
        per = [usd for (usd,) in db.execute("SELECT usd FROM spent")]
    assert max(per) <= 0.01 + 1e-12 and sum(per) <= 0.03 + 1e-12  # neither cap is passed


@pytest.mark.slow  # loads the embedded model's vocabulary (llama.cpp), not its weights
@pytest.mark.parametrize("text", [CJK, EMOJI, "What is 12 + 30? " * 40], ids=["cjk", "emoji", "english"])
def test_the_bound_holds_for_the_embedded_models_own_tokenizer(text):
    from llama_cpp import Llama

    from r2mad.backends.embedded import smollm2_path
    from r2mad.serving.allowance import prompt_token_bound

    vocab = Llama(model_path=str(smollm2_path()), vocab_only=True, verbose=False)
    messages = [Message("system", "You are a careful solver."), Message("user", text)]
    rendered = "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"
    real = len(vocab.tokenize(rendered.encode("utf-8"), add_bos=False, special=True))
    assert real <= prompt_token_bound(messages)
    assert real > len(text) // 4  # a real count, not an empty one
