"""The web page in a real headless Chromium (Debian's chromium and chromedriver, driven by
Selenium) against `tether serve` on a free loopback port, with the demo collection and the
extractive answerer: type a question, see the claims, select one (with the keyboard), see its
passage with the evidence span marked; a staff-only passage never appears with a public key,
and does with a staff key, marked "internal — do not share"; wire results built with the
engine's own types (a withheld claim, a refusal by answerability) are rendered by the page's
showResult. Screenshots (PNG) go to $TETHER_ARTIFACTS (default: a temporary
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
INTERNAL = "internal — do not share"


def _post(server: str, path: str, body: dict, key: str = "") -> dict:
    import json
    import urllib.request

    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    request = urllib.request.Request(server + path, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def _result_with_a_withheld_claim(server: str, audience: str) -> dict:
    """The wire AskResult the API returns when a claim is withheld from a public reader: a
    real answer from the demo collection (its claim, check and passages), plus a claim
    repeating the Kestrel sheet's note to AI assistants (tests/test_shown_claims.py), marked
    by `tether.verify.flags.withhold` itself. For the public, `answer.claims` holds only the
    kept claim while `checks` holds both (the case the page once paired by position); staff
    get both claims and no notice."""
    from tether import schemas
    from tether.types import Answer, Claim, ClaimCheck, Flag
    from tether.verify.flags import withhold

    real = _post(server, "/v1/ask", {"question": "How long does standard delivery take?",
                                     "as_of": "none"})  # fmt: skip
    assert real["status"] == "answered" and real["answer"]["claims"], real["status"]
    kept_wire = real["answer"]["claims"][0]
    other = real["context"]["passages"][-1]["chunk_id"]
    kept = Claim(kept_wire["text"], tuple(kept_wire["chunk_ids"]))
    bad = Claim(WITHHELD, (other,))
    # the withheld claim first: a pairing by position gives the kept claim its check
    answer = Answer(True, f"{WITHHELD} {kept.text}", (bad, kept))
    checks = [ClaimCheck(bad, flags=(Flag("instruction_in_source", other),)), ClaimCheck(kept)]
    shown, marked, notice = withhold(answer, checks, audience=audience)
    kept_check = real["checks"][0]
    assert kept_check["claim"] == kept.text
    result = dict(real, audience=audience, notice=notice, status="answered")
    result["answer"] = dict(real["answer"], answer=shown.answer,
                            claims=[{"text": c.text, "chunk_ids": list(c.chunk_ids)} for c in shown.claims])  # fmt: skip
    result["checks"] = [schemas.Check.from_check(marked[0]).model_dump(mode="json"), kept_check]
    schemas.AskResult.model_validate(result)  # the wire shape, exactly
    if audience == "public":
        assert len(result["answer"]["claims"]) == 1 and len(result["checks"]) == 2
    return result


@pytest.mark.parametrize("audience", ["public", "staff"])
def test_a_withheld_claim_is_never_rendered_for_the_public(
    server, browser, artifacts, audience: str
) -> None:
    """The page pairs each claim with its own check (never by position): the public sees the
    kept claim with its check and the notice counting the withheld one, never the withheld
    claim; staff see both, the withheld one marked."""
    from selenium.webdriver.common.by import By

    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text != "")
    result = _result_with_a_withheld_claim(server, audience)
    kept = result["checks"][1]["claim"]
    browser.execute_script("showResult(arguments[0])", result)
    shown = browser.find_element(By.ID, "result").text
    notice = browser.find_element(By.ID, "notice")
    claims = browser.find_elements(By.CSS_SELECTOR, "#claims button")
    status = browser.find_element(By.ID, "status").text
    assert kept in browser.find_element(By.ID, "answer").text
    ours = [c for c in claims if c.text.startswith(kept)]
    assert len(ours) == 1 and ours[0].text.endswith("ok")
    if audience == "public":
        assert len(claims) == 1
        assert "lifetime warranty" not in shown and "lifetime warranty" not in status
        assert notice.is_displayed() and notice.text.startswith("1 claim withheld:")
        assert "addressed to AI assistants" in notice.text
        assert "every claim shown passed" in status and "1 claim not shown" in status
    else:
        assert len(claims) == 2 and claims[0].text.startswith(WITHHELD)
        assert "flagged" in claims[0].text
        assert not notice.is_displayed()
    ours[0].click()  # the kept claim opens with its own check and cited passage
    mark = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#cited mark"))
    assert mark.text.strip()
    assert browser.find_element(By.ID, "checks").text.startswith("ok")
    assert "instruction" not in browser.find_element(By.ID, "checks").text
    browser.save_screenshot(str(artifacts / f"withheld-{audience}.png"))


def test_a_refusal_by_answerability_says_why(server, browser, artifacts) -> None:
    """A wire result refused by the answerability judge shows its reason, and no claim."""
    from selenium.webdriver.common.by import By

    from tether import schemas
    from tether.types import Answerability, AskResult, Gate

    reason = "no retrieved passage gives a price for a replacement saddle"
    result = AskResult(
        "How much is a replacement saddle?", None, "public", "en", "rerank",
        gate=Gate(True, 0.7, 1, 2, 0.91), answerability=Answerability(False, 0.12, 0.5, "money", reason),
    )  # fmt: skip
    assert result.refused_by == "answerability"
    wire = schemas.AskResult.from_ask_result(result).model_dump(mode="json")
    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text != "")
    browser.execute_script("showResult(arguments[0])", wire)
    status = browser.find_element(By.ID, "status")
    assert status.text == "No passage answers this question: " + reason
    assert "refused" in status.get_attribute("class")
    assert not browser.find_elements(By.CSS_SELECTOR, "#claims button")
    assert "passed its checks" not in browser.find_element(By.TAG_NAME, "main").text
    browser.save_screenshot(str(artifacts / "refused-answerability.png"))


def test_staff_sources_are_marked_internal_on_a_staff_view_only(server, browser, artifacts) -> None:
    """A staff passage on a staff view carries "internal — do not share" on the answer, its
    claim, the cited passage and the passages table; the public view of the same question,
    and the public view a staff key asks for, never show the mark."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    question = "When is an online order held for a fraud check to a freight forwarder?"
    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("public"))
    _ask(browser, question)
    assert INTERNAL not in browser.find_element(By.TAG_NAME, "main").text
    assert not browser.find_elements(By.CSS_SELECTOR, "main .internal:not([hidden])")
    browser.find_element(By.ID, "key").send_keys(STAFF_KEY)
    browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("staff"))
    try:
        _ask(browser, question)
        rows = browser.find_elements(By.CSS_SELECTOR, "#hits tr")
        staff_rows = [r for r in rows if "Online order fraud checks" in r.text]
        assert staff_rows and all(INTERNAL in r.text for r in staff_rows)
        claims = browser.find_elements(By.CSS_SELECTOR, "#claims button")
        marked = [c for c in claims if INTERNAL in c.text]
        assert marked, [c.text for c in claims]
        assert browser.find_element(By.ID, "answer-internal").is_displayed()
        marked[0].click()
        cited = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#cited article"))
        assert INTERNAL in cited.find_element(By.TAG_NAME, "h4").text
        browser.save_screenshot(str(artifacts / "staff-internal.png"))
        # the staff key's public view: no staff passage, no mark
        Select(browser.find_element(By.ID, "view")).select_by_value("public")
        _ask(browser, question)
        assert INTERNAL not in browser.find_element(By.TAG_NAME, "main").text
        assert "Online order fraud checks" not in browser.find_element(By.TAG_NAME, "main").text
    finally:
        browser.find_element(By.ID, "forget").click()
