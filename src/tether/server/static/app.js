// tether's web page: asks /v1/ask with the key kept in sessionStorage, shows the answer, the
// claim map (select a claim: its cited passage with the evidence span marked, its checks in
// plain words) and the passages. Every text from the server is set with textContent, never
// parsed as HTML.
"use strict";

const KEY = "tether-key";
const $ = (id) => document.getElementById(id);
let flagWords = {};

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

async function api(path, body) {
  const headers = { "Accept": "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers["Authorization"] = "Bearer " + key;
  const init = { headers, method: body ? "POST" : "GET" };
  if (body) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const detail = data && data.detail ? data.detail : response.statusText;
    throw new Error(response.status + ": " + detail);
  }
  return { data, audience: response.headers.get("Tether-Audience") };
}

function say(text, refused) {
  $("status").textContent = text;
  $("status").className = refused ? "refused" : "";
}

async function whoami() {
  try {
    const { data } = await api("/v1/whoami");
    $("audience").textContent = data.audience + (data.name === "anonymous" ? " (anonymous)" : " · " + data.name);
    $("audience").className = "badge " + data.audience;
    $("view-box").hidden = data.audience !== "staff";
    $("view").value = data.audience;
  } catch (error) {
    $("audience").textContent = "no access";
    $("view-box").hidden = true;
    say(error.message, true);
  }
}

function inForce(from, to) {
  return (from || "…") + " → " + (to || "…");
}

function plain(flag) {
  const cut = flag.indexOf(":");
  const kind = cut < 0 ? flag : flag.slice(0, cut);
  const arg = cut < 0 ? "?" : flag.slice(cut + 1);
  const words = flagWords[kind];
  return kind + ": " + (words ? words.split("{arg}").join(arg) : flag);
}

function marked(passage, evidence) {
  // the passage's text with each evidence sentence (offsets into the document) in <mark>
  const quote = el("blockquote");
  const spans = evidence
    .filter((e) => e.chunk_id === passage.chunk_id)
    .map((e) => [e.start - passage.start, e.end - passage.start])
    .filter(([a, b]) => a >= 0 && b <= passage.text.length && a < b)
    .sort((x, y) => x[0] - y[0]);
  let at = 0;
  for (const [a, b] of spans) {
    if (a < at) continue;
    quote.append(document.createTextNode(passage.text.slice(at, a)));
    quote.append(el("mark", passage.text.slice(a, b)));
    at = b;
  }
  quote.append(document.createTextNode(passage.text.slice(at)));
  return quote;
}

function showClaim(result, n) {
  const check = result.checks[n];
  const claim = check ? { text: check.claim, chunk_ids: check.chunk_ids } : result.answer.claims[n];
  for (const button of $("claims").querySelectorAll("button")) {
    button.setAttribute("aria-pressed", String(button.dataset.n === String(n)));
  }
  $("passage").hidden = false;
  $("passage-claim").textContent = "Claim " + (n + 1);
  const checks = $("checks");
  checks.replaceChildren();
  if (!check) checks.append(el("li", "not checked"));
  else if (check.ok) checks.append(el("li", "ok: every check passed", "verdict ok"));
  for (const flag of check ? check.flags : []) checks.append(el("li", plain(flag)));
  const cited = $("cited");
  cited.replaceChildren();
  const passages = result.context ? result.context.passages : [];
  for (const id of claim.chunk_ids) {
    const passage = passages.find((p) => p.chunk_id === id);
    if (!passage) {
      cited.append(el("p", "passage " + id + " was not among the passages given to the model"));
      continue;
    }
    const box = el("article");
    box.append(el("h4", passage.title));
    const meta = el("dl");
    const rows = [["version", passage.version], ["section", passage.section],
      ["in force", inForce(passage.effective_from, passage.effective_to)],
      ["type", passage.doc_type], ["chunk", passage.chunk_id]];
    for (const [name, value] of rows) {
      meta.append(el("dt", name), el("dd", value));
    }
    box.append(meta, marked(passage, check ? check.evidence : []));
    cited.append(box);
  }
}

