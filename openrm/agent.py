"""A search-agent policy: it may search with the judge's tools and call syntax (`<search>WIKI("...")</search>`,
`<information>` from the environment, masked out of the loss) before it writes `<answer>...</answer>`. Training
(train/grpo_policy.py with `--policy_retrievers`) and evaluation (`sample_agent_answers`) run the same
`openrm.rollout.rollout`; the match judge is shown only the final answer, never the evidence the agent read.

    messages = agent_messages("Velaen: when were they born?")
    final_answer('<search>WIKI("Velaen born")</search>\\n<information>...</information>\\n<answer>1750</answer>')
    # -> "1750"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from openrm import protocol

_INFORMATION_CLOSE = protocol.close_tag(protocol.INFORMATION)


def system_prompt(tools: Sequence[protocol.ToolSpec] = protocol.DEFAULT_TOOLS) -> str:
    """The agent's instructions: the tools, the call syntax, the answer tags."""
    listed = "; ".join(f'{protocol.open_tag(protocol.SEARCH)}{protocol.format_call(t.name, "words")}'
                       f'{protocol.close_tag(protocol.SEARCH)} searches {t.description}' for t in tools)
    return (f"Answer the question. You may search first: {listed}. The results come back in "
            f"{protocol.open_tag(protocol.INFORMATION)}. Then write the answer alone between "
            f"{protocol.open_tag(protocol.ANSWER)} and {protocol.close_tag(protocol.ANSWER)}.")


def agent_messages(question: str, tools: Sequence[protocol.ToolSpec] = protocol.DEFAULT_TOOLS) -> list[dict]:
    return [{"role": "system", "content": system_prompt(tools)}, {"role": "user", "content": question}]


def final_answer(text: str) -> str:
    """What an agent's trajectory answers: the inside of its last `<answer>` block (to its end when unclosed);
    without one, its text after the last `</information>` (the whole text when it never searched) with our tags
    removed: an agent that skipped the answer tags is judged on what it wrote, never on the evidence."""
    opening, closing = protocol.open_tag(protocol.ANSWER), protocol.close_tag(protocol.ANSWER)
    end = text.rfind(closing)
    start = text.rfind(opening, 0, end if end >= 0 else len(text))
    if start >= 0:
        return text[start + len(opening): end if end > start else len(text)].strip()
    after = text.rfind(_INFORMATION_CLOSE)
    tail = text[after + len(_INFORMATION_CLOSE):] if after >= 0 else text
    return protocol.TAG_PATTERN.sub(" ", tail).strip()


def sample_agent_answers(model_dir: str | Path, prompts: Sequence[Any], samples: int, temperature: float,
                         locations: Mapping[str, Any], tools: Sequence[protocol.ToolSpec] = protocol.DEFAULT_TOOLS,
                         max_new_tokens: int = 48, max_completion_tokens: int = 256, max_tool_calls: int = 2,
                         seed: int = 0, batch_size: int = 64) -> list[list[dict[str, Any]]]:
    """`samples` trajectories per prompt from the checkpoint at `model_dir` with live search (CPU), each as
    {"text", "answer", "searches", "tokens"} (`tokens`: the agent's own, evidence excluded). Seeded."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openrm.generation import HFGenerator, SamplingParams
    from openrm.rollout import RolloutConfig, prompt_token_ids, rollout
    from openrm.tools import ToolBox

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    toolbox = ToolBox.from_locations(locations, tools)
    cfg = RolloutConfig(max_tool_calls=max_tool_calls, max_turns=max_tool_calls + 2,
                        max_completion_tokens=max_completion_tokens,
                        sampling=SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature))
    ids = [prompt_token_ids(tokenizer, p) for p in prompts for _ in range(samples)]
    torch.manual_seed(seed)
    out = []
    for start in range(0, len(ids), batch_size):
        for t in rollout(ids[start:start + batch_size], HFGenerator(model, tokenizer, batch_size=batch_size),
                         toolbox, tokenizer, cfg):
            text = t.text(tokenizer)
            out.append({"text": text, "answer": final_answer(text), "searches": t.n_calls,
                        "tokens": sum(t.env_mask)})
    return [out[i * samples:(i + 1) * samples] for i in range(len(prompts))]
