"""The browsable API docs (`/api/docs/`, Swagger UI from the sidecar package) in Chromium,
against the server `make run` starts: the OpenAPI 3.1 document's `webhooks` section is shown,
one webhook per event type (SPEC V5), each with its signature headers, its payload (the event
and that type's own `data`) and the verification example."""

from playwright.sync_api import expect

EVENT_TYPES = [
    "memory.created",
    "memory.changed",
    "memory.forgotten",
    "tombstone.deleted",
    "settings.changed",
    "policy.changed",
    "conversation.deleted",
    "user.deleted",
]


def test_it_shows_every_webhook_with_its_headers_payload_and_verification(desktop, readme_server):
    page = desktop
    page.goto(readme_server.url + "/api/docs/")
    webhooks = page.locator("section.webhooks, .webhooks").first
    expect(webhooks.get_by_role("heading", name="Webhooks")).to_be_visible(timeout=30_000)
    paths = webhooks.locator(".opblock-summary-path")
    expect(paths).to_have_text(EVENT_TYPES)

    forgotten = webhooks.locator(".opblock").filter(has_text="memory.forgotten")
    forgotten.locator(".opblock-summary").click()
    body = forgotten.locator(".opblock-body")
    expect(body).to_contain_text("A memory was forgotten: the tombstone")
    for header in ("webhook-id", "webhook-timestamp", "webhook-signature"):
        expect(body.locator("tr[data-param-name]", has_text=header)).to_contain_text("(header)")
    expect(body.locator("pre").filter(has_text="def verify(secret")).to_contain_text(
        "hmac.compare_digest(expected, given)"
    )
    # The payload: the envelope with this type, and memory.forgotten's own data.
    example = body.locator(".body-param__example, .example").first
    expect(example).to_contain_text('"type": "memory.forgotten"')
    expect(example).to_contain_text('"withheld_memories"')
    expect(example).to_contain_text('"forgotten_by"')


def test_it_links_the_api_docs_to_the_guide_to_connect_an_assistant(page, readme_server, look):
    """M2, M3: the API's documentation links to the README's "Connect an assistant", served as
    a page of its own that needs no account and fits every width."""
    page.goto(readme_server.url + "/api/docs/")
    link = page.locator(".info a", has_text="Connect an assistant")
    expect(link).to_have_attribute("href", "/docs/connect-an-assistant", timeout=30_000)
    with page.context.expect_page() as opened:  # Swagger UI opens description links apart
        link.click()
    guide = opened.value
    guide.wait_for_load_state("load")
    assert guide.url == readme_server.url + "/docs/connect-an-assistant"
    expect(guide.get_by_role("heading", level=1)).to_have_text("Connect an assistant")
    expect(guide.locator("pre").filter(has_text='"mcpServers"').first).to_contain_text("/mcp")
    look(guide, "guide-connect-an-assistant")
