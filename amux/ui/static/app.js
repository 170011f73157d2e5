// amux memory page. Memory is untrusted data: every string of it goes into the page as
// text (textContent, attribute values); only the server's inert Markdown rendering
// (amux/ui/render.py: raw HTML off) is set as HTML, and the Content-Security-Policy
// forbids any script or load but this file and its stylesheet.
"use strict";

const KEY = "amux-ui-key";
const state = { me: null, scope: null, head: null, editing: null, live: 0, mine: [],
  copies: new Map() }; // copies: a document's sync conflict copies, from the last listing
// What this page changes itself: its own writes are not news when the live watch sees them.
const WRITES = new Set(["save", "forget", "restore", "purge"]);
const MINE_SECONDS = 30;

// -- the key of this start: from the address's fragment, then kept by this origin ------
function bootKey() {
  const found = /(?:^#|&)key=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (found) {
    localStorage.setItem(KEY, found[1]);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return localStorage.getItem(KEY) || "";
}

class ApiError extends Error {
  constructor(status, wire) {
    const error = (wire && wire.error) || { code: "internal", message: "HTTP " + status };
    super(error.message);
    this.code = error.code;
    this.details = error;
    this.status = status;
  }
}

async function api(name, body) {
  const mine = WRITES.has(name) && body && body.path
    ? { path: body.path, until: Date.now() + MINE_SECONDS * 1000 } : null;
  if (mine) state.mine.push(mine);
  const answer = await fetch("/api/" + name, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Amux-Key": bootKey() },
    body: JSON.stringify(body || {}),
    cache: "no-store",
    credentials: "omit",
  });
  let value = null;
  try { value = await answer.json(); } catch (_) { value = null; }
  if (!answer.ok) {
    if (mine) state.mine = state.mine.filter((entry) => entry !== mine);
    throw new ApiError(answer.status, value);
  }
  return value;
}

// -- building the page from data, as text --------------------------------------------
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function link(params, ...children) {
  const href = "/?" + new URLSearchParams(clean(params)).toString();
  return h("a", { href, onclick: (event) => { event.preventDefault(); go(params); } },
    ...children);
}

function clean(params) {
  const out = {};
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") out[name] = value;
  }
  if (state.scope && !("scope" in out)) out.scope = state.scope;
  return out;
}

function params() {
  return Object.fromEntries(new URLSearchParams(location.search));
}

function go(next) {
  history.pushState(null, "", "/?" + new URLSearchParams(clean(next)).toString());
  show();
}

function short(revision) {
  return revision && revision !== "absent" ? revision.slice(0, 12) : "absent";
}

function age(when) {
  if (!when) return "";
  const seconds = Math.max(0, (Date.now() - Date.parse(when)) / 1000);
  const units = [[86400 * 365, "year"], [86400 * 30, "month"], [86400, "day"],
    [3600, "hour"], [60, "minute"]];
  for (const [size, name] of units) {
    const count = Math.floor(seconds / size);
    if (count >= 1) return count + " " + name + (count > 1 ? "s" : "") + " ago";
  }
  return "just now";
}

function when(at) {
  return h("time", { datetime: at, title: at }, age(at));
}

function bytes(count) {
  if (count < 1024) return count + " B";
  if (count < 1024 * 1024) return (count / 1024).toFixed(1) + " KiB";
  return (count / 1024 / 1024).toFixed(1) + " MiB";
}

function author(change) {
  if (!change) return h("span", { class: "muted" }, "edited outside amux");
  const parts = [change.agent || change.principal || "by hand"];
  const out = h("span", { class: "author" }, parts.join(" "));
  if (change.source) out.append(" ", source(change));
  if (change.session) {
    out.append(" · ", link({ view: "session", session: change.session },
      "session " + change.session.slice(0, 8)));
  }
  return out;
}

