"""The inspector in a real headless Chromium: pages, fork tree, diff, on-demand values, XSS, screenshots."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.ui.conftest import XSS_IMG, XSS_SCRIPT, Store, screenshot, sign_in


@pytest.fixture(autouse=True, scope="module")
def _signed_in(browser: Any, inspector: str) -> None:
    """The browser opens the URL the inspector prints once; its cookie signs in every later page."""
    sign_in(browser, inspector)


def url(base: str, path: str, **params: Any) -> str:
    return f"{base}{path}?{urllib.parse.urlencode(params)}" if params else f"{base}{path}"


def rows(driver: Any, table: str) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, f"table.{table} tbody tr")


def no_xss(driver: Any) -> None:
    assert driver.execute_script("return typeof window.__xss") == "undefined"


def test_sign_in_cookie_is_http_only_and_the_secret_leaves_the_url(browser: Any, inspector: str) -> None:
    sign_in(browser, inspector)
    assert browser.current_url == inspector + "/"
    assert browser.execute_script("return document.cookie") == ""  # HttpOnly: no script on the page reads it
    cookies = {c["name"]: c for c in browser.get_cookies()}
    port = urllib.parse.urlsplit(inspector).port
    cookie = cookies[f"lg_dynamodb_ui_{port}"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    # Without the cookie, even this browser gets nothing but the refusal.
    browser.delete_all_cookies()
    browser.get(url(inspector, "/"))
    assert "forbidden" in browser.find_element(By.TAG_NAME, "body").text
    sign_in(browser, inspector)


def test_threads_page(browser: Any, inspector: str, ui_store: Store) -> None:
    browser.get(url(inspector, "/"))
    assert browser.title == "Threads · langgraph-dynamodb"
    shown = {r.find_element(By.CSS_SELECTOR, "td.tid").text: r for r in rows(browser, "threads")}
    for name in ("main", "archive", "crash", "subgraph", "error", "waiting", "xss"):
        assert ui_store.threads[name] in shown, name
    archive = shown[ui_store.threads["archive"]].find_elements(By.TAG_NAME, "td")
    assert archive[2].text == "16"  # checkpoints: the copy holds the whole history
    assert archive[3].text.endswith("KiB")
    assert archive[4].text.startswith("20")  # expiry from the thread head (the saver has a TTL)
    assert "threads-index" in browser.find_element(By.CSS_SELECTOR, "p.note").text
    waiting = shown[ui_store.threads["waiting"]].find_elements(By.TAG_NAME, "td")[6].text
    assert waiting == "waiting: pm"
    assert shown[ui_store.threads["main"]].find_elements(By.TAG_NAME, "td")[6].text == "-"
    no_xss(browser)
    screenshot(browser, "threads")


def test_threads_search_and_paging(browser: Any, inspector: str, ui_store: Store) -> None:
    browser.get(url(inspector, "/"))
    box = browser.find_element(By.NAME, "prefix")
    box.send_keys("export-")
    box.submit()
    WebDriverWait(browser, 10).until(ec.url_contains("prefix=export-"))
    found = [r.find_element(By.CSS_SELECTOR, "td.tid").text for r in rows(browser, "threads")]
    assert sorted(found) == sorted(ui_store.threads[n] for n in ("main", "archive", "crash"))
    # Paged: one thread per page, the next link keeps the prefix.
    browser.get(url(inspector, "/", prefix="export-", limit=1))
    seen = []
    for _ in range(5):
        seen += [r.find_element(By.CSS_SELECTOR, "td.tid").text for r in rows(browser, "threads")]
        nxt = browser.find_elements(By.CSS_SELECTOR, "a[rel=next]")
        if not nxt:
            break
        nxt[0].click()
    assert sorted(seen) == sorted(found)


def test_thread_page_timeline_fork_tree_and_prune_marks(
    browser: Any, inspector: str, ui_store: Store
) -> None:
    tid = ui_store.threads["archive"]
    browser.get(url(inspector, "/thread", id=tid))
    assert browser.title == f"Thread {tid} · langgraph-dynamodb"
    timeline = rows(browser, "timeline")
    assert len(timeline) == 16
    text = browser.find_element(By.CSS_SELECTOR, "table.timeline").text
    assert "product_manager" in text and "developer" in text and "tester" in text
    assert "answered for product_manager: CSV, admins and auditors only" in text  # the resume
    # The fork from update_state: one checkpoint with two branches.
    forks = browser.find_elements(By.CSS_SELECTOR, ".fork-tree li.fork-point")
    assert len(forks) == 1
    branches = forks[0].find_elements(By.CSS_SELECTOR, ":scope > ul.branches > li.branch")
    assert len(branches) == 2
    # Prune marks are off until asked for (a read-only tool); the toggle turns them on.
    assert not browser.find_elements(By.CSS_SELECTOR, "table.timeline .mark")
    assert "prune" not in browser.find_element(By.CSS_SELECTOR, "table.timeline thead").text.lower()
    browser.find_element(By.LINK_TEXT, "show prune marks").click()
    WebDriverWait(browser, 10).until(ec.url_contains("marks=1"))
    # keep_last=1 keeps one checkpoint here (no delta channels); keep_last=3 keeps three.
    marks = [m.text for m in browser.find_elements(By.CSS_SELECTOR, "table.timeline .mark")]
    assert marks.count("keep") == 1 and marks.count("delete") == 15
    box = browser.find_element(By.NAME, "keep_last")
    box.clear()
    box.send_keys("3")
    box.submit()
    WebDriverWait(browser, 10).until(ec.url_contains("keep_last=3"))
    marks = [m.text for m in browser.find_elements(By.CSS_SELECTOR, "table.timeline .mark")]
    assert marks.count("keep") == 3 and marks.count("delete") == 13
    browser.find_element(By.LINK_TEXT, "hide prune marks").click()
    WebDriverWait(browser, 10).until(lambda d: "marks=1" not in d.current_url)
    assert not browser.find_elements(By.CSS_SELECTOR, "table.timeline .mark")
    screenshot(browser, "thread")


def test_timeline_is_paged(browser: Any, inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["archive"]
    browser.get(url(inspector, "/thread", id=tid, limit=5))
    seen: list[str] = []
    for _ in range(5):
        seen += [r.get_attribute("data-id") for r in rows(browser, "timeline")]
        nxt = browser.find_elements(By.CSS_SELECTOR, "a[rel=next]")
        if not nxt:
            break
        nxt[0].click()
    assert len(seen) == 16 and len(set(seen)) == 16 and seen == sorted(seen, reverse=True)


def test_delta_keep_marks_and_subgraph(browser: Any, inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["subgraph"]
    browser.get(url(inspector, "/thread", id=tid, marks=1))
    marks = [m.text for m in browser.find_elements(By.CSS_SELECTOR, "table.timeline .mark")]
    # The latest checkpoint rebuilds its delta channel from ancestors back to a snapshot: those stay too.
    assert marks[0] == "keep" and "keep (delta)" in marks and "delete" in marks
    nested = browser.find_elements(By.CSS_SELECTOR, "ul.namespaces > li > ul > li a")
    assert nested and all(a.text.startswith("assistant") for a in nested)
    nested[0].click()
    WebDriverWait(browser, 10).until(ec.presence_of_element_located((By.CSS_SELECTOR, "p.origin")))
    origin = browser.find_element(By.CSS_SELECTOR, "p.origin")
    assert "subgraph run by task" in origin.text
    assert "think" in browser.find_element(By.CSS_SELECTOR, "table.timeline").text
    screenshot(browser, "subgraph")
    origin.find_element(By.TAG_NAME, "a").click()  # to the parent checkpoint that ran it
    facts = browser.find_element(By.CSS_SELECTOR, "dl.facts").text
    assert "SUBGRAPH RUN" in facts.upper() and "assistant" in facts


def _checkpoint_where(store: Store, thread: str, pred: Any) -> str:
    for t in store.saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}):
        if pred(t):
            return str(t.config["configurable"]["checkpoint_id"])
    raise AssertionError("no such checkpoint")


def test_checkpoint_page_diff_against_parent_and_chosen(
    browser: Any, inspector: str, ui_store: Store
) -> None:
    tid = ui_store.threads["archive"]
    fork = _checkpoint_where(ui_store, tid, lambda t: (t.metadata or {}).get("source") == "update")
    browser.get(url(inspector, "/checkpoint", thread=tid, id=fork))
    assert browser.title.startswith("Checkpoint ")
    changed = browser.find_elements(By.CSS_SELECTOR, "table.diff tr.changed")
    assert [r.get_attribute("data-channel") for r in changed] == ["spec"]
    assert "XLSX" in changed[0].text
    channels = [r.get_attribute("data-channel") for r in rows(browser, "channels")]
    assert "spec" in channels and "requirement" in channels
    screenshot(browser, "checkpoint")
    # Against a chosen checkpoint: the first one (the input), many channels differ.
    first = list(ui_store.saver.list({"configurable": {"thread_id": tid, "checkpoint_ns": ""}}))[-1]
    box = browser.find_element(By.NAME, "against")
    box.clear()
    box.send_keys(first.config["configurable"]["checkpoint_id"])
    box.submit()
    WebDriverWait(browser, 10).until(ec.url_contains("against="))
    diff_channels = {r.get_attribute("data-channel") for r in rows(browser, "diff")}
    assert {"spec", "log"} <= diff_channels


def test_s3_value_loads_on_demand(browser: Any, inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["archive"]
    cid = _checkpoint_where(ui_store, tid, lambda t: "fixtures" in t.checkpoint["channel_values"])
    browser.get(url(inspector, "/checkpoint", thread=tid, id=cid))
    row = browser.find_element(By.CSS_SELECTOR, 'table.channels tr[data-channel="fixtures"]')
    assert row.find_element(By.CSS_SELECTOR, ".where").text in ("s3", "held by") or "s3" in row.text
    pre = row.find_element(By.CSS_SELECTOR, "pre.value")
    assert len(pre.text) < 1000  # collapsed: only a preview came with the page
    screenshot(browser, "checkpoint-s3")
    row.find_element(By.CSS_SELECTOR, "button.load").click()
    WebDriverWait(browser, 20).until(lambda d: pre.get_attribute("data-loaded") == "1")
    full = ui_store.saver.get_tuple(
        {"configurable": {"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": cid}}
    ).checkpoint["channel_values"]["fixtures"]
    assert len(full) > 250_000
    assert browser.execute_script("return arguments[0].textContent.length", pre) == len(full)


def test_s3_location_and_size(browser: Any, inspector: str, ui_store: Store) -> None:
    """The checkpoint that introduced the fixture says S3 and its stored size."""
    tid = ui_store.threads["main"]
    cid = _checkpoint_where(
        ui_store, tid, lambda t: "fixtures" in t.checkpoint["channel_values"]
    )  # the latest surviving one after the prune
    browser.get(url(inspector, "/checkpoint", thread=tid, id=cid))
    row = browser.find_element(By.CSS_SELECTOR, 'table.channels tr[data-channel="fixtures"]')
    cells = row.find_elements(By.TAG_NAME, "td")
    assert cells[2].text == "s3"
    assert cells[3].text.endswith("KiB")


def test_errors_and_interrupts_in_timeline(browser: Any, inspector: str, ui_store: Store) -> None:
    browser.get(url(inspector, "/thread", id=ui_store.threads["error"]))
    text = browser.find_element(By.CSS_SELECTOR, "table.timeline").text
    assert "error in task" in text and "b failed" in text
    assert browser.find_elements(By.CSS_SELECTOR, "table.timeline .task.error")
    browser.get(url(inspector, "/thread", id=ui_store.threads["waiting"]))
    text = browser.find_element(By.CSS_SELECTOR, "table.timeline").text
    assert "What exactly should 'export <i>users</i>' do?" in text
    assert browser.find_elements(By.CSS_SELECTOR, "table.timeline .task.interrupted")
    no_xss(browser)


def test_xss_payloads_render_as_text(browser: Any, inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["xss"]
    browser.get(url(inspector, "/"))
    assert browser.find_elements(By.XPATH, f"//td[@class='tid']/a[text()='{tid}']")
    no_xss(browser)
    browser.get(url(inspector, "/thread", id=tid))
    assert tid in browser.find_element(By.TAG_NAME, "h1").text  # the thread id's <b> is text
    assert not browser.find_elements(By.CSS_SELECTOR, "h1 b")
    no_xss(browser)
    browser.get(url(inspector, "/checkpoint", thread=tid))
    body = browser.find_element(By.TAG_NAME, "body").text
    assert XSS_SCRIPT in body and XSS_IMG in body
    assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script")
    no_xss(browser)
