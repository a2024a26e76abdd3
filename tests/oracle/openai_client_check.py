#!/usr/bin/env python3
"""The official `openai` client against `rlf serve` (tests/serve/test_server.cpp):
models, completions, chat, streaming, n > 1, stop strings, logprobs, seeded
reproducibility, and errors as the client raises them. Asserts what the
protocol promises; prints one JSON object with what the C++ test compares
against rlf's own generation (token ids and log-probs)."""
import json
import sys

import openai
from openai import OpenAI


def main():
    base_url, model = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
    out = {}

    ids = [m.id for m in client.models.list().data]
    assert ids == [model], ids

    # Greedy completion with log-probs and the token-id extension.
    kw = dict(model=model, prompt="Once upon a time", max_tokens=30, temperature=0, logprobs=2,
              extra_body={"return_token_ids": True})
    c = client.completions.create(**kw)
    ch = c.choices[0]
    assert c.object == "text_completion" and ch.finish_reason in ("stop", "length"), c
    lp = ch.logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(ch.token_ids) == c.usage.completion_tokens
    assert all(x <= 0 for x in lp.token_logprobs)
    assert all(len(t) == 2 for t in lp.top_logprobs)
    assert c.usage.prompt_tokens == len(ch.prompt_token_ids)
    out["greedy"] = {"text": ch.text, "prompt_token_ids": ch.prompt_token_ids, "token_ids": ch.token_ids,
                     "logprobs": lp.token_logprobs}
    again = client.completions.create(**kw)
    assert again.choices[0].text == ch.text, "greedy is not reproducible"

    # Seeded sampling, n = 3: reproducible, and streamed = not streamed.
    kw = dict(model=model, prompt="The little dog", max_tokens=40, temperature=1.0, seed=42, n=3,
              extra_body={"return_token_ids": True})
    s1 = client.completions.create(**kw)
    s2 = client.completions.create(**kw)
    assert [x.text for x in s1.choices] == [x.text for x in s2.choices], "a seeded request is not reproducible"
    assert sorted(x.index for x in s1.choices) == [0, 1, 2]
    assert len({x.text for x in s1.choices}) > 1, "three samples at temperature 1 were identical"
    out["seeded_n3"] = [x.token_ids for x in sorted(s1.choices, key=lambda x: x.index)]
    texts, tokens, finish = ["", "", ""], [[], [], []], [None] * 3
    for chunk in client.completions.create(stream=True, **kw):
        for x in chunk.choices:
            texts[x.index] += x.text
            tokens[x.index] += x.token_ids or []
            finish[x.index] = x.finish_reason or finish[x.index]
    assert texts == [x.text for x in sorted(s1.choices, key=lambda x: x.index)], (texts, s1)
    assert tokens == out["seeded_n3"]
    assert all(f in ("stop", "length") for f in finish), finish

    # Stop strings end the text before the stop.
    st = client.completions.create(model=model, prompt="Once upon a time", max_tokens=60, temperature=0, stop=["Lily"])
    assert st.choices[0].finish_reason == "stop" and "Lily" not in st.choices[0].text, st
    out["stop_text"] = st.choices[0].text

    # Chat, with log-probs; then streamed with usage.
    msgs = [{"role": "system", "content": "You tell stories."}, {"role": "user", "content": "Tell me about a cat."}]
    cc = client.chat.completions.create(model=model, messages=msgs, max_tokens=30, temperature=0.7, seed=3,
                                        logprobs=True, top_logprobs=2)
    m = cc.choices[0]
    assert cc.object == "chat.completion" and m.message.role == "assistant" and isinstance(m.message.content, str)
    assert len(m.logprobs.content) == cc.usage.completion_tokens
    assert all(len(t.top_logprobs) == 2 for t in m.logprobs.content)
    content, usage, roles = "", None, 0
    for chunk in client.chat.completions.create(model=model, messages=msgs, max_tokens=30, temperature=0.7, seed=3,
                                                stream=True, stream_options={"include_usage": True}):
        if chunk.usage is not None:
            usage = chunk.usage
        for x in chunk.choices:
            content += x.delta.content or ""
            roles += x.delta.role == "assistant"
    assert content == m.message.content, (content, m.message.content)
    assert usage is not None and usage.completion_tokens == cc.usage.completion_tokens, usage
    assert roles == 1
    out["chat"] = m.message.content

    # Errors as the client sees them.
    try:
        client.completions.create(model=model, prompt="Once", max_tokens=100000)
        raise AssertionError("max_tokens past the context was accepted")
    except openai.BadRequestError as e:
        assert e.code == "context_length_exceeded", e
    try:
        client.completions.create(model="no-such-model", prompt="Once", max_tokens=5)
        raise AssertionError("an unknown model was accepted")
    except openai.NotFoundError as e:
        assert e.code == "model_not_found", e
    try:
        client.completions.create(model=model, prompt="Once", max_tokens=5, extra_body={"no_such_field": 1})
        raise AssertionError("an unknown field was accepted")
    except openai.BadRequestError as e:
        assert "no_such_field" in str(e), e

    print(json.dumps(out))


if __name__ == "__main__":
    main()
