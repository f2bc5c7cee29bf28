"""experiments/tool_choice_log.py: a GRPO trajectory log summarised per window by gold tool and first tool called."""

import json

import pytest


def test_tool_choice_log_splits_rewards_by_gold_and_first_called_tool():
    from experiments.tool_choice_log import summarise

    def line(step, gold, completion, total, em):
        return json.dumps({"step": step, "gold_tool": gold, "completion": completion, "total": total, "em": em})

    lines = [line(0, "WIKI", '<think>x</think><search>WIKI("a b")</search>', 1.5, 1.0),
             line(1, "WIKI", '<search>ARXIV("a b")</search><search>WIKI("a b")</search>', 0.0, 0.0),
             line(1, "WIKI", '<search>WIKI("a")</search>', 0.5, 0.0), "",
             line(2, "ARXIV", "<answer>A</answer>", 1.0, 1.0)]
    rows = summarise(lines, window=2)
    assert rows == [{"step": 0, "WIKI->ARXIV": (1, 0.0, 0.0), "WIKI->WIKI": (2, 1.0, 0.5)},
                    {"step": 2, "ARXIV->none": (1, 1.0, 1.0)}]
    with pytest.raises(ValueError, match="line 2: not a trajectory-log record"):
        summarise([lines[0], '{"step": 3}'], window=1)
