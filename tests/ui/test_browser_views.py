"""The inspector's user views in a real headless Chromium: conversation, diff, task badges, paging.

The threads are real LangGraph runs through the saver (tests/ui/agent_threads.py):
a tool-calling chat whose refund approval was interrupted and answered, the
same chat left waiting, a fan-out of 200 ``Send``s, and a chat carrying HTML.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.ui import agent_threads as at
from tests.ui.conftest import XSS_IMG, XSS_SCRIPT, Store, screenshot, sign_in

#: The chat's messages, in order, as the conversation shows their roles (the interrupt sits before the last).
CHAT_ROLES = [
    *("system", "human", "ai", "tool", "tool", "ai"),  # a question, two tool calls, the answer
    *("human", "ai", "tool", "tool", "ai", "interrupt", "ai"),  # again, then the refund approval
]


@pytest.fixture(autouse=True, scope="module")
def _signed_in(browser: Any, inspector: str) -> None:
    sign_in(browser, inspector)


def url(base: str, path: str, **params: Any) -> str:
    return f"{base}{path}?{urllib.parse.urlencode(params)}" if params else f"{base}{path}"


def no_xss(driver: Any) -> None:
    assert driver.execute_script("return typeof window.__xss") == "undefined"


def _ids(store: Store, thread: str) -> list[str]:
    """Checkpoint ids, newest first."""
    return [
        t.config["configurable"]["checkpoint_id"]
        for t in store.saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    ]


def _lengths(store: Store, thread: str) -> list[int]:
    return [
        len(t.checkpoint["channel_values"].get("messages", []))
        for t in store.saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    ]


def _roles(root: Any) -> list[str]:
    """The roles of the conversation under ``root`` (a driver or an element), interrupts as ``interrupt``."""
    items = root.find_elements(By.CSS_SELECTOR, "ol.conversation > li")
    return [
        "interrupt" if "event" in li.get_attribute("class") else li.get_attribute("data-role") for li in items
    ]


def test_conversation_of_a_tool_calling_chat(browser: Any, inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["chat"]
    browser.get(url(inspector, "/thread", id=tid))
    browser.find_element(By.CSS_SELECTOR, "a.conversation-link").click()
    WebDriverWait(browser, 10).until(ec.url_contains("/conversation"))
    assert browser.title == f"Conversation {tid} · langgraph-dynamodb"
    assert _roles(browser) == CHAT_ROLES
    msgs = browser.find_elements(By.CSS_SELECTOR, "ol.conversation > li")
    assert at.SYSTEM in msgs[0].text and at.QUESTION in msgs[1].text and at.QUESTION_2 in msgs[6].text
    # The AI's tool calls: name and arguments, each linked to the tool result that answered it.
    calls = msgs[2].find_elements(By.CSS_SELECTOR, "li.call")
    assert [c.find_element(By.TAG_NAME, "code").text for c in calls] == [
        'lookup_order(order_id="A-17")',
        'track_parcel(carrier="DHL", code="JD0142")',
    ]
    calls[1].find_element(By.CSS_SELECTOR, "a.result").click()
    WebDriverWait(browser, 10).until(lambda d: urllib.parse.urlsplit(d.current_url).fragment)
    target = browser.find_element(By.CSS_SELECTOR, "li.msg:target")
    assert target.get_attribute("data-role") == "tool"
    assert "track_parcel" in target.text and "DHL JD0142: out for delivery" in target.text
    # The interrupt, where it stopped the chat, with the answer that resumed it; then the reply.
    event = msgs[11]
    assert "INTERRUPT · approve" in event.text
    assert at.REFUND_QUESTION in event.text and f"answered: {at.REFUND_ANSWER}" in event.text
    assert f"you said: {at.REFUND_ANSWER}" in msgs[12].text
    # Raw JSON stays one click away.
    raw = msgs[3].find_element(By.CSS_SELECTOR, "details.raw")
    assert not raw.find_element(By.TAG_NAME, "pre").is_displayed()
    raw.find_element(By.TAG_NAME, "summary").click()
    assert '"tool_call_id": "call_order_1"' in raw.find_element(By.TAG_NAME, "pre").text
    browser.get(url(inspector, "/conversation", thread=tid))
    screenshot(browser, "conversation")


def test_a_waiting_interrupt_says_so(browser: Any, inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["chat_waiting"]
    browser.get(url(inspector, "/conversation", thread=tid))
    assert _roles(browser) == CHAT_ROLES[:-1]
    event = browser.find_element(By.CSS_SELECTOR, "li.event.interrupt.waiting")
    assert at.REFUND_QUESTION in event.text and "waiting for an answer" in event.text
    # The checkpoint page shows its conversation too, ending with the interrupt it waits on.
    browser.get(url(inspector, "/checkpoint", thread=tid))
    box = browser.find_element(By.CSS_SELECTOR, "section.conversation-box")
    assert _roles(box) == CHAT_ROLES[:-1]
    # Its diff against the parent: the answer the agent appended before asking.
    diff = browser.find_element(By.CSS_SELECTOR, 'table.diff tr[data-channel="messages"]')
    assert "1 message appended" in diff.text and _roles(diff) == ["ai"]
    assert "waiting for an answer" in box.text


def test_diff_of_any_two_checkpoints_shows_the_appended_messages(
    browser: Any, inspector: str, ui_store: Store
) -> None:
    tid = ui_store.threads["chat"]
    ids, lengths = _ids(ui_store, tid), _lengths(ui_store, tid)
    a = ids[lengths.index(2)]  # the first question asked
    browser.get(url(inspector, "/thread", id=tid))
    browser.find_element(By.CSS_SELECTOR, f'tr[data-id="{a}"] input[name="a"]').click()
    browser.find_element(By.CSS_SELECTOR, f'tr[data-id="{ids[0]}"] input[name="b"]').click()
    browser.find_element(By.CSS_SELECTOR, "form#pick button").click()
    WebDriverWait(browser, 10).until(ec.url_contains("/diff"))
    assert browser.title == f"Diff {tid} · langgraph-dynamodb"
    row = browser.find_element(By.CSS_SELECTOR, 'table.diff tr[data-channel="messages"]')
    cells = row.find_elements(By.TAG_NAME, "td")
    assert cells[1].text.startswith("changed") and "10 messages appended" in cells[1].text
    assert "2 message(s)" in cells[2].text and not cells[2].find_elements(By.CSS_SELECTOR, "li.msg")
    appended = cells[3].find_elements(By.CSS_SELECTOR, "li.msg")
    assert [m.get_attribute("data-role") for m in appended] == [*CHAT_ROLES[2:11], "ai"]
    assert [m.find_element(By.CSS_SELECTOR, ".n").text for m in appended] == [str(i) for i in range(3, 13)]
    assert "Refund issued" in appended[-1].text
    # The whole values stay reachable.
    assert len(cells[3].find_elements(By.CSS_SELECTOR, "details.raw")) >= 1
    screenshot(browser, "diff")
    browser.find_element(By.CSS_SELECTOR, "a.swap").click()
    WebDriverWait(browser, 10).until(
        lambda d: "10 messages removed" in d.find_element(By.CSS_SELECTOR, "table.diff").text
    )


def test_diff_page_with_a_mistyped_id_says_so(browser: Any, inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["chat"]
    browser.get(url(inspector, "/diff", thread=tid, a="no-such-checkpoint"))
    assert "no-such-checkpoint" in browser.find_element(By.CSS_SELECTOR, "p.error").text
    assert browser.find_element(By.NAME, "a").get_attribute("value") == "no-such-checkpoint"


def test_a_fan_out_of_200_sends_is_one_counted_badge(browser: Any, inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["fanout"]
    browser.get(url(inspector, "/thread", id=tid))
    step0 = next(
        r
        for r in browser.find_elements(By.CSS_SELECTOR, "table.timeline tbody tr")
        if r.find_elements(By.TAG_NAME, "td")[2].text == "0"
    )
    badges = step0.find_elements(By.CSS_SELECTOR, ".task")
    assert len(badges) == 1
    assert badges[0].text == "work \u00d7200 done" and badges[0].get_attribute("data-count") == "200"
    # And on the checkpoint page.
    step0.find_element(By.CSS_SELECTOR, "td.cid a").click()
    facts = browser.find_element(By.CSS_SELECTOR, "dl.facts")
    assert [b.text for b in facts.find_elements(By.CSS_SELECTOR, ".task")] == ["work \u00d7200 done"]
    browser.get(url(inspector, "/thread", id=tid))
    screenshot(browser, "fan-out")


def test_timeline_pages_older_then_newer(browser: Any, inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["chat"]
    ids = _ids(ui_store, tid)
    browser.get(url(inspector, "/thread", id=tid, limit=3))
    pages = []
    while True:
        pages.append(
            [
                r.get_attribute("data-id")
                for r in browser.find_elements(By.CSS_SELECTOR, "table.timeline tbody tr")
            ]
        )
        older = browser.find_elements(By.CSS_SELECTOR, "a[rel=next]")
        if not older:
            break
        older[0].click()
    assert [c for p in pages for c in p] == ids and all(len(p) == 3 for p in pages[:-1])
    for expected in reversed(pages[:-1]):
        browser.find_element(By.CSS_SELECTOR, "a[rel=prev]").click()
        WebDriverWait(browser, 10).until(
            lambda d, first=expected[0]: (
                d.find_element(By.CSS_SELECTOR, "table.timeline tbody tr").get_attribute("data-id") == first
            )
        )
        shown = [
            r.get_attribute("data-id")
            for r in browser.find_elements(By.CSS_SELECTOR, "table.timeline tbody tr")
        ]
        assert shown == expected
    assert not browser.find_elements(By.CSS_SELECTOR, "a[rel=prev]")  # back on the newest page


def test_html_in_messages_renders_as_text(browser: Any, inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["xss_chat"]
    for path, params in (
        ("/conversation", {"thread": tid}),
        ("/checkpoint", {"thread": tid}),
        ("/diff", {"thread": tid, "a": _ids(ui_store, tid)[-1]}),
    ):
        browser.get(url(inspector, path, **params))
        body = browser.find_element(By.TAG_NAME, "main").text
        assert XSS_SCRIPT in body and XSS_IMG in body, path
        assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script"), path
        no_xss(browser)
    browser.get(url(inspector, "/conversation", thread=tid))
    assert _roles(browser) == ["human", "ai", "tool", "interrupt", "ai"]
    assert f"answered: {XSS_SCRIPT}" in browser.find_element(By.CSS_SELECTOR, "li.event").text
