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
    # the stages say what is under way ("…"); the answer's status ends the question
    _wait(driver, lambda d: d.find_element(By.ID, "ask").is_enabled()
          and not d.find_element(By.ID, "status").text.endswith("…"))  # fmt: skip


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
    repeating the Kestrel sheet's note to AI assistants (tests/integration/test_shown_claims.py), marked
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
    schemas.WireAskResult.model_validate(result)  # the wire shape, exactly
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
    wire = schemas.WireAskResult.from_ask_result(result).model_dump(mode="json")
    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text != "")
    browser.execute_script("showResult(arguments[0])", wire)
    status = browser.find_element(By.ID, "status")
    assert status.text == "No passage answers this question: " + reason
    assert "refused" in status.get_attribute("class")
    figures = browser.find_element(By.ID, "why-numbers").get_attribute("textContent")
    assert "0.12 against the threshold 0.50" in figures  # under "Advanced", not on the line
    assert not browser.find_elements(By.CSS_SELECTOR, "#claims button")
    assert "passed its checks" not in browser.find_element(By.TAG_NAME, "main").text
    browser.save_screenshot(str(artifacts / "refused-answerability.png"))


GATE_SAID = {
    "en": "Not answered: no passage found is close enough to this question. Try the words",
    "fr": "Pas de réponse : aucun passage trouvé n'est assez proche de cette question.",
}


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_gate_refusal_says_what_to_do_and_its_figures_once_under_advanced(
    server, browser, artifacts, language: str
) -> None:
    """A refusal by the support gate reads in plain words with the next step, in the
    question's language; its floor and scores are said once, under "Advanced" (they were said
    twice on the status line: the gate's reason, then best score and floor again)."""
    from selenium.webdriver.common.by import By

    from tether import schemas
    from tether.answering.gate import gate
    from tether.types import Answer, AskResult

    decision = gate([], 0.7321)  # the engine's own reason: "retrieval too weak: ..."
    question = "Quel est le délai?" if language == "fr" else "What is the delay?"
    result = AskResult(question, None, "public", language, "rerank", gate=decision,
                       answer=Answer(False, "", ()))  # fmt: skip
    wire = schemas.WireAskResult.from_ask_result(result).model_dump(mode="json")
    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text != "")
    browser.execute_script("showResult(arguments[0])", wire)
    status = browser.find_element(By.ID, "status").text
    assert status.startswith(GATE_SAID[language]), status
    assert "floor" not in status and "0.73" not in status and "retrieval too weak" not in status
    figures = browser.find_element(By.ID, "why-numbers")
    assert not figures.is_displayed()  # behind "Advanced" until opened
    browser.find_element(By.CSS_SELECTOR, "#why summary").click()
    assert "floor 0.732" in figures.text and "best scored 0.000" in figures.text
    page = browser.find_element(By.TAG_NAME, "main").get_attribute("textContent")
    assert page.count("0.732") == 1  # the floor, said once
    browser.save_screenshot(str(artifacts / f"refused-gate-{language}.png"))
    browser.execute_script("say('Searching…', false)")  # the next question: no stale figures
    assert not browser.find_element(By.ID, "why").is_displayed()


def test_a_gate_refusal_by_the_filters_keeps_the_engines_reason(server, browser) -> None:
    """When nothing the filters allow matched, the gate's own reason says what to change."""
    from selenium.webdriver.common.by import By

    from tether import schemas
    from tether.answering.gate import PUBLIC_HINT, explain, gate
    from tether.types import Answer, AskResult

    decision = explain(gate([], 0.8), PUBLIC_HINT)
    result = AskResult("Who approves refunds?", None, "public", "en", "rerank", gate=decision,
                       answer=Answer(False, "", ()))  # fmt: skip
    wire = schemas.WireAskResult.from_ask_result(result).model_dump(mode="json")
    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text != "")
    browser.execute_script("showResult(arguments[0])", wire)
    status = browser.find_element(By.ID, "status").text
    assert status.startswith("Not answered: " + PUBLIC_HINT), status
    assert "floor" not in status


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


# ---- every answer status, as the engine makes it ------------------------------------------


