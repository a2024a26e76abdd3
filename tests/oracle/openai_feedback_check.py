#!/usr/bin/env python3
"""The official `openai` client against `rlf serve --learn`
(tests/serve/test_serve_learn.cpp): a completion's id and system_fingerprint
as the client reads them, feedback on it by plain HTTP (POST /v1/feedback;
the client has no such call), the version in system_fingerprint after the
update, and the 404 and 400 a bad feedback gets."""
import json
import sys
import time
import urllib.error
import urllib.request

from openai import OpenAI


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def get(url):
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.loads(r.read())


def main():
    root, model = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=root + "/v1", api_key="unused", max_retries=0, timeout=120)
    c = client.completions.create(model=model, prompt="Once upon a time", max_tokens=20, temperature=0)
    assert c.id.startswith("cmpl-") and c.system_fingerprint == "rlf-v0", c
    chat = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=8)
    assert chat.system_fingerprint == "rlf-v0", chat

    status, err = post(root + "/v1/feedback", {"completion_id": "cmpl-unknown", "feedback": "x"})
    assert status == 404 and err["error"]["param"] == "completion_id", (status, err)
    status, err = post(root + "/v1/feedback", {"completion_id": c.id, "reward": "good"})
    assert status == 400 and err["error"]["param"] == "reward", (status, err)

    status, ack = post(root + "/v1/feedback", {"completion_id": c.id, "feedback": "Name the girl.", "reward": -1})
    assert status == 200 and ack["object"] == "feedback", (status, ack)
    status, ack = post(root + "/v1/feedback", {"completion_id": chat.id, "feedback": "Answer in a full sentence."})
    assert status == 200, (status, ack)
    deadline = time.time() + 120
    while get(root + "/v1/learn")["version"] < 2 and time.time() < deadline:
        time.sleep(0.05)
    after = client.completions.create(model=model, prompt="Once upon a time", max_tokens=20, temperature=0)
    assert after.system_fingerprint == "rlf-v2", after
    assert after.choices[0].text != c.choices[0].text, (after.choices[0].text, c.choices[0].text)
    print(json.dumps({"before": c.choices[0].text, "after": after.choices[0].text}))


if __name__ == "__main__":
    main()