function notice(text, ...actions) {
  const box = document.getElementById("notice");
  box.replaceChildren(h("span", {}, text), ...actions,
    h("button", { type: "button", class: "close", onclick: () => { box.hidden = true; } }, "×"));
  box.hidden = false;
}

function failure(error) {
  const hint = {
    unauthenticated: "Open the address `amux ui` printed: it carries the key of this start.",
    memory_disabled: "Memory is off: the Hub's owner turns it on under Health.",
    hub_unreachable: "The Hub does not answer: `amux hub start`, then reload.",
  }[error.code] || "";
  return h("div", { class: "error", role: "alert" },
    h("strong", {}, error.code || "error"), ": ", error.message,
    hint ? h("p", {}, hint) : null);
}

function confirmAction(text) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  return new Promise((resolve) => {
    const ok = document.getElementById("confirm-ok");
    const cancel = document.getElementById("confirm-cancel");
    const done = (value) => {
      ok.onclick = cancel.onclick = null;
      dialog.close();
      resolve(value);
    };
    ok.onclick = () => done(true);
    cancel.onclick = () => done(false);
    dialog.showModal();
  });
}

async function main(node) {
  const area = document.getElementById("main");
  area.replaceChildren(node);
}

// -- views ----------------------------------------------------------------------------
const VIEWS = {
  browse: viewBrowse,
  doc: viewDocument,
  edit: viewEdit,
  new: viewEdit,
  history: viewHistory,
  version: viewVersion,
  diff: viewDiff,
  session: viewSession,
  search: viewSearch,
  health: viewHealth,
};

async function show() {
  const p = params();
  if (p.scope) state.scope = p.scope;
  syncScope();
  if (p.view !== "edit" && p.view !== "new") state.editing = null;
  const view = VIEWS[p.view] || viewBrowse;
  document.body.dataset.view = p.view || "browse";
  try {
    await main(await view(p));
  } catch (error) {
    await main(failure(error));
  }
  document.body.dataset.drawnMs = Math.round(performance.now());
}

async function tree(p) {
  const prefix = p.folder || "";
  const listing = await api("list", { scope: state.scope, path_prefix: prefix || null });
  const root = { folders: new Map(), documents: [] };
  for (const document of listing.documents) {
    const parts = document.path.split("/");
    let node = root;
    for (const part of parts.slice(0, -1)) {
      if (!node.folders.has(part)) node.folders.set(part, { folders: new Map(), documents: [] });
      node = node.folders.get(part);
    }
    node.documents.push(document);
  }
  state.copies = new Map();
  for (const document of listing.documents) {
    if (!document.conflict_of) continue;
    if (!state.copies.has(document.conflict_of)) state.copies.set(document.conflict_of, []);
    state.copies.get(document.conflict_of).push(document.path);
  }
  const small = listing.documents.length <= 200; // every folder open; else the top only
  const render = (node, depth) => {
    const items = [];
    for (const [name, folder] of node.folders) {
      const open = depth < 1 || small;
      const details = h("details", { open }, h("summary", {}, name + "/"),
        open ? render(folder, depth + 1) : null);
      if (!open) { // a closed folder's documents are drawn when it is first opened
        details.addEventListener("toggle", () => {
          if (details.open && details.children.length < 2) {
            details.append(render(folder, depth + 1));
          }
        });
      }
      items.push(h("li", { class: "folder" }, details));
    }
    for (const document of node.documents) {
      const name = document.path.split("/").pop();
      const mark = document.conflict_of
        ? h("span", { class: "badge conflict-mark" }, "sync conflict of "
          + document.conflict_of.split("/").pop())
        : state.copies.has(document.path)
          ? h("span", { class: "badge conflict-mark" }, "sync conflict: keep one") : null;
      items.push(h("li", { class: document.conflict_of ? "document conflict-copy" : "document",
        "data-path": document.path },
        link({ view: "doc", path: document.path }, name), mark,
        h("span", { class: "meta" }, bytes(document.bytes), " · ", short(document.revision),
          " · ", when(document.modified_at), " · ", author(document.changed))));
    }
    return h("ul", { class: "tree" }, items);
  };
  const filter = h("input", { type: "search", placeholder: "folder, e.g. projects/",
    value: prefix, "aria-label": "folder filter",
    onkeydown: (event) => {
      if (event.key === "Enter") go({ view: "browse", folder: event.target.value });
    } });
  return h("section", { class: "tree-pane" },
    h("div", { class: "pane-head" }, filter,
      link({ view: "new", folder: prefix }, "+ New document")),
    listing.documents.length ? render(root, 0)
      : h("p", { class: "muted" }, prefix ? "No document under " + prefix
        : "No documents yet: agents save here as they work."),
    listing.truncated ? h("p", { class: "warning" },
      "More documents than shown: narrow with a folder.") : null);
}

