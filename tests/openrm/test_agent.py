"""The search agent's protocol: what its trajectory answers (`final_answer`), its prompt, and sampling with live
search on a real index."""

from __future__ import annotations

import pytest

from openrm.agent import agent_messages, final_answer, system_prompt
from openrm.protocol import DEFAULT_TOOLS, ToolSpec


@pytest.mark.parametrize("text, answer", [
    ('<search>WIKI("Velaen born")</search>\n<information>\nDoc 1 (Title: Velaen) Velaen was born in 1750.\n'
     '</information>\n<answer>1750</answer>', "1750"),
    ("<answer> Maren </answer>", "Maren"),  # no search: the answer alone, stripped
    ("<answer>1750", "1750"),  # unclosed (the budget ran out): to the end
    ("<answer>1749</answer> then <answer>1750</answer>", "1750"),  # the last block counts
    ("\n<information>\nDoc 1 (Title: V) born in 1750.\n</information>\nIt is 1750.", "It is 1750."),  # no tags
    ("It is 1750.", "It is 1750."),
    ("<search>WIKIVelaen</answer>", "WIKIVelaen"),  # malformed: the agent's words, without our tags
    ("", ""),
])
def test_final_answer_is_the_last_answer_block_or_the_text_after_the_evidence(text, answer):
    assert final_answer(text) == answer


def test_the_agent_prompt_lists_each_tool_with_its_call_syntax():
    tools = (*DEFAULT_TOOLS, ToolSpec("PUBMED", "pubmed", "medical abstracts"))
    prompt = system_prompt(tools)
    for tool in tools:
        assert f'<search>{tool.name}("words")</search> searches {tool.description}' in prompt
    messages = agent_messages("Velaen: when were they born?", tools)
    assert [m["role"] for m in messages] == ["system", "user"] and messages[1]["content"].startswith("Velaen")
