#!/usr/bin/env python3
"""The official `openai` client against `rlf serve` with tools
(tests/serve/test_serve_tools.cpp, whose tiny model was trained to answer
"What is 6*7?" with a calculator call, the tool result with "The answer is 42."
and "Break it" with a malformed call): tool_calls in the reply, the same when
streamed, the tool result sent back as a tool message, a malformed call
returned as content, and tool_choice "required" refused."""
import json
import sys

import openai
from openai import OpenAI

TOOLS = [{"type": "function", "function": {"name": "calculator", "description": "Evaluate arithmetic.",
          "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
                         "required": ["expression"]}}}]


def main():
    base_url, model = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
    ask = [{"role": "user", "content": "What is 6*7?"}]

    r = client.chat.completions.create(model=model, messages=ask, tools=TOOLS, temperature=0)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls", r
    assert ch.message.content is None, r
    calls = ch.message.tool_calls
    assert len(calls) == 1 and calls[0].type == "function" and calls[0].function.name == "calculator", r
    assert json.loads(calls[0].function.arguments) == {"expression": "6*7"}, calls

    # Streamed: the deltas assemble into the same call, and no content leaks.
    content, streamed, finish = "", {}, None
    for chunk in client.chat.completions.create(model=model, messages=ask, tools=TOOLS, temperature=0, stream=True):
        d = chunk.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            entry = streamed.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            entry["id"] = tc.id or entry["id"]
            entry["name"] += (tc.function.name or "") if tc.function else ""
            entry["arguments"] += (tc.function.arguments or "") if tc.function else ""
        finish = chunk.choices[0].finish_reason or finish
    assert content == "" and finish == "tool_calls", (content, finish)
    assert list(streamed) == [0] and streamed[0]["name"] == "calculator", streamed
    assert json.loads(streamed[0]["arguments"]) == {"expression": "6*7"}, streamed

    # The result goes back in the tool role; the model answers.
    follow = ask + [ch.message.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": calls[0].id, "content": "42"}]
    done = client.chat.completions.create(model=model, messages=follow, tools=TOOLS, temperature=0)
    assert done.choices[0].message.content == "The answer is 42.", done
    assert done.choices[0].finish_reason == "stop" and not done.choices[0].message.tool_calls, done

    # A malformed call is content, never an error.
    bad = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Break it"}], tools=TOOLS,
                                         temperature=0)
    assert bad.choices[0].message.content.startswith("<tool_call>") and not bad.choices[0].message.tool_calls, bad

    try:
        client.chat.completions.create(model=model, messages=ask, tools=TOOLS, tool_choice="required")
        raise AssertionError("tool_choice required was accepted")
    except openai.BadRequestError as e:
        assert e.status_code == 400 and "tool_choice" in str(e), e
    print("tool calls round-trip: plain, streamed, tool result, malformed, required refused")


if __name__ == "__main__":
    main()