async function viewBrowse(p) {
  return h("div", { class: "split" }, await tree(p),
    h("section", { class: "doc-pane" }, h("p", { class: "muted" },
      "Pick a document to read it, its history and who wrote it.")));
}

async function viewDocument(p) {
  const [pane, document] = await Promise.all([tree(p), api("read", {
    scope: state.scope, path: p.path })]);
  return h("div", { class: "split" }, pane, h("section", { class: "doc-pane" },
    documentPane(document, p)));
}

function documentPane(document, p) {
  if (!document.exists) {
    return h("div", {}, h("h2", {}, document.path),
      h("p", { class: "muted" }, "No such document in this scope. Its past, if any, is in ",
        link({ view: "history", path: document.path }, "its history"), "."));
  }
  const raw = p.raw === "1";
  const fields = document.front_matter;
  const body = raw ? h("pre", { class: "raw" }, document.content)
    : h("div", { class: "markdown" });
  if (!raw) body.innerHTML = document.html; // inert: see amux/ui/render.py
  for (const anchor of body.querySelectorAll("a[data-doc]")) {
    anchor.addEventListener("click", (event) => {
      event.preventDefault();
      go({ view: "doc", path: anchor.dataset.doc });
    });
  }
  return h("article", { class: "document-view", "data-revision": document.revision },
    h("h2", {}, document.path),
    h("p", { class: "meta" }, "revision ", h("code", {}, short(document.revision)),
      " · changed ", when(document.modified_at), " · ", author(document.changed)),
    document.stale_note ? h("p", { class: "warning stale" }, document.stale_note) : null,
    document.conflict_of ? syncConflict(document)
      : (state.copies.get(document.path) || []).length ? h("p", { class: "conflict" },
        "A sync kept the other side's text of this document beside it: ",
        state.copies.get(document.path).map((copy, index) => [index ? ", " : "",
          link({ view: "doc", path: copy }, copy.split("/").pop())]),
        ". Open it to compare and keep one.") : null,
    h("p", { class: "actions" },
      link({ view: "doc", path: document.path, raw: raw ? null : "1" },
        raw ? "Rendered" : "Raw"),
      link({ view: "edit", path: document.path }, "Edit"),
      link({ view: "history", path: document.path }, "History"),
      h("button", { type: "button", class: "danger", onclick: () => forget(document) },
        "Forget")),
    fields ? h("dl", { class: "front-matter" }, Object.entries(fields).map(
      ([name, value]) => [h("dt", {}, name), h("dd", {}, value)])) : null,
    body);
}