def _engine_result(demo_store, audience: str = "public"):
    """A real answer from the demo collection (the engine's types, extractive answerer)."""
    from tether.answering.pipeline import AskOptions
    from tether.app import Workspace
    from tether.config import Settings

    with Workspace.open(demo_store.path, settings=Settings(provider="extractive")) as ws:
        result = ws.ask("How long does standard delivery take?",
                        AskOptions(audience=audience, as_of=None), audit=False)  # fmt: skip
    assert result.status == "answered" and result.answer and result.checks, result.status
    return result


def _status_case(demo_store, status: str):
    """(the engine's AskResult for `status`, what the page's status line starts with)."""
    from dataclasses import replace

    from tether.types import Answer, AnswerProblem, ClaimCheck, Flag, Gate
    from tether.verify.flags import apply_strict, withhold

    if status == "answered":
        return _engine_result(demo_store), "Answered; every claim passed its checks."
    if status == "flagged":  # staff: a number flag is shown, not withheld
        real = _engine_result(demo_store, "staff")
        bad = ClaimCheck(real.checks[0].claim, flags=(Flag("number_not_found", "45"),))
        return replace(real, checks=(bad, *real.checks[1:])), "Answered, with flagged claims"
    if status == "gate":
        real = _engine_result(demo_store)
        gate = Gate(False, 0.8, 1, 0, 0.31, "retrieval too weak: best support 0.31 under 0.80")
        refused = replace(real, gate=gate, answer=Answer(False, "", ()), checks=(), context=None)
        return refused, "Not answered: no passage found is close enough to this question."
    if status in ("verifier", "strict"):
        real = _engine_result(demo_store)
        claim = real.answer.claims[0]
        flag = Flag("missing_id", "000000000000")
        answer, checks = Answer(True, claim.text, (claim,)), [ClaimCheck(claim, flags=(flag,))]
        if status == "strict":
            answer, checks = apply_strict(answer, checks)
            notice = ""
        else:
            answer, checks, notice = withhold(answer, checks, audience="public")
        done = replace(real, answer=answer, checks=tuple(checks), notice=notice)
        said = "No checked claim can be shown" if status == "verifier" else "Refused by the strict mode"
        return done, said
    if status == "model":
        real = _engine_result(demo_store)
        said = "The passages do not say how long delivery takes."
        return replace(real, answer=Answer(False, said, ()), checks=()), "Refused by the model"
    assert status == "no_answer"
    real = _engine_result(demo_store)
    problem = AnswerProblem("provider_error", "the model server timed out after 3 retries")
    done = replace(real, answer=None, checks=(), problem=problem)
    # a public reader is told the provider failed, not the provider's words (issue 47)
    return done, "No answer: the model's provider failed"


STATUSES = ("answered", "flagged", "gate", "verifier", "strict", "model", "no_answer")


@pytest.mark.parametrize("status", STATUSES)
def test_every_answer_status_reads_right(server, browser, artifacts, demo_store, status) -> None:
    """Each status the engine gives (answered, flagged, refused by the gate, the verifier,
    --strict or the model, no answer; answerability and withheld claims have tests above) is
    said in plain words, with the claims a reader may see and nothing else."""
    from selenium.webdriver.common.by import By

    from tether import schemas

    result, said = _status_case(demo_store, status)
    wire = schemas.WireAskResult.from_ask_result(result)
    assert wire.status == ("flagged" if status == "flagged" else "answered" if status == "answered"
                           else "no_answer" if status == "no_answer" else "refused")  # fmt: skip
    if wire.refused:
        assert wire.refused_by == {"gate": "gate"}.get(status, status)
    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text != "")
    browser.execute_script("showResult(arguments[0])", wire.model_dump(mode="json"))
    line = browser.find_element(By.ID, "status")
    assert line.text.startswith(said), line.text
    bad = status not in ("answered", "flagged")
    assert ("refused" in (line.get_attribute("class") or "")) == bad
    claims = browser.find_elements(By.CSS_SELECTOR, "#claims button")
    if status in ("answered", "flagged"):
        assert claims and browser.find_element(By.ID, "claims-hint").is_displayed()
        assert browser.find_element(By.ID, "copy").is_displayed()
        claims[0].click()
        panel = _wait(browser, lambda d: d.find_element(By.ID, "passage-claim"))
        assert panel.text == result.answer.claims[0].text  # the claim itself, not "Claim 1"
        checks = browser.find_element(By.ID, "checks").text
        if status == "flagged":
            assert "number_not_found" in checks and "45" in checks
    elif status == "strict":  # the staff-free public view: a removed claim is not offered
        assert not claims
    else:
        assert not claims
        assert "passed its checks" not in browser.find_element(By.TAG_NAME, "main").text
    browser.save_screenshot(str(artifacts / f"status-{status}.png"))


