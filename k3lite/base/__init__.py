"""The runtime base, below every other layer: guards (the heavy-work slot, thread caps, time bounds), rng (seeded
builds under one lock), tokenizer (bytes, the prompt policy), units (the one byte and duration formatter), sources
(who states what). Imports nothing from k3lite.
"""
