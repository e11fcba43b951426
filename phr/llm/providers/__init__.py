"""Provider adapters: one module per backend, imported lazily by phr.llm.spec."""