function showResult(result) {
  $("result").hidden = false;
  $("passage").hidden = true;
  // a claim withheld from a public reader is never shown to one; staff see it marked
  const publicView = result.audience !== "staff";
  const hidden = (n) => publicView && result.checks[n] && result.checks[n].withheld;
  const claims = result.answer ? result.answer.claims : [];
  const anyHidden = claims.some((claim, n) => hidden(n));
  const answer = !result.answer ? ""
    : anyHidden ? claims.filter((claim, n) => !hidden(n)).map((claim) => claim.text).join(" ")
    : result.answer.answer;
  $("answer").textContent = answer;
  $("notice").textContent = result.notice || "";
  $("notice").hidden = !result.notice;
  if (result.refused) {
    const gate = result.gate;
    const why = result.refused_by === "gate" && gate
      ? "Refused by the support gate: " + gate.reason + " (best score " + gate.best.toFixed(3) + ", floor " + gate.floor.toFixed(3) + ")"
      : result.refused_by === "answerability"
        ? "No passage answers this question: " + ((result.answerability && result.answerability.reason) || result.why_refused || "")
        : "Refused by the " + (result.refused_by === "strict" ? "strict mode" : "model") + ": " + (result.why_refused || "");
    say(why, true);
  } else if (result.status === "no_answer") {
    say("No answer: " + (result.problem ? result.problem.detail : "the provider failed"), true);
  } else {
    say(result.status === "flagged" ? "Answered, with flagged claims: read their checks." : "Answered; every claim passed its checks.", false);
  }
  const list = $("claims");
  list.replaceChildren();
  claims.forEach((claim, n) => {
    if (hidden(n)) return;
    const check = result.checks[n];
    const button = el("button", claim.text);
    button.type = "button";
    button.dataset.n = String(n);
    button.setAttribute("aria-pressed", "false");
    const verdict = !check ? "" : check.withheld ? "withheld" : check.ok ? "ok" : "flagged";
    if (verdict) button.append(el("span", verdict, "verdict " + (verdict === "withheld" ? "flagged" : verdict)));
    button.addEventListener("click", () => showClaim(result, n));
    const item = el("li");
    item.append(button);
    list.append(item);
  });
  const rows = $("hits");
  rows.replaceChildren();
  for (const hit of result.hits) {
    const row = el("tr");
    row.append(el("td", hit.rank), el("td", hit.score.toFixed(3)),
      el("td", hit.title + " v" + hit.version), el("td", hit.section), el("td", hit.chunk_id));
    rows.append(row);
  }
  $("hits-box").hidden = result.hits.length === 0;
  $("result").hidden = claims.length === 0 && !answer;
}

async function ask(event) {
  event.preventDefault();
  const body = {
    question: $("question").value,
    as_of: $("as-of").value || "none",
    method: $("method").value,
  };
  if (!$("view-box").hidden) body.view = $("view").value;
  $("ask").disabled = true;
  say("Asking…", false);
  try {
    const { data, audience } = await api("/v1/ask", body);
    showResult(data);
    $("result").dataset.audience = audience || data.audience;
  } catch (error) {
    say(error.message, true);
  } finally {
    $("ask").disabled = false;
  }
}

async function start() {
  $("as-of").value = new Date().toISOString().slice(0, 10);
  $("key").value = sessionStorage.getItem(KEY) || "";
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("key").value.trim();
    if (key) sessionStorage.setItem(KEY, key); else sessionStorage.removeItem(KEY);
    whoami();
  });
  $("forget").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    $("key").value = "";
    whoami();
  });
  $("ask-form").addEventListener("submit", ask);
  try {
    const health = await (await fetch("/healthz")).json();
    $("version").textContent = "v" + health.version;
    flagWords = (await api("/v1/flags")).data;
  } catch (error) {
    say("The server did not answer: " + error.message, true);
  }
  await whoami();
}

document.addEventListener("DOMContentLoaded", start);
