"""Renders every (chat template x conversation) with transformers' own chat
template code, in one process, for rlf's byte-exact comparison
(tests/tokenizer/test_jinja_oracle.cpp).

usage: python chat_template_oracle.py CASES.json OUT.json

CASES.json: {"date": "YYYY-MM-DD", "templates": {name: path}, "conversations": {name: path}}
A template path is a .jinja file or a tokenizer_config.json (its chat_template,
and bos/eos/unk/pad tokens as transformers' special_tokens_map passes them).
OUT.json: {"version": transformers.__version__, "results": {"template|conversation":
{"text": ..., "generation": [[begin, end] in UTF-8 bytes]} or {"error": type, "message": ...}}}

transformers 5.x: apply_chat_template's path (_normalize_chat_messages, then
render_jinja_template with return_assistant_tokens_mask). 4.x: the compiled
template and _render_with_assistant_indices, with the arguments apply_chat_template
passes. strftime_now is pinned to the given date (midnight), as `rlf chat-template
render --date` pins it.
"""
import datetime
import json
import sys

import transformers
from transformers.utils import chat_template_utils as ctu


def load_template(path):
    if path.endswith(".json"):
        cfg = json.load(open(path, encoding="utf-8"))
        tokens = {}
        for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
            v = cfg.get(key)
            if isinstance(v, dict):
                v = v.get("content")
            if isinstance(v, str):
                tokens[key] = v
        ct = cfg["chat_template"]
        named = {t["name"]: t["template"] for t in ct} if isinstance(ct, list) else {"default": ct}
        return named, tokens
    return {"default": open(path, encoding="utf-8").read()}, {}


def pick(named, tools):
    if tools is not None and "tool_use" in named:
        return named["tool_use"]
    return named["default"]


def byte_span(text, begin, end):
    return [len(text[:begin].encode("utf-8")), len(text[:end].encode("utf-8"))]


def render(source, conv, tokens, fixed):
    compiled = ctu._compile_jinja_template(source)
    compiled.environment.globals["strftime_now"] = lambda fmt: fixed.strftime(fmt)
    kwargs = dict(tokens)
    for key in ("bos_token", "eos_token"):
        if key in conv:
            kwargs[key] = conv[key]
    kwargs.update(conv.get("kwargs", {}))
    messages = conv["messages"]
    tools = conv.get("tools")
    documents = conv.get("documents")
    gen = conv.get("add_generation_prompt", False)
    if int(transformers.__version__.split(".")[0]) >= 5:
        messages = ctu._normalize_chat_messages(messages)
        rendered, spans = ctu.render_jinja_template(
            conversations=[messages], tools=tools, documents=documents, chat_template=source,
            return_assistant_tokens_mask=True, add_generation_prompt=gen, **kwargs)
        return rendered[0], spans[0]
    return ctu._render_with_assistant_indices(compiled, messages, tools, documents, gen, **kwargs)


def main():
    cases = json.load(open(sys.argv[1], encoding="utf-8"))
    d = datetime.date.fromisoformat(cases["date"])
    fixed = datetime.datetime(d.year, d.month, d.day)
    convs = {n: json.load(open(p, encoding="utf-8")) for n, p in cases["conversations"].items()}
    results = {}
    for tname, tpath in cases["templates"].items():
        named, tokens = load_template(tpath)
        for cname, conv in convs.items():
            key = tname + "|" + cname
            try:
                text, spans = render(pick(named, conv.get("tools")), conv, tokens, fixed)
                results[key] = {"text": text, "generation": [byte_span(text, b, e) for b, e in spans]}
            except Exception as e:  # the template's own raise_exception, or any failure
                results[key] = {"error": type(e).__name__, "message": str(e)}
    json.dump({"version": transformers.__version__, "results": results}, open(sys.argv[2], "w", encoding="utf-8"),
              ensure_ascii=False)


if __name__ == "__main__":
    main()