def test_the_copied_answer_carries_its_sources_and_marks_internal_ones(
    server, browser, demo_store
) -> None:
    """The copy button's text: the answer a reader was shown, then its sources; a staff
    source on a staff view says internal, a public view's text never does."""
    from selenium.webdriver.common.by import By

    from tether import schemas

    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text != "")
    public = schemas.WireAskResult.from_ask_result(_engine_result(demo_store))
    text = browser.execute_script("return exportText(arguments[0])", public.model_dump(mode="json"))
    assert text.startswith(public.answer.answer) and "\nSources:\n[1] " in text
    assert INTERNAL not in text.lower() and INTERNAL.upper() not in text
    staff = _post(server, "/v1/ask", {"question": "When is an online order held for a fraud"
                                      " check to a freight forwarder?", "as_of": "none"},
                  key=STAFF_KEY)  # fmt: skip
    cited = {cid for c in staff["answer"]["claims"] for cid in c["chunk_ids"]}
    staff_cited = [p for p in staff["context"]["passages"]
                   if p["chunk_id"] in cited and p["access"] == "staff"]  # fmt: skip
    assert staff_cited, "the staff answer should cite the fraud-check procedure"
    text = browser.execute_script("return exportText(arguments[0])", staff)
    assert text.startswith(INTERNAL.upper()) and f"[{INTERNAL}]" in text
    assert staff_cited[0]["title"] in text


def test_a_staff_reader_sees_the_draft_before_the_checked_answer(server, browser) -> None:
    """The answer box shows the streamed draft, marked as not yet checked, for a staff view;
    a public view never shows a draft (only the checked answer)."""
    from selenium.webdriver.common.by import By

    record = """
      window.drafts = [];
      new MutationObserver(() => {
        const a = document.getElementById('answer');
        window.drafts.push([a.className, a.textContent]);
      }).observe(document.getElementById('answer'),
                 {childList: true, characterData: true, subtree: true, attributes: true});
    """
    question = "How long does standard delivery take?"
    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("public"))
    browser.execute_script(record)
    _ask(browser, question)
    assert not [t for c, t in browser.execute_script("return window.drafts") if "draft" in c]
    browser.find_element(By.ID, "key").send_keys(STAFF_KEY)
    browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("staff"))
    try:
        browser.execute_script(record)
        _ask(browser, question)
        drafts = [t for c, t in browser.execute_script("return window.drafts") if "draft" in c]
        final = browser.find_element(By.ID, "answer")
        assert drafts and drafts[-1].strip(), "no draft was shown"
        assert "draft" not in (final.get_attribute("class") or "")
        assert final.text and drafts[-1].strip() == final.text.strip()  # extractive: no checks drop
    finally:
        browser.find_element(By.ID, "forget").click()


