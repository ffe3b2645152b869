"""The web page in a real headless Chromium (Debian's chromium and chromedriver, driven by
Selenium) against `tether serve` on a free loopback port, with the demo collection and the
extractive answerer: type a question, see the claims, select one (with the keyboard), see its
passage with the evidence span marked; a staff-only passage never appears with a public key,
and does with a staff key. Screenshots (PNG) go to $TETHER_ARTIFACTS (default: a temporary
folder). Under CI=true a missing browser fails the test; elsewhere it skips."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("selenium")
pytest.importorskip("uvicorn")

CHROMIUM = os.environ.get("TETHER_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TETHER_CHROMEDRIVER", "/usr/bin/chromedriver")
STAFF_KEY = "tk_browser-staff"
STAFF_DOC = "fraud-check-procedure"
STAFF_WORDS = "freight forwarder"

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _browser_missing() -> str:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).is_file() or shutil.which(path)):
            return f"{path} is not installed (scripts/ci/browser.sh installs it)"
    return ""


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    folder = os.environ.get("TETHER_ARTIFACTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def server(demo_store):
    """`tether serve`'s app under uvicorn on a free loopback port (anonymous = public)."""
    import uvicorn
    from serving import serve_app

    app = serve_app(demo_store.path, {STAFF_KEY: "staff"}, anonymous=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser():
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {missing}")
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1366,900"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _wait(driver, condition, seconds: float = 90):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds).until(condition)


def _ask(driver, question: str) -> None:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question)
    driver.execute_script("document.getElementById('status').textContent = ''")
    driver.find_element(By.ID, "ask").click()
    _wait(driver, lambda d: d.find_element(By.ID, "status").text not in ("", "Asking…"))


def test_claim_map_marks_the_evidence_span(server, browser, artifacts) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("public"))
    assert browser.find_element(By.ID, "version").text.startswith("v")
    _ask(browser, "How long does standard delivery take?")
    claims = browser.find_elements(By.CSS_SELECTOR, "#claims button")
    assert claims, browser.find_element(By.ID, "status").text
    claims[0].send_keys(Keys.ENTER)  # keyboard: a claim is a button
    mark = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#cited mark"))
    assert mark.text.strip() and "3 to 7" in browser.find_element(By.ID, "cited").text
    assert claims[0].get_attribute("aria-pressed") == "true"
    checks = browser.find_element(By.ID, "checks").text
    assert checks.startswith("ok") or ":" in checks
    rows = browser.find_elements(By.CSS_SELECTOR, "#hits tr")
    assert rows and rows[0].text.startswith("1 ")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", mark)
    browser.save_screenshot(str(artifacts / "claim-map.png"))


def test_staff_passages_never_reach_a_public_page(server, browser, artifacts) -> None:
    from selenium.webdriver.common.by import By

    question = "When is an online order held for a fraud check to a freight forwarder?"
    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("public"))
    assert not browser.find_element(By.ID, "view-box").is_displayed()
    _ask(browser, question)
    browser.save_screenshot(str(artifacts / "public-staff-question.png"))
    shown = browser.find_element(By.TAG_NAME, "main").text
    assert STAFF_DOC not in shown and "Online order fraud checks" not in shown
    assert "$800" not in shown
    # the same page with a staff key sees the staff passage (so the check above can fail)
    browser.find_element(By.ID, "key").send_keys(STAFF_KEY)
    browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("staff"))
    assert browser.find_element(By.ID, "view-box").is_displayed()
    _ask(browser, question)
    _wait(browser, lambda d: "Online order fraud checks" in d.find_element(By.ID, "hits").text)
    browser.save_screenshot(str(artifacts / "staff-view.png"))
    browser.find_element(By.ID, "forget").click()


WITHHELD = "The TR-2200 frame has a lifetime warranty with free crash replacement."


def _result_with_a_withheld_claim(audience: str) -> dict:
    """An AskResult (wire shape, the parts the page reads) as the demo's Kestrel sheet yields
    it (tests/test_shown_claims.py): the claim repeating the sheet's note to AI assistants is
    withheld from the public, with the notice saying why."""
    kept = "The TR-2200 frame is aluminium."
    claims = [{"text": kept, "chunk_ids": ["a"]}, {"text": WITHHELD, "chunk_ids": ["b"]}]
    checks = [
        {"claim": kept, "chunk_ids": ["a"], "ok": True, "flags": [], "withheld": False},
        {"claim": WITHHELD, "chunk_ids": ["b"], "ok": False, "withheld": True,
         "flags": ["instruction_in_source:b"]},
    ]  # fmt: skip
    public = audience == "public"
    return {
        "audience": audience, "refused": False, "status": "flagged", "hits": [],
        "answer": {"answer": f"{kept} {WITHHELD}", "claims": claims}, "checks": checks,
        "notice": "1 claim was withheld: it repeats text addressed to AI assistants"
        if public else "",
    }  # fmt: skip


@pytest.mark.parametrize("audience", ["public", "staff"])
def test_a_withheld_claim_is_never_rendered_for_the_public(
    server, browser, artifacts, audience: str
) -> None:
    """The page shows the notice and never a withheld claim to a public view; staff see it
    marked withheld."""
    from selenium.webdriver.common.by import By

    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text != "")
    result = _result_with_a_withheld_claim(audience)
    browser.execute_script("showResult(arguments[0])", result)
    browser.save_screenshot(str(artifacts / f"withheld-{audience}.png"))
    shown = browser.find_element(By.ID, "result").text
    notice = browser.find_element(By.ID, "notice")
    if audience == "public":
        assert "lifetime warranty" not in shown
        assert notice.is_displayed() and "addressed to AI assistants" in notice.text
    else:
        assert WITHHELD in browser.find_element(By.ID, "claims").text
        assert "withheld" in browser.find_element(By.ID, "claims").text
        assert not notice.is_displayed()
