"""Byte-level tokenizer: token id = one UTF-8 byte (vocab 256). Nothing to download, any unicode works.

Prompt policy (what the app accepts), each violation a ValueError naming the constraint:
  * not empty (after stripping whitespace);
  * at most `MAX_PROMPT_CHARS` characters and `MAX_PROMPT_BYTES` UTF-8 bytes (an emoji is 4 bytes = 4 tokens);
  * no NUL and no other control characters (Unicode category Cc) except tab, newline and carriage return;
  * no lone surrogates (cannot be encoded as UTF-8).
"""
from __future__ import annotations

import unicodedata

VOCAB_SIZE = 256
MAX_PROMPT_CHARS = 2000
MAX_PROMPT_BYTES = 4000
ALLOWED_CONTROLS = {"\t", "\n", "\r"}


def validate_prompt(text: str, max_chars: int = MAX_PROMPT_CHARS, max_bytes: int = MAX_PROMPT_BYTES) -> bytes:
    """The prompt's UTF-8 bytes, or a ValueError that says which rule it broke."""
    if not isinstance(text, str):
        raise ValueError(f"prompt must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("prompt is empty: type at least one non-space character")
    if len(text) > max_chars:
        raise ValueError(f"prompt too long: {len(text):,} characters, the limit is {max_chars:,}")
    for pos, ch in enumerate(text):
        if ch == "\x00":
            raise ValueError(f"prompt contains a NUL character (U+0000) at position {pos}; remove it")
        if unicodedata.category(ch) == "Cc" and ch not in ALLOWED_CONTROLS:
            raise ValueError(
                f"prompt contains the control character U+{ord(ch):04X} at position {pos}; "
                "only tab, newline and carriage return are allowed"
            )
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"prompt contains a character UTF-8 cannot encode (a lone surrogate) at position {e.start}") from None
    if len(data) > max_bytes:
        raise ValueError(f"prompt too long: {len(data):,} UTF-8 bytes (= tokens), the limit is {max_bytes:,}")
    return data


def encode(text: str, max_chars: int = MAX_PROMPT_CHARS, max_bytes: int = MAX_PROMPT_BYTES) -> list[int]:
    """Validated prompt -> token ids (one per UTF-8 byte)."""
    return list(validate_prompt(text, max_chars, max_bytes))


def decode(ids) -> str:
    """Token ids -> text; a partial multi-byte character becomes U+FFFD."""
    ids = [int(i) for i in ids]
    if any(i < 0 or i >= VOCAB_SIZE for i in ids):
        raise ValueError(f"token ids must be in [0, {VOCAB_SIZE}), got {min(ids)}..{max(ids)}")
    return bytes(ids).decode("utf-8", errors="replace")


# How a byte token is shown on every page (axis labels, tables, metrics): one display, so a newline reads the
# same on the forward-pass, MoE and KDA pages.
_ESCAPES = {9: "\\t", 10: "\\n", 13: "\\r", 32: "␣"}


def token_label(i: int) -> str:
    """A short readable label for one byte token: printable ASCII as itself, space as ␣, tab / newline /
    carriage return as the escapes \\t \\n \\r, any other byte (control or part of a multi-byte UTF-8
    character) as its hex value, e.g. xe6."""
    i = int(i)
    if not 0 <= i < VOCAB_SIZE:
        raise ValueError(f"a byte token is in [0, {VOCAB_SIZE}), got {i}")
    if i in _ESCAPES:
        return _ESCAPES[i]
    if 33 <= i < 127:
        return chr(i)
    return f"x{i:02x}"