def test_the_page_says_warming_up_and_asks_for_a_key_in_plain_words(
    browser, artifacts, demo_store, monkeypatch
) -> None:
    """Before the models are loaded the page says it is warming up (and that a question may
    be asked meanwhile), then stops saying so; where anonymous use is off, a page without a
    key asks for one in plain words instead of showing a 401, and the Ask button waits."""
    import threading

    from selenium.webdriver.common.by import By
    from serving import live_server, serve_app

    from tether.app import Workspace

    release = threading.Event()
    real_warm = Workspace.warm
    monkeypatch.setattr(Workspace, "warm", lambda self: (release.wait(60), real_warm(self)))
    app = serve_app(demo_store.path, {STAFF_KEY: "staff"}, anonymous=False)
    with live_server(app) as (host, port):
        browser.get(f"http://{host}:{port}/")
        banner = _wait(browser, lambda d: d.find_element(By.ID, "ready").is_displayed()
                       and d.find_element(By.ID, "ready"))  # fmt: skip
        assert banner.text.startswith("Warming up") and "You can ask now" in banner.text
        prompt = browser.find_element(By.ID, "key-prompt")
        assert prompt.is_displayed() and "access key" in prompt.text
        assert "401" not in browser.find_element(By.TAG_NAME, "main").text
        assert not browser.find_element(By.ID, "ask").is_enabled()
        browser.save_screenshot(str(artifacts / "warming-up-no-key.png"))
        release.set()
        _wait(browser, lambda d: not d.find_element(By.ID, "ready").is_displayed(), 60)
        browser.find_element(By.ID, "key").send_keys(STAFF_KEY)
        browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
        _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("staff"))
        assert not prompt.is_displayed() and browser.find_element(By.ID, "ask").is_enabled()
        browser.find_element(By.ID, "forget").click()
        browser.find_element(By.ID, "key").send_keys("tk_not-a-key")
        browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
        status = _wait(browser, lambda d: d.find_element(By.ID, "status").text and
                       d.find_element(By.ID, "status"))  # fmt: skip
        assert "not accepted" in status.text
        browser.find_element(By.ID, "forget").click()


def test_engineer_settings_wait_behind_advanced(server, browser) -> None:
    """Scores, passage IDs and the retrieval method are hidden until Advanced is opened."""
    from selenium.webdriver.common.by import By

    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("public"))
    assert not browser.find_element(By.ID, "method").is_displayed()
    _ask(browser, "How long does standard delivery take?")
    row = browser.find_elements(By.CSS_SELECTOR, "#hits tr")[0]
    cells = row.find_elements(By.TAG_NAME, "td")
    chunk_id = cells[4].get_attribute("textContent")
    assert len(chunk_id) == 12 and chunk_id not in row.text
    browser.find_element(By.CSS_SELECTOR, "#advanced summary").click()
    assert browser.find_element(By.ID, "method").is_displayed()
    assert chunk_id in row.text and cells[1].text.replace(".", "").isdigit()
    browser.find_element(By.CSS_SELECTOR, "#advanced summary").click()


def test_feedback_from_the_page_becomes_an_eval_question(
    browser, artifacts, demo_store, tmp_path
) -> None:
    """A staff agent marks an answer wrong on the page (a note, the passage that answers);
    the feedback is kept with the answer's audit entry and becomes a question that `eval`
    scores against that passage; an anonymous page offers no feedback (feedback needs a key)."""
    import sqlite3

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    from serving import live_server, serve_app

    from tether.app import Workspace
    from tether.config import Settings
    from tether.evaluation.retrieval_eval import run_retrieval_eval
    from tether.types import AuditQuery

    copy = tmp_path / "demo.sqlite"
    source, target = sqlite3.connect(demo_store.path), sqlite3.connect(copy)
    source.backup(target)
    source.close()
    target.close()
    app = serve_app(copy, {STAFF_KEY: "staff"}, anonymous=True)
    question = "How long does standard delivery take?"
    with live_server(app) as (host, port):
        browser.get(f"http://{host}:{port}/")
        _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("public"))
        _ask(browser, question)
        assert not browser.find_element(By.ID, "feedback").is_displayed()
        browser.find_element(By.ID, "key").send_keys(STAFF_KEY)
        browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
        _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("staff"))
        _ask(browser, question)
        box = browser.find_element(By.ID, "feedback")
        assert box.is_displayed()
        browser.find_element(By.ID, "wrong").click()
        note = browser.find_element(By.ID, "feedback-note")
        assert note.is_displayed()
        note.send_keys("It should quote the express option too.")
        choose = Select(browser.find_element(By.ID, "right-passage"))
        right = choose.options[-1].get_attribute("value")  # the last passage found
        assert right
        choose.select_by_value(right)
        browser.find_element(By.ID, "send-wrong").click()
        said = _wait(browser, lambda d: d.find_element(By.ID, "feedback-said").text)
        assert said.startswith("Thank you: marked wrong"), said
        assert not browser.find_element(By.ID, "wrong").is_enabled()
        browser.save_screenshot(str(artifacts / "feedback-sent.png"))
        browser.find_element(By.ID, "forget").click()
    with Workspace.open(copy, settings=Settings(provider="extractive")) as ws:
        [kept] = ws.feedback_entries(AuditQuery(reader="staff"))
        assert (kept.verdict, kept.chunk_id) == ("wrong", right)
        assert kept.note == "It should quote the express option too."
        questions, _ = ws.feedback_questions(AuditQuery(reader="staff"))
        [made] = questions
        assert made.question == question and made.relevant
        scored = run_retrieval_eval(ws.store, ws.retriever(dense=False), questions, ("bm25",), 20)
    assert scored.n_scored == 1 and not scored.skipped