// A sync's conflict copy (NAME.sync-conflict-<hex>.md, amux/memory/conflicts.py): the other
// side's text of NAME.md, kept because both sides changed the same lines. Either text wins
// by an ordinary conditional save and forget; both stay in history.
function syncConflict(copy) {
  const original = copy.original || { exists: false };
  const keep = async (text) => {
    const question = text === null
      ? "Keep " + copy.conflict_of + " as it is and forget this copy? The copy's text stays "
        + "in history."
      : "Save this copy's text as " + copy.conflict_of + " and forget the copy? "
        + copy.conflict_of + "'s text now stays in history.";
    if (!await confirmAction(question)) return;
    try {
      if (text !== null) {
        await api("save", { scope: state.scope, path: copy.conflict_of, content: text,
          expected_revision: original.exists ? original.revision : "absent" });
      }
      await api("forget", { scope: state.scope, path: copy.path,
        expected_revision: copy.revision });
    } catch (error) {
      notice(error.code === "revision_conflict"
        ? "Changed meanwhile, nothing overwritten: " + error.message + " Open it again."
        : error.message);
      return;
    }
    notice("Resolved: " + copy.conflict_of + " kept "
      + (text === null ? "its own text" : "the other side's text") + "; the copy is forgotten.");
    go({ view: "doc", path: copy.conflict_of });
  };
  return h("div", { class: "conflict sync-conflict", role: "note" },
    h("h3", {}, "Sync conflict: the other side's text of " + copy.conflict_of),
    h("p", {}, "A sync kept this text beside ", link({ view: "doc", path: copy.conflict_of },
      copy.conflict_of), " because both sides changed the same lines. Nothing was lost: "
      + "compare them and keep one, or edit " + copy.conflict_of + " to merge both."),
    h("div", { class: "sides" },
      h("div", {}, h("h4", {}, copy.conflict_of + (original.exists ? " (this side)"
        : " (forgotten here)")), h("pre", { class: "kept" }, original.exists
        ? original.content : "")),
      h("div", {}, h("h4", {}, "This copy (the other side)"),
        h("pre", { class: "copy" }, copy.content))),
    h("p", { class: "actions" },
      h("button", { type: "button", class: "primary", onclick: () => keep(copy.content) },
        "Use this text"),
      h("button", { type: "button", onclick: () => keep(null) },
        "Keep " + copy.conflict_of.split("/").pop()),
      link({ view: "edit", path: copy.conflict_of }, "Edit " + copy.conflict_of
        .split("/").pop() + " to merge")));
}

async function forget(document) {
  const ok = await confirmAction("Forget " + document.path + "? Agents will no longer find "
    + "it. Its versions stay in history: Undo below, or History → Restore, brings it back.");
  if (!ok) return;
  try {
    await api("forget", { scope: state.scope, path: document.path,
      expected_revision: document.revision });
  } catch (error) {
    notice(error.message);
    return;
  }
  notice("Forgot " + document.path + ".", h("button", { type: "button", onclick: async () => {
    await api("restore", { scope: state.scope, path: document.path,
      revision: document.revision, expected_revision: "absent" });
    notice("Restored " + document.path + ".");
    go({ view: "doc", path: document.path });
  } }, "Undo"));
  go({ view: "browse" });
}

async function viewEdit(p) {
  const creating = p.view === "new";
  let document = { path: p.path || (p.folder || ""), content: "", revision: "absent",
    exists: false };
  if (!creating) document = await api("read", { scope: state.scope, path: p.path });
  if (!creating && !document.exists) return documentPane(document, p);
  const expected = document.exists ? document.revision : "absent";
  state.editing = { path: document.path, revision: expected };
  const path = h("input", { type: "text", value: document.path, required: true,
    "aria-label": "path", readonly: !creating, placeholder: "notes/topic.md" });
  const text = h("textarea", { "aria-label": "content", rows: 24, spellcheck: "false" });
  text.value = document.content;
  const result = h("div", { class: "result" });
  const save = async (revision) => {
    try {
      const written = await api("save", { scope: state.scope, path: path.value,
        content: text.value, expected_revision: revision });
      state.editing = null;
      notice("Saved " + written.path + " (revision " + short(written.revision) + ").");
      go({ view: "doc", path: written.path });
    } catch (error) {
      if (error.code === "revision_conflict") {
        result.replaceChildren(await conflict(path.value, text, save));
      } else {
        result.replaceChildren(failure(error));
      }
    }
  };
  return h("section", { class: "editor" },
    h("h2", {}, creating ? "New document" : "Edit " + document.path),
    h("p", { class: "meta" }, creating ? "Saved only if no document has this path yet."
      : ["Editing revision ", h("code", {}, short(expected)),
        ": saved only if nobody changed it meanwhile."]),
    path, text,
    h("p", { class: "actions" },
      h("button", { type: "button", class: "primary", onclick: () => save(expected) }, "Save"),
      creating ? link({ view: "browse" }, "Cancel")
        : link({ view: "doc", path: document.path }, "Cancel")),
    result);
}

