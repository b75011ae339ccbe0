"""Continuous batching for the embedded model: the requests in flight decode together in one llama.cpp
batch, each in its own KV sequence (a slot) that keeps its tokens for the next request's prefix.
Run by llama_worker (the process protocol lives there); no I/O here besides the `send` callback."""
from __future__ import annotations

import queue
import time

import llama_cpp.llama_cpp as low
import numpy as np

from r2mad.backends.cores import Cores, StepCosts

TOO_LONG = ("The prompt is longer than the embedded model's context window; lower max tokens, rounds or "
            "retrieved cases.")
TOP_K, MIN_P = 40, 0.05  # create_chat_completion's defaults, so sampled text reads as before
# A prompt chunk is one long computation a step, not hundreds of short ones: two threads halve it on idle
# cores and cost little when a core is taken, since the threads meet at few barriers.
PROMPT_THREADS = 2


class Slot:
    """One KV sequence: the tokens it holds (position = index) and the request using it, if any."""

    def __init__(self, index: int):
        self.index, self.tokens, self.used, self.seq = index, [], 0.0, None


class Sequence:
    """One request being answered: tokens still to decode, tokens generated, its own sampler chain."""

    def __init__(self, req: dict, prompt: list[int], sampler, max_tokens: int, order: int):
        self.rid, self.req, self.prompt, self.sampler, self.order = req["id"], req, prompt, sampler, order
        self.max_tokens, self.out, self.pending, self.cached = max_tokens, [], [], 0
        self.logprobs = [] if req.get("logprobs") else None
        self.started = self.shown = time.monotonic()
        self.slot: Slot | None = None


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class Scheduler:
    """Admits requests between decode steps; each step decodes prompt chunks plus one token per generating
    sequence. `send(message)` gets {"id", "text"} every `every_s` and {"id", "done"|"error"} at the end."""

    def __init__(self, llm, n_ctx: int, kv_size: int, slots: int, send, *, n_batch: int = 512,
                 every_s: float = 0.15):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.llm, self.n_ctx, self.kv_size, self.send, self.n_batch, self.every_s = (
            llm, n_ctx, kv_size, send, n_batch, every_s)
        model = llm.model
        self.vocab, self.n_vocab = low.llama_model_get_vocab(model), llm.n_vocab()
        eos, bos = llm.token_eos(), llm.token_bos()
        self.chat = Jinja2ChatFormatter(
            template=llm.metadata["tokenizer.chat_template"],
            eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llm._model.token_get_text(bos) if bos != -1 else "")
        params = low.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = kv_size, n_batch, n_batch, slots
        # Each slot a KV stream of its own: a token attends over its own sequence only. In one unified
        # cache every token attends (masked) over every slot's cells, so a step of 8 cost 8 steps of 1
        # and a single call slowed as the cache filled (measured for issue 25). Keys and values in q8_0:
        # 12 KB a cell instead of 23, so 12 slots take the memory 8 took; values in q8_0 need flash
        # attention, which on Q8_0 weights decodes 8 sequences as fast as plain attention (issue 25).
        params.kv_unified, params.no_perf = False, True
        params.flash_attn_type = low.LLAMA_FLASH_ATTN_TYPE_ENABLED
        params.type_k = params.type_v = low.GGML_TYPE_Q8_0
        self.cores = Cores()  # decode threads: as many as there are cores nobody else is using
        self.prompt_threads = max(1, min(PROMPT_THREADS, int(self.cores.cores)))
        params.n_threads, params.n_threads_batch = 1, self.prompt_threads
        self.ctx = low.llama_init_from_model(model, params)
        if not self.ctx:
            raise RuntimeError("llama.cpp could not create the batched context")
        self.memory = low.llama_get_memory(self.ctx)
        self.costs = StepCosts()
        self.batch = low.llama_batch_init(n_batch, 0, 1)
        self.slots = [Slot(i) for i in range(slots)]
        self.active: list[Sequence] = []
        self.waiting: list[Sequence] = []
        self.inbox: queue.Queue = queue.Queue()  # requests and {"cancel": id}, in the order they came
        self.admitted = 0
        self.step_started: float | None = None  # set while llama_decode runs (the heartbeat reads it)

    # -- requests in -------------------------------------------------------------------------------
    def submit(self, message: dict) -> None:
        """A request, or {"cancel": id}: that request ends at the next step with the text so far."""
        self.inbox.put(message)

    def _sampler(self, req: dict):
        chain = low.llama_sampler_chain_init(low.llama_sampler_chain_default_params())
        if req.get("grammar"):
            grammar = low.llama_sampler_init_grammar(self.vocab, req["grammar"].encode(), b"root")
            if not grammar:
                low.llama_sampler_free(chain)
                raise ValueError("The answer guard's grammar could not be parsed by llama.cpp.")
            low.llama_sampler_chain_add(chain, grammar)
        temperature = float(req.get("temperature") or 0.0)
        if temperature <= 0:
            low.llama_sampler_chain_add(chain, low.llama_sampler_init_greedy())
        else:
            for part in (low.llama_sampler_init_top_k(TOP_K), low.llama_sampler_init_top_p(req.get("top_p", 1.0), 1),
                         low.llama_sampler_init_min_p(MIN_P, 1), low.llama_sampler_init_temp(temperature),
                         low.llama_sampler_init_dist(int(req.get("seed") or 0) % 2**32)):
                low.llama_sampler_chain_add(chain, part)
        return chain

    def _open(self, req: dict) -> None:
        """Tokenise the chat as create_chat_completion would; errors go straight back as one sentence."""
        try:
            text = self.chat(messages=req["messages"]).prompt
            prompt = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
            if len(prompt) >= self.n_ctx:
                raise ValueError(TOO_LONG)
            sampler = self._sampler(req)
        except Exception as exc:  # noqa: BLE001 - a bad request fails alone
            self.send({"id": req["id"], "error": str(exc) if str(exc) == TOO_LONG or "grammar" in str(exc)
                       else f"The embedded model failed: {exc}"})
            return
        max_tokens = min(int(req.get("max_tokens") or self.n_ctx), self.n_ctx - len(prompt))
        self.admitted += 1
        self.waiting.append(Sequence(req, prompt, sampler, max_tokens, self.admitted))

    def _admit(self) -> None:
        """Take what has arrived (waiting for it when nothing is running), then seat waiting requests."""
        block = not self.active and not self.waiting
        while True:
            try:
                message = self.inbox.get(block=block)
            except queue.Empty:
                break
            block = False
            if "cancel" in message:
                for seq in [s for s in self.active + self.waiting if s.rid == message["cancel"]]:
                    self._finish(seq, "stop")
            else:
                self._open(message)
        while self.waiting:
            free = [s for s in self.slots if s.seq is None]
            claimed = sum(len(s.prompt) + s.max_tokens for s in self.active + self.waiting[:1])
            if not free or (self.active and claimed > self.kv_size):
                break  # no slot, or it might not fit beside the calls in flight: it waits for them
            seq = self.waiting.pop(0)
            slot = max(free, key=lambda s: (common_prefix(s.tokens, seq.prompt), -s.used))
            keep = min(common_prefix(slot.tokens, seq.prompt), len(seq.prompt) - 1)  # >= 1 token for logits
            low.llama_memory_seq_rm(self.memory, slot.index, keep, -1)
            del slot.tokens[keep:]
            seq.cached, seq.pending, seq.slot, slot.seq = keep, seq.prompt[keep:], slot, seq
            self.active.append(seq)

    # -- one decode step ---------------------------------------------------------------------------
    def _plan(self, threads: int) -> list[list[tuple[Sequence, list[int], bool]]]:
        """This step's decodes: every sequence with one token to go (its next token, or the last prompt
        token) together, or one by one where that is faster, then one chunk of the oldest prompt alone.
        A prompt is never batched with others: llama.cpp takes another kernel path for big batches, and a
        prompt decoded alone gives the same numbers as it would with no one else around (so greedy text
        does not depend on the company)."""
        ones = [(s, list(s.pending), True) for s in self.active if len(s.pending) == 1]
        prompts = sorted((s for s in self.active if len(s.pending) > 1), key=lambda s: s.order)
        plan = [[one] for one in ones] if self.costs.split(threads, len(ones)) else [ones] if ones else []
        if prompts:
            chunk = prompts[0].pending[:self.n_batch]
            plan.append([(prompts[0], chunk, len(chunk) == len(prompts[0].pending))])
        return plan

    def _fit(self, entries) -> bool:
        """Make room in the KV cache: drop idle slots' tokens, oldest first; when that is not enough, fail
        the newest request in flight. Returns False when the decode must wait for the next step."""
        need = sum(len(chunk) for _, chunk, _ in entries) + sum(len(s.tokens) for s in self.slots)
        for slot in sorted((s for s in self.slots if s.seq is None and s.tokens), key=lambda s: s.used):
            if need <= self.kv_size:
                break
            need -= len(slot.tokens)
            self._forget(slot)
        if need <= self.kv_size:
            return True
        self._fail(max(self.active, key=lambda s: s.order), TOO_LONG)
        return False

    def _forget(self, slot: Slot) -> None:
        low.llama_memory_seq_rm(self.memory, slot.index, -1, -1)
        slot.tokens = []

    def step(self) -> None:
        self._admit()
        threads = self.cores.threads()
        for entries in self._plan(threads):
            if all(seq in self.active for seq, _, _ in entries) and self._fit(entries):
                self._decode(entries, threads)

    def _decode(self, entries, threads: int) -> None:
        batch, n = self.batch, 0
        for seq, chunk, wants_logits in entries:
            start = len(seq.slot.tokens)
            for j, token in enumerate(chunk):
                batch.token[n], batch.pos[n], batch.n_seq_id[n] = token, start + j, 1
                batch.seq_id[n][0] = seq.slot.index
                batch.logits[n] = int(wants_logits and j == len(chunk) - 1)
                n += 1
        batch.n_tokens = n
        prompt = any(len(chunk) > 1 for _, chunk, _ in entries)
        low.llama_set_n_threads(self.ctx, threads, max(threads, self.prompt_threads) if prompt else threads)
        self.step_started = started = time.monotonic()
        code = low.llama_decode(self.ctx, batch)
        self.step_started = None
        if not prompt and code == 0:
            self.costs.record(threads, n, time.monotonic() - started)
        if code != 0:  # the memory state is as before the call: free what can be freed and try again
            idle = [s for s in self.slots if s.seq is None and s.tokens]
            for slot in idle:
                self._forget(slot)
            if code != 1 or not idle:
                self._fail(max((seq for seq, _, _ in entries), key=lambda s: s.order),
                           TOO_LONG if code == 1 else f"The embedded model failed: llama_decode returned {code}")
            return
        row = 0
        for seq, chunk, wants_logits in entries:
            seq.slot.tokens += chunk
            del seq.pending[:len(chunk)]
            row += len(chunk)
            if wants_logits:
                self._sample(seq, row - 1)

    def _sample(self, seq: Sequence, row: int) -> None:
        token = low.llama_sampler_sample(seq.sampler, self.ctx, row)
        if seq.logprobs is not None:
            logits = np.ctypeslib.as_array(low.llama_get_logits_ith(self.ctx, row), shape=(self.n_vocab,))
            top = float(logits.max())
            seq.logprobs.append(float(logits[token]) - top - float(np.log(np.exp(logits - top).sum())))
        if low.llama_vocab_is_eog(self.vocab, token):
            if seq.logprobs is not None:
                seq.logprobs.pop()  # the end token is not part of the answer
            return self._finish(seq, "stop")
        seq.out.append(token)
        if len(seq.out) >= seq.max_tokens:
            return self._finish(seq, "length")
        seq.pending = [token]
        if time.monotonic() - seq.shown >= self.every_s:
            seq.shown = time.monotonic()
            self.send({"id": seq.rid, "text": self._text(seq)})

    # -- endings -----------------------------------------------------------------------------------
    def _text(self, seq: Sequence) -> str:
        return self.llm.detokenize(seq.out).decode("utf-8", errors="ignore")

    def _release(self, seq: Sequence) -> None:
        if seq in self.active:
            self.active.remove(seq)
        if seq in self.waiting:
            self.waiting.remove(seq)
        if seq.slot is not None:
            seq.slot.seq, seq.slot.used = None, time.monotonic()
        low.llama_sampler_free(seq.sampler)

    def _finish(self, seq: Sequence, reason: str) -> None:
        self._release(seq)
        self.send({"id": seq.rid, "done": {
            "text": self._text(seq), "tokens_in": len(seq.prompt), "tokens_out": len(seq.out),
            "tokens_cached": seq.cached, "latency_s": round(time.monotonic() - seq.started, 4),
            "logprobs": seq.logprobs, "finish_reason": reason}})

    def _fail(self, seq: Sequence, sentence: str) -> None:
        self._release(seq)
        if seq.slot is not None:
            self._forget(seq.slot)
        self.send({"id": seq.rid, "error": sentence})

    def run(self) -> None:
        while True:
            self.step()
