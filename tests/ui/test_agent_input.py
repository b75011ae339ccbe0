""""What this agent saw" (r2mad/ui/render/agent_input.py): an R²-MAD round-1 prompt split into its parts
(which join back into the exact message), token shares that add up to the backend's count, the masks
applied, the diff against the agent's previous round, and no secret on the page."""
import html
import re

from r2mad.prompts import r2mad as prompts
from r2mad.types import AgentTurn, Answer, Message, Task
from r2mad.ui.render.agent_input import masks_line, prompt_diff, saw_html, split_message, token_shares
from tests.helpers import bank_case

TASK = Task("mcq", "Which is prime?", (("A", "4"), ("B", "7")), gold="B")
PEERS = [("Agent 2 (Skeptic)", "Four is even, so ((A)).\n\n<confidence>High: in similar past debate states, "
          "this agent's stance was usually correct.</confidence>"), ("Agent 3 (Tutor)", "Seven. ((B))")]


def test_a_round_1_prompt_splits_into_its_parts_and_joins_back_exactly():
    message = prompts.debate_prompt(TASK, [bank_case("q9")], PEERS, confidence=True)
    parts = split_message(Message("user", message), TASK)
    assert "".join(p.text for p in parts) == message
    assert [p.kind for p in parts] == ["instruction", "case", "instruction", "peer", "peer", "instruction", "format"]
    assert parts[1].label == "Retrieved case 1" and parts[1].text.startswith("<memory case 1>")
    assert parts[3].label == "Peer answer · Agent 2 (Skeptic) · high confidence tag"
    assert parts[4].label == "Peer answer · Agent 3 (Tutor)"


def test_token_shares_add_up_to_the_backend_count():
    assert token_shares(101, ["aaaa", "bb", "c"]) == [58, 29, 14]  # 57.71, 28.86, 14.43: largest remainders
    assert token_shares(0, ["a" * 40, "b" * 6]) == [10, 2]  # no count: 4 characters a token


def test_the_diff_shows_what_was_added_since_the_previous_round():
    before = (Message("system", "You are careful."), Message("user", "Q?"))
    after = (*before, Message("assistant", "I think A."), Message("user", "Peers say B.\nAgain?"))
    lines = prompt_diff(before, after)
    assert [x for x in lines if x.startswith(("+", "-"))] == [
        "+── message 3 · assistant ──", "+I think A.", "+── message 4 · user ──", "+Peers say B.", "+Again?"]


def test_masks_applied_are_named():
    turn = AgentTurn(0, 1, "p", (), "", Answer("A"), details={"shown": [2]})
    masks = {"all": {"1": {"label": "NO", "keep": False}, "2": {"label": "YES", "keep": True}}}
    assert masks_line(turn, {"masks": masks}) == "responses shown after masking: Agent 3; masked: Agent 2"


def test_the_block_is_one_html_line_holding_each_message_exactly_and_no_token():
    secret = "hf_" + "a" * 34
    prompt = (Message("system", "Be careful.\n\nAlways."), Message("user", f"Q? <b>bold</b> & {secret}"))
    previous = AgentTurn(0, 0, "p", prompt[:1], "x", Answer("A"))
    page = saw_html(AgentTurn(0, 1, "p", prompt, "y", Answer("A"), tokens_in=12), TASK, previous)
    assert "\n" not in page and secret not in page
    texts = [html.unescape(t) for t in re.findall(r'<pre class="saw-part part-[a-z]+" style="[^"]*">(.*?)</pre>', page)]
    assert [t.removeprefix("\n") for t in texts] == ["Be careful.\n\nAlways.", "Q? <b>bold</b> & [redacted]"]
    assert "What changed since this agent's previous round (round 0): +2 lines, −0 lines" in page


def test_every_turn_of_the_annotate_chat_and_the_export_carries_its_block():
    from r2mad.exports.html import chat_html
    from r2mad.ui.annotate_base import flat_chat
    from r2mad.ui.render.chat import chat_messages
    from tests.helpers import STORED_MCQ, make_transcript

    t = make_transcript(STORED_MCQ, [["A", "B", "B"], ["A", "A", "B"]], "A", True)
    turns = [m for m in flat_chat(t) if m["metadata"].get("id", "").count("-agent-")]
    assert len(turns) == 6 and all('<details class="saw saw-r' in m["content"] for m in turns)
    assert all("saw-r" not in m["content"] for m in chat_messages(t))  # the live Debate tab: unchanged
    assert chat_html(t).count('<details class="saw saw-r') == 6