async function conflict(path, text, save) {
  const current = await api("read", { scope: state.scope, path });
  const theirs = current.exists ? current.content : "";
  const revision = current.exists ? current.revision : "absent";
  return h("div", { class: "conflict", role: "alert" },
    h("h3", {}, "Changed meanwhile: nothing was overwritten"),
    h("p", {}, current.exists
      ? ["Revision ", h("code", {}, short(revision)), " was saved ", when(current.modified_at),
        " by ", author(current.changed), ". Your text is still in the editor above."]
      : "The document was forgotten meanwhile. Your text is still in the editor above."),
    h("div", { class: "sides" },
      h("div", {}, h("h4", {}, "Yours (not saved)"), h("pre", { class: "mine" }, text.value)),
      h("div", {}, h("h4", {}, "On the Hub now"), h("pre", { class: "theirs" }, theirs))),
    h("p", { class: "actions" },
      h("button", { type: "button", class: "primary", onclick: () => save(revision) },
        "Save mine over it"),
      h("button", { type: "button", onclick: () => { text.value = theirs;
        state.editing = { path, revision }; } }, "Take theirs into the editor")));
}

// Where a change came from when not from an agent's or a person's write here: an import
// ("claude memory") or a sync ("sync origin": the other side's change, applied here).
function source(change) {
  return h("span", { class: "source muted" }, "(" + change.source + ")");
}

function changeRow(change, p, pick) {
  const documentLink = change.operation === "forget" ? change.path
    : link({ view: "doc", path: change.path }, change.path);
  const row = h("tr", { "data-commit": change.commit, "data-operation": change.operation },
    h("td", {}, when(change.at)),
    h("td", {}, change.operation),
    h("td", {}, documentLink),
    h("td", {}, change.principal || "by hand"),
    h("td", {}, change.agent || "", change.source ? source(change) : null),
    h("td", {}, change.session ? link({ view: "session", session: change.session },
      change.session.slice(0, 12)) : ""),
    h("td", {}, change.operation === "forget" ? h("span", { class: "muted" }, "—")
      : link({ view: "version", path: change.path, revision: change.revision },
        h("code", {}, short(change.revision)))),
    h("td", { class: "row-actions" }, pick ? pick(change) : null));
  return row;
}

async function timeline(title, query, p, pick) {
  const table = h("tbody", {});
  const more = h("p", {});
  let before = null;
  const load = async () => {
    const page = await api("log", { scope: state.scope, ...query, before });
    for (const change of page.changes) table.append(changeRow(change, p, pick));
    before = page.changes.length ? page.changes[page.changes.length - 1].commit : before;
    more.replaceChildren(page.more ? h("button", { type: "button", onclick: load },
      "Older changes") : h("span", { class: "muted" },
      table.children.length ? "The beginning of history." : "No changes recorded."));
  };
  await load();
  return h("section", { class: "timeline" }, h("h2", {}, title),
    h("table", {}, h("thead", {}, h("tr", {}, ["When", "Operation", "Document", "Principal",
      "Agent", "Session", "Version", ""].map((name) => h("th", {}, name)))), table), more);
}

