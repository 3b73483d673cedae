"""Error pages as a user meets them, against the server `make run` starts,
at 1280 and 390 px: a 404 and a refused form (403) answer the site's styled pages with a way
back, pass axe-core and fit the window; so does the 500 page, rendered by the same settings
and static files (a healthy server has no page that fails, so the test renders it through
`manage.py` and shows it in the browser at the server's address)."""

import re

from playwright.sync_api import expect


def test_it_styles_a_missing_page_with_a_way_back(page, readme_server, look):
    response = page.goto(readme_server.url + "/no-such-page/")
    assert response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("This page does not exist")
    nav = page.get_by_role("navigation", name="Where to go from here")
    expect(nav.get_by_role("link", name="Sign in")).to_be_visible()
    look(page, "error-404")
    nav.get_by_role("link", name="Sign in").click()
    expect(page).to_have_url(readme_server.url + "/login/")


def test_it_gives_a_signed_in_user_the_404_with_the_sites_navigation(
    page, readme_server, person, sign_in, look
):
    sign_in(page, person)
    response = page.goto(
        readme_server.url + "/memories/00000000-0000-0000-0000-000000000000/history"
    )
    assert response.status == 404
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    look(page, "error-404-signed-in")


def test_it_answers_an_untrusted_form_with_a_styled_403_and_changes_nothing(
    page, readme_server, person, sign_in, look
):
    sign_in(page, person)
    page.goto(readme_server.url + "/boundaries/")
    page.context.clear_cookies(name="csrftoken")
    images = page.locator("#card-everywhere-media-image")
    images.locator("summary").click()
    images.get_by_label("Choice for images").select_option(label="Never")
    images.get_by_role("button", name=re.compile("^Save")).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("That form could not be sent")
    look(page, "error-403-form")
    decided = readme_server.api(
        "POST",
        "/policy/decide",
        {
            "context": {"user": person.username},
            "capability": "media.image",
            "requested_by": "assistant",
        },
    )
    assert decided["effect"] == "ask"


def test_it_styles_the_500_page_and_shows_the_request_id(page, readme_server, look):
    html = readme_server.manage(
        "shell",
        "-v",
        "0",
        "-c",
        (
            "import sys\n"
            "from django.test import RequestFactory\n"
            "from config.views import server_error\n"
            "request = RequestFactory().get('/memories/')\n"
            "request.request_id = '7d9c2a4e-1b3f-4c5d-8e6f-0a1b2c3d4e5f'\n"
            "sys.stdout.write(server_error(request).content.decode())\n"
        ),
    )
    assert re.search(r'href="/static/css/pages\.[0-9a-f]{12}\.css"', html), (
        "the 500 page links the hashed stylesheet"
    )
    page.goto(readme_server.url + "/login/")
    page.set_content(html)
    expect(page.get_by_role("heading", level=1)).to_have_text("Something went wrong on our side")
    expect(page.locator(".request-id")).to_have_text("7d9c2a4e-1b3f-4c5d-8e6f-0a1b2c3d4e5f")
    look(page, "error-500")


def test_it_styles_the_page_for_too_many_wrong_passwords(page, readme_server, look, width):
    """django-axes locks a username and address after five failures: the page that says so is
    one of ours too."""
    username = f"nobody-{width}"
    page.goto(readme_server.url + "/login/")
    for _ in range(5):
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill("not the password")
        page.get_by_role("button", name="Sign in").click()
        if page.get_by_role("heading", name="Too many sign-in attempts").count():
            break
    expect(page.get_by_role("heading", level=1)).to_have_text("Too many sign-in attempts")
    look(page, "error-locked-out")
