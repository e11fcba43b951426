"""Gold and wrong responses for PHRBench instances (what a perfect and a useless model would answer)."""

from __future__ import annotations


def gold(inst, rows):
    if inst.task_type == "code":
        return "```python\n" + rows[inst.id]["reference_solution"] + "```"
    if inst.task_type == "multiple_choice":
        return f"Let me think.\nAnswer: {inst.answer_index + 1}"
    return f"Final answer: {inst.answer}"


def wrong(inst):
    if inst.task_type == "code":
        return f"```python\ndef {inst.entry_point}(*args):\n    return None\n```"
    if inst.task_type == "multiple_choice":
        return f"Answer: {(inst.answer_index + 1) % len(inst.options) + 1}"
    return "Final answer: I do not know"