def test_the_health_report_renders_for_staff_only(browser, artifacts, tmp_path) -> None:
    """The health report as its HTML page (what `tether health --report` writes) renders in
    Chromium with its sections; on the served page, a staff key gets a Health report button
    whose report lists the findings, and a public view has no button."""
    from health_parts import AS_OF, planted_index
    from selenium.webdriver.common.by import By
    from serving import live_server, serve_app

    from tether.app import Workspace
    from tether.config import Settings
    from tether.health.report import render_html

    index = planted_index(tmp_path)
    with Workspace.open(index, settings=Settings(provider="extractive")) as ws:
        report = ws.health(AS_OF)
    page = tmp_path / "health.html"
    page.write_text(render_html(report), encoding="utf-8")
    browser.get(page.as_uri())
    sections = [s.get_attribute("aria-label") for s in browser.find_elements(By.TAG_NAME, "section")]
    assert sections[:4] == ["Content gaps", "Contradictions", "Staleness", "Hygiene"]
    assert "Summer bike storage offer ended" in browser.find_element(By.TAG_NAME, "body").text
    assert browser.find_element(By.CSS_SELECTOR, "article.stale").is_displayed()
    browser.save_screenshot(str(artifacts / "health-report.png"))
    app = serve_app(index, {STAFF_KEY: "staff"}, anonymous=True)
    with live_server(app) as (host, port):
        browser.get(f"http://{host}:{port}/")
        _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("public"))
        assert not browser.find_element(By.ID, "health-open").is_displayed()
        browser.find_element(By.ID, "key").send_keys(STAFF_KEY)
        browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
        _wait(browser, lambda d: d.find_element(By.ID, "audience").text.startswith("staff"))
        try:
            browser.execute_script(f"document.getElementById('as-of').value = '{AS_OF}'")
            browser.find_element(By.ID, "health-open").click()
            _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#health article.stale"), 300)
            text = browser.find_element(By.ID, "health-box").text
            assert "Content gaps" in text and "People ask:" in text
            assert "Summer bike storage offer ended" in text
            browser.save_screenshot(str(artifacts / "health-page.png"))
        finally:
            browser.find_element(By.ID, "forget").click()


def test_a_passage_read_from_a_website_links_to_its_live_page(server, browser, demo_store) -> None:
    """Issue 46: a passage whose source is a page's URL shows a link to the live page, at
    its anchor, in the cited-passage box and in the copied text; a file's path, or a source
    of another scheme (javascript:), is no link."""
    from dataclasses import replace

    from selenium.webdriver.common.by import By

    from tether import schemas

    real = _engine_result(demo_store)
    cited = real.answer.claims[0].chunk_ids[0]
    url = "https://docs.example.com/guide/delivery.html"

    def with_source(source: str):
        passages = tuple(
            replace(p, chunk=replace(p.chunk, anchor="times", meta=replace(p.chunk.meta, source=source)))
            if p.chunk.chunk_id == cited else p
            for p in real.context.passages
        )  # fmt: skip
        done = replace(real, context=replace(real.context, passages=passages))
        return schemas.WireAskResult.from_ask_result(done).model_dump(mode="json")

    browser.get(server + "/")
    _wait(browser, lambda d: d.find_element(By.ID, "audience").text != "")
    for source, link in ((url, url + "#times"), ("javascript:alert(1)", None)):
        wire = with_source(source)
        browser.execute_script("showResult(arguments[0])", wire)
        browser.find_elements(By.CSS_SELECTOR, "#claims button")[0].click()
        _wait(browser, lambda d: d.find_element(By.ID, "passage-claim"))
        found = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "#cited a.live")]
        assert found == ([link] if link else []), found
        text = browser.execute_script("return exportText(arguments[0])", wire)
        assert (link in text) if link else ("javascript:" not in text)