async function viewHistory(p) {
  if (!p.path) return timeline("History of this scope", {}, p, null);
  const chosen = [];
  const compare = h("button", { type: "button", disabled: true, onclick: () => go({
    view: "diff", path: p.path, from: chosen[1], to: chosen[0] }) }, "Compare the two picked");
  const pick = (change) => {
    if (change.operation === "forget") return null;
    return [h("label", {}, h("input", { type: "checkbox", "aria-label": "pick",
      onchange: (event) => {
        if (event.target.checked) chosen.push(change.revision);
        else chosen.splice(chosen.indexOf(change.revision), 1);
        chosen.sort((a, b) => order.indexOf(a) - order.indexOf(b));
        compare.disabled = chosen.length !== 2;
      } }), " pick"),
    " ", link({ view: "diff", path: p.path, to: change.revision }, "diff")];
  };
  const order = [];
  const section = await timeline("History of " + p.path, { path: p.path }, p, (change) => {
    order.push(change.revision);
    return pick(change);
  });
  const purge = state.me && state.me.owner ? h("button", { type: "button", class: "danger",
    onclick: async () => {
      const current = await api("read", { scope: state.scope, path: p.path });
      const ok = await confirmAction("Erase from history every version of " + p.path
        + (current.exists ? " except its current content (revision "
          + short(current.revision) + ")" : " (it does not exist now)")
        + "? No other document is touched. This cannot be undone.");
      if (!ok) return;
      try {
        const done = await api("purge", { scope: state.scope, path: p.path });
        notice("Erased " + done.purged + " past version(s) of " + p.path + ".");
      } catch (error) { notice(error.message); return; }
      show();
    } }, "Erase past versions…") : null;
  section.append(h("p", { class: "actions" }, compare, " ",
    link({ view: "doc", path: p.path }, "The document"), " ", purge));
  return section;
}

async function viewVersion(p) {
  const [version, current] = await Promise.all([
    api("version", { scope: state.scope, path: p.path, revision: p.revision }),
    api("read", { scope: state.scope, path: p.path })]);
  const body = p.raw === "1" ? h("pre", { class: "raw" }, version.content)
    : h("div", { class: "markdown" });
  if (p.raw !== "1") body.innerHTML = version.html; // inert: see amux/ui/render.py
  const isCurrent = current.exists && current.revision === version.revision;
  const restore = async () => {
    try {
      await api("restore", { scope: state.scope, path: p.path, revision: p.revision,
        expected_revision: current.exists ? current.revision : "absent" });
      notice("Restored " + p.path + " to " + short(p.revision) + ".");
      go({ view: "doc", path: p.path });
    } catch (error) {
      notice(error.code === "revision_conflict" ? "Changed meanwhile: reload and try again."
        : error.message);
    }
  };
  const purge = state.me && state.me.owner && !isCurrent ? h("button", { type: "button",
    class: "danger", onclick: async () => {
      const ok = await confirmAction("Erase version " + short(p.revision) + " of " + p.path
        + " from history? Only this version is erased, nothing else; this cannot be "
        + "undone.");
      if (!ok) return;
      try {
        await api("purge", { scope: state.scope, path: p.path, revision: p.revision });
      } catch (error) { notice(error.message); return; }
      notice("Erased version " + short(p.revision) + " of " + p.path + ".");
      go({ view: "history", path: p.path });
    } }, "Erase this version…") : null;
  return h("article", { class: "version-view" },
    h("h2", {}, p.path, " at ", h("code", {}, short(p.revision))),
    h("p", { class: "meta" }, isCurrent ? "This is the current version."
      : current.exists ? ["The current version is ", h("code", {}, short(current.revision)),
        "."] : "The document does not exist now."),
    h("p", { class: "actions" },
      isCurrent ? null : h("button", { type: "button", class: "primary", onclick: restore },
        "Restore this version"),
      current.exists && !isCurrent ? link({ view: "diff", path: p.path, from: p.revision,
        to: current.revision }, "Diff with current") : null,
      link({ view: "history", path: p.path }, "History"), purge),
    body);
}

