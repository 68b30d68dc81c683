"""The panel's variant select and context meter in a real browser (issue 33 items 4–5): a model with variants shows a
small select beside the model picker; the chosen variant reaches the model's request; the usage line gets a context
meter with the breakdown and the auto-compact threshold on hover; a model without variants shows no select."""

from __future__ import annotations

import pytest

from eca_notebook.testing.llm_server import Reply, Text, Usage

from ._lab import open_panel, screenshot
from .test_panel import send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CLAUDE = "anthropic/claude-sonnet-4-5"


def test_variant_select_and_context_meter(page, lab, llm):
    open_panel(page, lab, workspace="variants-meter")
    page.locator(".eca-new-chat").click()
    variant = page.locator(".eca-VariantPicker")
    assert variant.count() == 0, "gpt-4.1 has no variants"

    page.locator(".eca-ModelPicker").select_option(CLAUDE)
    variant.wait_for()  # the server's config/updated named the model's variants
    options = [o.strip() for o in variant.locator("option").all_inner_texts()]
    assert options == ["-", "high", "low", "medium"]
    assert variant.input_value() == ""
    variant.select_option("high")

    llm.clear()
    llm.enqueue(Reply([Text("Thought hard."), Usage(1200, 5)]))
    send(page, "think about it")
    page.get_by_text("Thought hard.").wait_for()
    body = wait_until(lambda: next((r.body for r in llm.requests if r.path == "/v1/messages"), None),
                      message="the Anthropic request")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 24576}

    meter = page.locator(".eca-Usage .eca-ContextMeter")
    meter.wait_for()
    title = meter.get_attribute("title") or ""
    assert "System prompt:" in title and "Free:" in title
    assert "Compacts automatically at 75% of the context window" in title
    assert meter.get_attribute("aria-valuenow") == "1200"
    assert meter.locator(".eca-ContextMeter-mark").count() == 1
    screenshot(page, "variants-meter-01-high")

    page.locator(".eca-ModelPicker").select_option("openai/gpt-4.1")
    variant.wait_for(state="detached")  # no variants: no select
