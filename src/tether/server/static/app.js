// tether's web page for a help-desk agent: asks /v1/ask (streamed: the stages, a staff
// reader's unchecked draft as the model writes it, each claim's check, then the result) with
// the key kept in sessionStorage; shows the answer, the claim map (select a claim: its cited
// passage with the evidence span marked, its checks in plain words), the passages, a copy
// of the answer with its sources, and helpful / wrong feedback. Claims and checks are paired
// by the claim, never by position (a public answer's claims omit the withheld ones; its
// checks keep them). On a staff view a staff source is marked "internal — do not share"
// everywhere it appears, the copied text included. Engineer settings (retrieval method,
// scores, passage IDs) sit behind "Advanced"; a refusal is said once, in plain words with what
// to do next (in French for a French question, as the engine's own refusals are), its
// figures (the gate's floor and scores, the judge's probability) behind an "Advanced" of its
// own. Every text from the server is set with textContent, never parsed as HTML.
"use strict";

const KEY = "tether-key";
let ready = true;  // false while /readyz says the models are loading
const $ = (id) => document.getElementById(id);
let flagWords = {};

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function liveUrl(passage) {
  // the live page of a passage read from a website or an export (`source` is its URL; a
  // file's source is a path, not shown as a link): only http and https, never another scheme
  let url;
  try {
    url = new URL(passage.source || "");
  } catch (error) {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  if (passage.anchor && !url.hash) url.hash = passage.anchor;
  return url.href;
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

async function streamAsk(body, onEvent) {
  // POST /v1/ask with stream: each server-sent event (name, parsed data) to onEvent
  const headers = { "Accept": "text/event-stream", "Content-Type": "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers["Authorization"] = "Bearer " + key;
  const response = await fetch("/v1/ask", {
    method: "POST", headers, body: JSON.stringify({ ...body, stream: true }),
  });
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    throw new Error(response.status + ": " + (data && data.detail ? data.detail : response.statusText));
  }
  const audience = response.headers.get("Tether-Audience");
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")), audience);
    }
  }
  return audience;
}

function say(text, refused) {
  $("status").textContent = text;
  $("status").className = refused ? "refused" : "";
  $("why").hidden = true;  // a refusal's numbers belong to the refusal they came with
}

function numbers(text) {
  // an engineer's figures behind a refusal (the gate's floor and scores, the judge's
  // probability), said once, under "Advanced" beneath the status line
  $("why-numbers").textContent = text;
  $("why").hidden = !text;
}

// A refusal in plain words with what to do next, in the question's language where the
// engine's own refusals have one (English otherwise); the figures go under "Advanced".
const REFUSALS = {
  en: {
    weak: "Not answered: no passage found is close enough to this question. Try the words the"
      + " documents use (a product name, a policy or form number), check the “Answer as of”"
      + " date, or ask a person on the team.",
    filtered: "Not answered: ",
    unanswered: "No passage answers this question: ",
  },
  fr: {
    weak: "Pas de réponse : aucun passage trouvé n'est assez proche de cette question."
      + " Essayez les mots des documents (un nom de produit, un numéro de règle ou de"
      + " formulaire), vérifiez la date choisie, ou demandez à une personne de l'équipe.",
    filtered: "Pas de réponse : ",
    unanswered: "Aucun passage ne répond à cette question : ",
  },
};

function refusalWords(result) {
  return REFUSALS[result.language] || REFUSALS.en;
}

function gateNumbers(gate) {
  return "Support gate: " + plural(gate.supporting, "passage") + " cleared the floor "
    + gate.floor.toFixed(3) + " (" + gate.min_support + " needed); the best scored "
    + gate.best.toFixed(3) + ".";
}

function gateRefusal(result) {
  // weak retrieval in plain words; when nothing the filters allow matched (no hits), the
  // engine's own reason, which says what to change
  const gate = result.gate;
  const words = refusalWords(result);
  const filtered = !(result.hits && result.hits.length) && gate.reason
    && !gate.reason.startsWith("retrieval too weak");
  return filtered ? words.filtered + gate.reason : words.weak;
}

function answerabilityNumbers(verdict) {
  if (!verdict) return "";
  const second = verdict.second === null || verdict.second === undefined
    ? "" : "; a language model gave " + verdict.second.toFixed(2);
  return "Answerability judge: " + verdict.probability.toFixed(2) + " against the threshold "
    + verdict.threshold.toFixed(2) + second + "; the question asks for: " + verdict.asked + ".";
}

