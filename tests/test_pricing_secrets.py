import logging

from phr.core.secrets import RedactingFilter, redact
from phr.llm.pricing import PriceTable


def test_price_lookup_and_cost(tmp_path, monkeypatch):
    t = PriceTable.load()
    assert t.cost("openai:gpt-4o", 1_000_000, 1_000_000) == 12.5
    assert t.cost("anthropic:claude-3-5-sonnet-latest", 2_000_000, 0) == 6.0
    assert t.cost("local:smollm2", 10**9, 10**9) == 0.0
    assert t.cost("openai:unknown-model", 1, 1) is None
    user = tmp_path / "prices.toml"
    user.write_text('[prices]\n"openai:gpt-4o" = [1.0, 2.0]\n"openai:my-*" = [3.0, 3.0]\n')
    monkeypatch.setenv("PHR_PRICES", str(user))
    t2 = PriceTable.load()
    assert t2.cost("openai:gpt-4o", 1_000_000, 1_000_000) == 3.0
    assert t2.cost("openai:my-model", 1_000_000, 0) == 3.0


def test_redaction(monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-0123456789abcdef")
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnop")
    assert redact("key sk-live-0123456789abcdef and hf_abcdefghijklmnop") == "key *** and ***"
    logger = logging.getLogger("phr.test.redact")
    logger.addFilter(RedactingFilter())
    with caplog.at_level(logging.INFO):
        logger.info("calling with %s", "sk-live-0123456789abcdef")
    assert "sk-live" not in caplog.text and "***" in caplog.text
