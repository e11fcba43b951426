"""Worker process for the crash and concurrency tests: asks N prompts through the OpenAI adapter."""

import sys

from phr.llm import LLM, ChatRequest, GenerationParams, as_messages

start, stop, concurrency = (int(x) for x in sys.argv[1:4])
llm = LLM("openai:gpt-4o", concurrency=concurrency, progress=False, backoff_initial=0.01, backoff_max=0.05)
reqs = [ChatRequest(as_messages(f"prompt {i}"), GenerationParams(temperature=0.7), n=1) for i in range(start, stop)]
res = llm.generate(reqs)
assert all(r.ok for r in res), [r.failures for r in res if not r.ok]
print(llm.last_summary.calls, llm.last_summary.cache_hits)