async function viewDiff(p) {
  const diff = await api("diff", { scope: state.scope, path: p.path,
    from_revision: p.from || null, to_revision: p.to || null });
  const lines = diff.diff.split("\n").map((line) => h("span", { class:
    line.startsWith("+++") || line.startsWith("---") ? "file"
      : line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "added"
        : line.startsWith("-") ? "removed" : "same" }, line || " "));
  return h("section", { class: "diff-view" },
    h("h2", {}, "Diff of " + p.path),
    h("p", { class: "meta" }, h("code", {}, short(diff.from_revision)), " → ",
      h("code", {}, short(diff.to_revision)), " · ",
      link({ view: "history", path: p.path }, "History")),
    diff.diff ? h("pre", { class: "diff" }, lines) : h("p", { class: "muted" },
      "The two versions are the same."));
}

async function viewSession(p) {
  const section = await timeline("Session " + p.session, { session: p.session }, p, null);
  const documents = new Set([...section.querySelectorAll("tr[data-commit] td:nth-child(3)")]
    .map((cell) => cell.textContent));
  section.insertBefore(h("p", { class: "meta" }, "What amux session " + p.session
    + " changed: " + documents.size + " document(s)."), section.children[1]);
  return section;
}

async function viewSearch(p) {
  const found = await api("search", { scope: state.scope, query: p.q });
  const items = found.results.map((result) => h("li", { class: "result" },
    link({ view: "doc", path: result.path }, result.path),
    result.path_hit && !result.hits.length
      ? h("span", { class: "muted" }, " (path only: no line matches)") : null,
    h("ul", { class: "hits" }, result.hits.map((hit) => h("li", {},
      h("span", { class: "line" }, "line " + hit.line + ": "),
      h("code", {}, hit.snippet), hit.truncated ? "…" : null)))));
  return h("section", { class: "search-view" },
    h("h2", {}, "Search: " + p.q),
    found.incomplete ? h("p", { class: "warning incomplete" },
      "Incomplete: the search stopped at its budget; narrow the words or the folder.")
      : null,
    found.truncated ? h("p", { class: "muted" }, "More matches than shown.") : null,
    items.length ? h("ol", { class: "results" }, items)
      : h("p", { class: "muted" }, "Nothing matches."),
    h("p", { class: "muted" }, found.scanned_files + " document(s) scanned."));
}

async function viewHealth() {
  const [status, doctor] = await Promise.all([api("status", {}),
    api("doctor", { scope: state.scope }).catch((error) => error)]);
  const owner = state.me && state.me.owner;
  const enabled = status.memory_enabled;
  const toggle = owner ? h("button", { type: "button", id: "switch", class: enabled
    ? "danger" : "primary", onclick: async () => {
      const ok = await confirmAction(enabled ? "Turn memory off for every agent on this Hub? "
        + "Files and history are kept." : "Turn memory on for every agent on this Hub?");
      if (!ok) return;
      try { await api("switch", { enabled: !enabled }); } catch (error) {
        notice(error.message); return;
      }
      await loadMe();
      show();
    } }, enabled ? "Turn memory off" : "Turn memory on") : null;
  const findings = doctor instanceof Error ? failure(doctor)
    : h("div", {}, h("p", {}, doctor.documents + " document(s), " + bytes(doctor.bytes)
      + (doctor.incomplete ? " (the check is incomplete)" : "") + "."),
    doctor.findings.length ? h("ul", { class: "findings" }, doctor.findings.map(
      (finding) => h("li", { class: finding.severity }, h("strong", {}, finding.severity),
        " ", finding.category, finding.path ? [" · ", link({ view: "doc",
          path: finding.path }, finding.path)] : null, ": ", finding.message)))
      : h("p", {}, "No findings."));
  return h("section", { class: "health-view" },
    h("h2", {}, "Memory switch"),
    h("p", { class: "switch-state" }, "Memory is ", h("strong", {}, enabled ? "on" : "off"),
      " on this Hub."),
    h("p", { class: "muted" }, "On: agents launched with `amux run` search and save memory. "
      + "Off: their memory calls answer memory_disabled and they work without it; files "
      + "and history stay. The same setting as `amux system config set memory.enabled`."
      + (owner ? "" : " Only the Hub's owner can change it.")),
    toggle,
    h("h2", {}, "The Hub"),
    h("dl", { class: "status" }, [["version", status.version], ["pid", status.pid],
      ["memory root", status.memory_root], ["isolation", status.isolation_enabled ? "on"
        : "off"], ["history caught up", status.history_caught_up ? "yes" : "no"]].map(
      ([name, value]) => [h("dt", {}, name), h("dd", {}, String(value))])),
    h("h2", {}, "Memory doctor"), findings);
}