async function whoami() {
  const hasKey = Boolean(sessionStorage.getItem(KEY));
  try {
    const { data } = await api("/v1/whoami");
    const anonymous = data.name === "anonymous";
    $("audience").textContent = data.audience + (anonymous ? " (no key)" : " · " + data.name);
    $("audience").className = "badge " + data.audience;
    $("view-box").hidden = data.audience !== "staff";
    $("health-open").hidden = data.audience !== "staff";
    if (data.audience !== "staff") $("health-box").hidden = true;
    $("view").value = data.audience;
    $("key").placeholder = anonymous ? "optional: paste an access key" : "paste your access key";
    $("key-prompt").hidden = true;
    $("ask").disabled = false;
    if ($("status").className === "refused") say("", false);
  } catch (error) {
    $("audience").textContent = "no access";
    $("audience").className = "badge";
    $("view-box").hidden = true;
    $("health-open").hidden = true;
    $("health-box").hidden = true;
    if (error.message.startsWith("401") && !hasKey) {
      // no key yet where one is needed: a prompt, not an error
      $("key-prompt").hidden = false;
      $("key").placeholder = "paste your access key";
      $("ask").disabled = true;
      say("", false);
    } else if (error.message.startsWith("401")) {
      $("key-prompt").hidden = true;
      $("ask").disabled = true;
      say("That access key was not accepted. Check it, or ask your team for a new one.", true);
    } else {
      say(error.message, true);
    }
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

const INTERNAL = "internal — do not share";

function internalMark() {
  // a staff source on a staff view: never to be pasted to a customer
  return el("span", INTERNAL, "internal");
}

function accessOf(result) {
  // each chunk ID the result knows (passages given to the model, hits) → its access label
  const access = new Map();
  for (const hit of result.hits || []) access.set(hit.chunk_id, hit.access);
  for (const p of (result.context && result.context.passages) || []) access.set(p.chunk_id, p.access);
  return access;
}

function sameIds(a, b) {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

function claimMap(result) {
  // The claims to show, each with its own check, paired by identity (an `index` field when
  // both sides have one, else the claim's text and citations, else its text), never by
  // position: a public answer's claims omit the withheld ones while its checks keep them.
  // A public view shows only the answer's claims that no check withholds or removes; staff
  // see every checked claim, marked.
  const checks = result.checks || [];
  const claims = result.answer ? result.answer.claims : [];
  const used = new Set();
  const free = (j) => !used.has(j);
  const find = (claim) => {
    let j = -1;
    if (Number.isInteger(claim.index)) j = checks.findIndex((c, k) => free(k) && c.index === claim.index);
    if (j < 0) j = checks.findIndex((c, k) => free(k) && c.claim === claim.text && sameIds(c.chunk_ids, claim.chunk_ids));
    if (j < 0) j = checks.findIndex((c, k) => free(k) && c.claim === claim.text);
    if (j >= 0) used.add(j);
    return j;
  };
  const paired = claims.map((claim) => ({ claim, j: find(claim) }));
  const items = [];
  // in the checks' order (the model's claims in order), the answer's claims where paired
  checks.forEach((check, j) => {
    const hit = paired.find((p) => p.j === j);
    items.push({ text: hit ? hit.claim.text : check.claim, chunk_ids: hit ? hit.claim.chunk_ids : check.chunk_ids,
      check, inAnswer: Boolean(hit) });
  });
  for (const p of paired) {
    if (p.j < 0) items.push({ text: p.claim.text, chunk_ids: p.claim.chunk_ids, check: null, inAnswer: true });
  }
  const publicView = result.audience !== "staff";
  const shown = items.filter((item) => !publicView
    || (item.inAnswer && !(item.check && (item.check.withheld || item.check.removed))));
  return {
    shown,
    withheld: checks.filter((c) => c.withheld).length,
    removed: checks.filter((c) => c.removed).length,
  };
}

function plural(n, word) {
  return n + " " + word + (n === 1 ? "" : "s");
}

function showClaim(result, items, n) {
  const item = items[n];
  const check = item.check;
  const staffView = result.audience === "staff";
  const access = accessOf(result);
  for (const button of $("claims").querySelectorAll("button")) {
    button.setAttribute("aria-pressed", String(button.dataset.n === String(n)));
  }
  $("passage").hidden = false;
  $("passage-claim").textContent = item.text;
  const checks = $("checks");
  checks.replaceChildren();
  if (!check) checks.append(el("li", "not checked"));
  else if (check.ok) checks.append(el("li", "ok: every check passed", "verdict ok"));
  if (check && check.withheld) checks.append(el("li", "withheld from a public reader"));
  if (check && check.removed) checks.append(el("li", "removed by --strict"));
  for (const flag of check ? check.flags : []) checks.append(el("li", plain(flag)));
  const cited = $("cited");
  cited.replaceChildren();
  const passages = result.context ? result.context.passages : [];
  for (const id of item.chunk_ids) {
    const passage = passages.find((p) => p.chunk_id === id);
    if (!passage) {
      cited.append(el("p", "passage " + id + " was not among the passages given to the model"));
      continue;
    }
    const box = el("article");
    const title = el("h4", passage.title);
    if (staffView && access.get(id) === "staff") title.append(" ", internalMark());
    box.append(title);
    const meta = el("dl");
    const rows = [["version", passage.version], ["section", passage.section],
      ["in force", inForce(passage.effective_from, passage.effective_to)],
      ["type", passage.doc_type], ["access", passage.access], ["passage ID", passage.chunk_id]];
    for (const [name, value] of rows) {
      const cls = name === "passage ID" ? "adv" : undefined;
      meta.append(el("dt", name, cls), el("dd", value, cls));
    }
    const live = liveUrl(passage);
    if (live) {
      const link = el("a", live, "live");
      link.setAttribute("href", live);
      link.setAttribute("rel", "noopener noreferrer");
      link.setAttribute("target", "_blank");
      const where = el("dd");
      where.append(link);
      meta.append(el("dt", "page"), where);
    }
    box.append(meta, marked(passage, check ? check.evidence : []));
    cited.append(box);
  }
}

let current = null;  // the result shown (for copy and feedback)

function answerText(result, inAnswer, withheld) {
  // the answer's text as a reader sees it: for a public reader with a claim withheld, the
  // claims left (`inAnswer`) joined; else the answer as it came
  if (!result.answer) return "";
  if (result.audience !== "staff" && withheld) return inAnswer.map((item) => item.text).join(" ");
  return result.answer.answer;
}

function showResult(result) {
  current = result;
  $("answer").classList.remove("draft");
  $("result").hidden = false;
  $("passage").hidden = true;
  // a claim withheld from a public reader is never shown to one; staff see it marked
  const staffView = result.audience === "staff";
  const access = accessOf(result);
  const internal = (ids) => staffView && ids.some((id) => access.get(id) === "staff");
  const { shown, withheld, removed } = claimMap(result);
  const inAnswer = shown.filter((item) => item.inAnswer);
  const answer = answerText(result, inAnswer, withheld);
  $("answer").textContent = answer;
  const answerMark = $("answer-internal");
  answerMark.textContent = INTERNAL;
  answerMark.hidden = !internal(inAnswer.flatMap((item) => item.chunk_ids));
  const notice = result.notice || (!staffView && withheld ? plural(withheld, "claim") + " withheld." : "");
  $("notice").textContent = notice;
  $("notice").hidden = !notice;
  if (result.refused) {
    const gate = result.gate;
    const why = result.refused_by === "gate" && gate
      ? gateRefusal(result)
      : result.refused_by === "answerability"
        ? refusalWords(result).unanswered + ((result.answerability && result.answerability.reason) || result.why_refused || "")
        : result.refused_by === "verifier"
          ? "No checked claim can be shown: " + (result.notice || result.why_refused || "")
          : "Refused by the " + (result.refused_by === "strict" ? "strict mode" : "model") + ": " + (result.why_refused || "");
    say(why, true);
    if (result.refused_by === "gate" && gate) numbers(gateNumbers(gate));
    else if (result.refused_by === "answerability") numbers(answerabilityNumbers(result.answerability));
  } else if (result.status === "no_answer") {
    say("No answer: " + (result.problem ? result.problem.detail : "the provider failed"), true);
  } else if (result.status === "flagged") {
    say("Answered, with flagged claims: read their checks.", false);
  } else {
    const hiddenCount = (staffView ? 0 : withheld) + removed;
    say(hiddenCount
      ? "Answered; every claim shown passed its checks (" + plural(hiddenCount, "claim") + " not shown: see the note)."
      : "Answered; every claim passed its checks.", false);
  }
  const list = $("claims");
  list.replaceChildren();
  shown.forEach((item, n) => {
    const check = item.check;
    const button = el("button", item.text);
    button.type = "button";
    button.dataset.n = String(n);
    button.setAttribute("aria-pressed", "false");
    const verdict = !check ? "" : check.withheld ? "withheld" : check.removed ? "removed" : check.ok ? "ok" : "flagged";
    if (verdict) button.append(el("span", verdict, "verdict " + (verdict === "ok" ? "ok" : "flagged")));
    if (internal(item.chunk_ids)) button.append(" ", internalMark());
    button.addEventListener("click", () => showClaim(result, shown, n));
    const row = el("li");
    row.append(button);
    list.append(row);
  });
  const rows = $("hits");
  rows.replaceChildren();
  for (const hit of result.hits) {
    const row = el("tr");
    const doc = el("td", hit.title + " v" + hit.version);
    if (staffView && hit.access === "staff") doc.append(" ", internalMark());
    row.append(el("td", hit.rank), el("td", hit.score.toFixed(3), "adv"),
      doc, el("td", hit.section), el("td", hit.chunk_id, "adv"));
    rows.append(row);
  }
  $("hits-box").hidden = result.hits.length === 0;
  $("result").hidden = shown.length === 0 && !answer && !notice;
  $("claims-hint").hidden = shown.length === 0;
  $("copy").hidden = !answer;
  $("copied").textContent = "";
  showFeedback(result);
}

function exportText(result) {
  // the answer a reader was shown, then its sources numbered; on a staff view each staff
  // source is marked internal (a public view has none: its passages are public)
  const staffView = result.audience === "staff";
  const access = accessOf(result);
  const { shown, withheld } = claimMap(result);
  const inAnswer = shown.filter((item) => item.inAnswer
    && !(item.check && (item.check.withheld || item.check.removed)));
  const text = answerText(result, inAnswer, withheld);
  const passages = result.context ? result.context.passages : [];
  const ids = [...new Set(inAnswer.flatMap((item) => item.chunk_ids))];
  const lines = [];
  ids.forEach((id) => {
    const p = passages.find((x) => x.chunk_id === id);
    if (!p) return;
    const internal = staffView && access.get(id) === "staff" ? " [" + INTERNAL + "]" : "";
    const where = [p.title + " v" + p.version, p.section].filter(Boolean).join(", ");
    const live = liveUrl(p);
    lines.push("[" + (lines.length + 1) + "] " + where + " (in force " + inForce(p.effective_from, p.effective_to) + ")" + internal + (live ? " " + live : ""));
  });
  const anyInternal = lines.some((line) => line.includes(INTERNAL));
  return (anyInternal ? INTERNAL.toUpperCase() + "\n\n" : "") + text
    + (lines.length ? "\n\nSources:\n" + lines.join("\n") : "");
}

async function copyAnswer() {
  if (!current) return;
  const text = exportText(current);
  try {
    await navigator.clipboard.writeText(text);
  } catch (error) {
    const area = el("textarea", text);
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  $("copied").textContent = "Copied.";
}

function showFeedback(result) {
  const box = $("feedback");
  const id = result.audit_id;
  box.hidden = !(Number.isInteger(id) && (result.answer || result.refused));
  $("wrong-form").hidden = true;
  $("feedback-said").textContent = "";
  for (const b of [$("helpful"), $("wrong")]) b.disabled = false;
  const select = $("right-passage");
  select.replaceChildren(el("option", "none of these / not sure"));
  select.firstChild.value = "";
  const seen = new Set();
  const passages = (result.context && result.context.passages) || [];
  for (const p of [...passages, ...(result.hits || [])]) {
    if (seen.has(p.chunk_id)) continue;
    seen.add(p.chunk_id);
    const option = el("option", p.title + (p.section ? " — " + p.section : ""));
    option.value = p.chunk_id;
    select.append(option);
  }
}

async function sendFeedback(verdict) {
  if (!current || !Number.isInteger(current.audit_id)) return;
  const body = { audit_id: current.audit_id, verdict };
  if (verdict === "wrong") {
    const note = $("feedback-note").value.trim();
    if (note) body.note = note;
    if ($("right-passage").value) body.chunk_id = $("right-passage").value;
  }
  try {
    await api("/v1/feedback", body);
    $("feedback-said").textContent = verdict === "helpful"
      ? "Thank you: marked helpful." : "Thank you: marked wrong. The team will see it.";
    $("wrong-form").hidden = true;
    for (const b of [$("helpful"), $("wrong")]) b.disabled = true;
  } catch (error) {
    $("feedback-said").textContent = "Not saved: " + error.message;
  }
}

const STAGES = {
  retrieval: "Found passages; checking that they answer the question…",
  gate: "Writing the answer…",
  answerability: "Writing the answer…",
  answer: "Checking each claim against its passages…",
};

function startDraft() {
  // a streamed answer: the draft shown as it is written, marked as not yet checked
  current = null;
  $("result").hidden = false;
  $("passage").hidden = true;
  $("answer").textContent = "";
  $("answer").classList.add("draft");
  $("answer-internal").hidden = true;
  $("notice").hidden = true;
  $("claims").replaceChildren();
  $("claims-hint").hidden = true;
  $("copy").hidden = true;
  $("feedback").hidden = true;
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
  $("result").hidden = true;
  $("feedback").hidden = true;
  say(ready ? "Searching…" : "Waiting for the models to load, then searching…", false);
  let final = null;
  let failed = null;
  try {
    await streamAsk(body, (name, data, audience) => {
      if (name === "text") {
        if (!$("answer").classList.contains("draft")) startDraft();
        $("answer").append(document.createTextNode(data.text));
        say("Writing the answer (a draft: its claims are not checked yet)…", false);
      } else if (name === "result") {
        final = data;
        $("result").dataset.audience = audience || data.audience;
      } else if (name === "error") {
        failed = data;
      } else if (name === "check") {
        say("Checking each claim against its passages… (" + (data.index + 1) + " checked)", false);
      } else if (STAGES[name]) {
        say(STAGES[name], false);
      }
    });
    if (final) showResult(final);
    else say((failed ? failed.status + ": " + failed.detail : "The answer did not arrive."), true);
  } catch (error) {
    say(error.message, true);
  } finally {
    $("ask").disabled = false;
  }
}

async function watchReady() {
  // GET /readyz until the models are loaded; meanwhile say so (questions wait in line)
  let data = null;
  try {
    const response = await fetch("/readyz");
    data = await response.json();
  } catch (error) {
    return;
  }
  const banner = $("ready");
  ready = Boolean(data && data.ready);
  if (ready) {
    banner.hidden = true;
    return;
  }
  banner.hidden = false;
  if (data.status === "failed") {
    banner.className = "banner bad";
    banner.textContent = "The models did not load: " + data.detail + ". Questions may fail until this is fixed.";
    return;
  }
  banner.className = "banner";
  banner.textContent = "Warming up: loading the models (" + Math.round(data.seconds) + " s so far). You can ask now: your question waits until they are ready.";
  setTimeout(watchReady, 2000);
}

const HEALTH_SECTIONS = [
  ["Content gaps", ["gap"]],
  ["Contradictions", ["contradiction"]],
  ["Staleness", ["stale", "superseded_cited", "missing_link"]],
  ["Hygiene", ["unlabelled", "instructions", "near_duplicate", "over_window", "unreadable"]],
];

async function openHealth() {
  // the health report (staff keys only), rendered as text nodes
  const box = $("health-box");
  box.hidden = false;
  $("health-summary").textContent = "Checking the collection… (this can take a minute)";
  $("health").replaceChildren();
  let report;
  try {
    report = (await api("/v1/health?as_of=" + encodeURIComponent($("as-of").value || "today"))).data;
  } catch (error) {
    $("health-summary").textContent = "No report: " + error.message;
    return;
  }
  const looked = report.looked_at || {};
  $("health-summary").textContent = "On " + report.as_of + ": " + (looked.documents || 0) + " documents, "
    + (looked.chunks || 0) + " passages, " + (looked.audit_entries || 0) + " recorded answers ("
    + report.seconds.toFixed(1) + " s). Internal: it quotes staff documents and recorded questions.";
  for (const [name, kinds] of HEALTH_SECTIONS) {
    const found = report.findings.filter((f) => kinds.includes(f.kind));
    const part = el("section");
    part.append(el("h3", name + " (" + found.length + ")"));
    if (!found.length) part.append(el("p", "Nothing found.", "hint"));
    for (const f of found) {
      const item = el("article", undefined, "finding " + f.kind);
      item.append(el("h4", f.title));
      if (f.owners.length) item.append(el("p", "Owner: " + f.owners.join(", "), "hint"));
      if (f.detail) item.append(el("p", f.detail));
      if (f.examples.length) {
        const asked = el("ul");
        for (const q of f.examples) asked.append(el("li", "asked: " + q));
        item.append(asked);
      }
      for (const q of f.evidence) {
        const quote = el("blockquote");
        quote.append(el("cite", q.title + " v" + q.version + (q.section ? " · " + q.section : "") + " · " + q.access));
        quote.append(document.createTextNode(q.text));
        item.append(quote);
      }
      part.append(item);
    }
    $("health").append(part);
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
  $("copy").addEventListener("click", copyAnswer);
  $("health-open").addEventListener("click", openHealth);
  $("helpful").addEventListener("click", () => sendFeedback("helpful"));
  $("wrong").addEventListener("click", () => {
    $("wrong-form").hidden = false;
    $("feedback-note").focus();
  });
  $("wrong-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sendFeedback("wrong");
  });
  const advanced = () => document.body.classList.toggle("advanced", $("advanced").open);
  $("advanced").addEventListener("toggle", advanced);
  advanced();
  watchReady();
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
