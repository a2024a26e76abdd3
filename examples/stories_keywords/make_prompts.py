#!/usr/bin/env python3
"""Writes the prompts of the keyword example: TinyStories-style openings, each
asking for two words, as JSONL records {"prompt", "keywords"} (deterministic).

  python3 examples/stories_keywords/make_prompts.py OUT.jsonl
"""
import itertools
import json
import random
import sys

OPENINGS = [
    "Once upon a time, there was a little girl named Lily.",
    "Once upon a time, there was a boy named Tom.",
    "One day, a little cat went for a walk.",
    "Sara had a big red ball.",
    "There was a small bird who lived in a tree.",
    "Ben and his mom went to the store.",
    "Once upon a time, there was a big bear.",
    "Mia liked to play in the garden.",
    "The sun was shining and the sky was blue.",
    "Tim found a shiny rock on the ground.",
    "Lucy wanted to bake a cake.",
    "A little fish swam in the sea.",
]
WORDS = ["dog", "ball", "tree", "park", "cake", "boat", "hat", "sun", "box", "car", "fish", "toy",
         "bird", "book", "moon", "apple", "cat", "girl", "boy", "mom", "happy", "big", "red", "friend"]


def main():
    rng = random.Random(0)
    pairs = list(itertools.combinations(WORDS, 2))
    rng.shuffle(pairs)
    with open(sys.argv[1], "w") as f:
        for i, (a, b) in enumerate(pairs[:240]):
            opening = OPENINGS[i % len(OPENINGS)]
            f.write(json.dumps({"prompt": f"A story with the words {a} and {b}. {opening}", "keywords": [a, b]}) + "\n")


if __name__ == "__main__":
    main()
