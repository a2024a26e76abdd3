#!/usr/bin/env python3
"""A black-box agent trained through rlf's agent proxy ([env] type = "agent").

rlf runs this program once per episode. The policy is an OpenAI-compatible
endpoint (OPENAI_BASE_URL, OPENAI_API_KEY in the environment — the official
`openai` client reads them as they are; this file uses only the standard
library so it starts fast). The task arrives as one JSON line on stdin. The
agent asks for a story, then asks it to go on, and reports how many of the
task's keywords the two replies used: {"reward": ...} on stdout, then exits.
rlf records the exact tokens of both replies and trains on them."""
import json
import os
import re
import sys
import urllib.request


def chat(messages):
    req = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "policy", "messages": messages}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)["choices"][0]["message"]["content"]


def main():
    task = json.loads(sys.stdin.readline())["task"]
    keywords = task["record"].get("keywords", [])
    messages = [{"role": "user", "content": task["prompt"]}]
    first = chat(messages)
    messages += [{"role": "assistant", "content": first}, {"role": "user", "content": "Go on."}]
    second = chat(messages)
    words = set(re.findall(r"[a-z]+", (first + " " + second).lower()))
    used = sum(k.lower() in words for k in keywords)
    print(json.dumps({"reward": used / max(len(keywords), 1), "correct": used == len(keywords)}), flush=True)


if __name__ == "__main__":
    main()