// -- scopes, live changes -------------------------------------------------------------
async function loadMe() {
  state.me = await api("me", {});
  const wanted = params().scope;
  const bindings = state.me.scopes.map((scope) => scope.binding);
  state.scope = bindings.includes(wanted) ? wanted : state.me.own_scope || bindings[0] || null;
  const select = document.getElementById("scope");
  select.replaceChildren(...state.me.scopes.map((scope) => h("option",
    { value: scope.binding || "" }, (scope.principal || scope.binding || "your scope")
      + (scope.binding === state.me.own_scope ? " (yours)" : ""))));
  select.disabled = state.me.scopes.length < 2;
  document.body.dataset.memory = state.me.memory_enabled ? "on" : "off";
}

function syncScope() {
  const select = document.getElementById("scope");
  if (state.scope) select.value = state.scope;
}

async function watch() {
  const mark = document.getElementById("live");
  const run = ++state.live;
  let after = null;
  let last = null;
  let first = true;
  // A purge rewrites history (new commit ids, the same changes): only a change not seen
  // before is news.
  const same = (a, b) => a && b && ["at", "path", "operation", "revision"].every(
    (name) => a[name] === b[name]);
  while (run === state.live) {
    try {
      const seen = await api("wait", { scope: state.scope, after: first ? "-" : after });
      mark.className = "on";
      if (!first && seen.head !== after && seen.change && !same(seen.change, last)) {
        changed(seen.change);
      }
      after = seen.head;
      last = seen.change;
      first = false;
    } catch (error) {
      mark.className = "off";
      mark.title = error.message;
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
  }
}

function ours(change) {
  const now = Date.now();
  state.mine = state.mine.filter((entry) => entry.until > now);
  const index = state.mine.findIndex((entry) => entry.path === change.path);
  if (index >= 0) state.mine.splice(index, 1);
  return index >= 0;
}

function changed(change) {
  const p = params();
  document.body.dataset.lastChange = change.commit;
  if (ours(change)) return;
  if (state.editing) {
    if (state.editing.path === change.path) {
      notice(change.path + " was changed meanwhile (" + (change.agent || change.principal
        || "by hand") + "): saving will show both versions.");
    }
    return;
  }
  notice(change.operation + " " + change.path + " by " + (change.agent || change.principal
    || "hand") + ".");
  if (["browse", "doc", "history", "session", "health", undefined].includes(p.view)) show();
}

async function start() {
  if (!bootKey()) {
    await main(failure({ code: "unauthenticated",
      message: "this page needs the address `amux ui` printed" }));
    return;
  }
  try {
    await loadMe();
  } catch (error) {
    await main(failure(error));
    return;
  }
  document.getElementById("scope").addEventListener("change", (event) => {
    state.scope = event.target.value;
    go({ view: "browse", scope: state.scope });
    watch();
  });
  document.getElementById("q").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.target.value.trim()) {
      go({ view: "search", q: event.target.value.trim() });
    }
  });
  for (const anchor of document.querySelectorAll("header a[data-view]")) {
    anchor.addEventListener("click", (event) => {
      event.preventDefault();
      go({ view: anchor.dataset.view });
    });
  }
  window.addEventListener("popstate", show);
  await show();
  watch();
}

start();
