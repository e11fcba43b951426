"""Test doubles and helpers shared by the test modules: local servers speaking the OpenAI / Anthropic / Gemini
and Hugging Face Hub protocols, the CLI runner, gold answers, the headless browser."""
