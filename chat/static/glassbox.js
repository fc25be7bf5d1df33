// Small behaviours of the conversation page, kept out of inline handlers so htmx can run
// with eval switched off.
// The page's CSS tells a page with JavaScript (one Stop, in the composer) from one without.
document.documentElement.classList.add("js");
// The question stays in the box until the server has taken it: the box is emptied when the
// question appears in the conversation, and kept when a refusal (or a closed socket) comes.
const sameText = (a, b) => a.replace(/\s+/g, " ").trim() === b.replace(/\s+/g, " ").trim();

document.addEventListener("htmx:wsAfterSend", (event) => {
  const form = event.target.closest("form#composer");
  if (form) form.dataset.pending = form.elements.message.value;
});

document.addEventListener("htmx:wsAfterMessage", () => {
  const form = document.getElementById("composer");
  if (!form || form.dataset.pending === undefined) return;
  const asked = [...document.querySelectorAll("article.message.user .bubble")].pop();
  if (asked && sameText(asked.innerText, form.dataset.pending)) {
    if (sameText(form.elements.message.value, form.dataset.pending)) form.reset();
    delete form.dataset.pending;
  } else if (document.querySelector('#notice[role="alert"]')) {
    delete form.dataset.pending;
  }
});

document.addEventListener("keydown", (event) => {
  const box = event.target;
  if (box.id === "question" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    box.form.requestSubmit();
  }
});

// The composer keeps the focus: on a new page, and after anything is sent from it or from a
// starter (the socket's forms leave the focus on the button that was clicked).
const focusComposer = () => {
  const box = document.getElementById("question");
  if (box && !matchMedia("(pointer: coarse)").matches) box.focus({preventScroll: true});
};
document.addEventListener("htmx:wsAfterSend", (event) => {
  if (event.target.closest("form#composer, ul.starters")) focusComposer();
});

// Esc: closes an open menu or the sidebar's drawer first, else stops the running answer.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || event.isComposing) return;
  const menu = document.querySelector("details.menu[open], details.conversation-tools[open]");
  if (menu) {
    menu.open = false;
    menu.querySelector("summary").focus();
    return;
  }
  if (document.body.classList.contains("sidebar-open")) {
    setSidebar(false);
    return;
  }
  const stop = document.querySelector("#composer .stop-turn");
  if (stop && stop.offsetParent !== null) {
    event.preventDefault();
    stop.click();
  }
});

// A menu closes when the reader clicks elsewhere.
document.addEventListener("click", (event) => {
  for (const menu of document.querySelectorAll("details.menu[open], details.conversation-tools[open]")) {
    if (!menu.contains(event.target)) menu.open = false;
  }
});

// The sidebar: beside the chat on a wide screen (collapsible, remembered), a drawer on a
// narrow one.
const narrow = matchMedia("(max-width: 56rem)");
function setSidebar(shown) {
  const body = document.body;
  if (narrow.matches) {
    body.classList.toggle("sidebar-open", shown);
    document.querySelector(".sidebar-backdrop")?.toggleAttribute("hidden", !shown);
    // Into the drawer, on its first link: focusing the search would open a phone's keyboard.
    if (shown) document.querySelector("#sidebar .new-conversation")?.focus();
  } else {
    body.classList.toggle("sidebar-collapsed", !shown);
    try { localStorage.setItem("glassbox.sidebar", shown ? "shown" : "collapsed"); } catch {}
  }
  document.getElementById("sidebar-toggle")?.setAttribute("aria-expanded", String(shown));
}
const sidebarShown = () => narrow.matches
  ? document.body.classList.contains("sidebar-open")
  : !document.body.classList.contains("sidebar-collapsed");

document.addEventListener("DOMContentLoaded", () => {
  const toggle = document.getElementById("sidebar-toggle");
  if (!toggle) return;
  let remembered = null;
  try { remembered = localStorage.getItem("glassbox.sidebar"); } catch {}
  if (!narrow.matches && remembered === "collapsed") document.body.classList.add("sidebar-collapsed");
  toggle.hidden = false;
  toggle.setAttribute("aria-expanded", String(sidebarShown()));
  narrow.addEventListener("change", () => {
    document.body.classList.remove("sidebar-open");
    toggle.setAttribute("aria-expanded", String(sidebarShown()));
  });
});
document.addEventListener("click", (event) => {
  if (event.target.closest("#sidebar-toggle")) setSidebar(!sidebarShown());
  else if (event.target.closest(".sidebar-backdrop")) setSidebar(false);
});

// The socket says the user's conversations changed (one began, ended, was renamed...): the
// sidebar's list is fetched again, with its search, if any.
document.addEventListener("htmx:oobAfterSwap", (event) => {
  // Another conversation changed, or a turn of this one began (its title comes with it).
  if (!["sidebar-stale", "conversation-title"].includes(event.detail.target?.id)) return;
  const list = document.getElementById("sidebar-list");
  const search = document.getElementById("sidebar-q");
  if (!list || !search) return;
  htmx.trigger(search, "search");
});

// The theme: the system's unless the reader chose, kept in a cookie so the next page is
// drawn in it from the start.
const darkNow = () => {
  const chosen = document.documentElement.dataset.theme;
  return chosen ? chosen === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
};
const labelTheme = (button) => {
  button.textContent = darkNow() ? button.dataset.light : button.dataset.dark;
};
document.addEventListener("DOMContentLoaded", () => {
  const button = document.querySelector(".theme-toggle");
  if (!button) return;
  labelTheme(button);
  button.hidden = false;
});
document.addEventListener("click", (event) => {
  const button = event.target.closest(".theme-toggle");
  if (!button) return;
  const theme = darkNow() ? "light" : "dark";
  document.documentElement.dataset.theme = theme;
  document.cookie = `theme=${theme}; path=/; max-age=31536000; SameSite=Lax`;
  labelTheme(button);
});

// A deep link to a turn (#m-<id>) opens it with its feed expanded, loading it first when it
// is older than the turns the page shows.
document.addEventListener("DOMContentLoaded", () => {
  const match = location.hash.match(/^#m-(\d+)$/);
  if (!match) return;
  const turn = document.getElementById(`m-${match[1]}`);
  if (!turn) {
    const params = new URLSearchParams(location.search);
    if (params.get("from") !== match[1]) {
      params.set("from", match[1]);
      location.replace(`${location.pathname}?${params}${location.hash}`);
    }
    return;
  }
  linkedTurn = turn.id;
  markLinked(turn);
  turn.scrollIntoView({block: "start"});
});

// A linked turn that is still open is drawn again by its socket (as it now stands, once
// htmx has settled the message): it stays the linked one.
let linkedTurn = null;
document.addEventListener("htmx:wsAfterMessage", () => {
  const turn = linkedTurn && document.getElementById(linkedTurn);
  if (turn && !turn.classList.contains("linked")) markLinked(turn);
});

function markLinked(turn) {
  const feed = turn.querySelector("details.feed");
  if (feed) {
    delete feed.dataset.count;  // opened by the link, not by its reader
    feed.open = true;
  }
  turn.classList.add("linked");
}

// An answer drawn again as it stands keeps the feed its reader unfolded: a socket that joins
// a turn (every reconnect does, for the answers the page shows as running) draws it whole,
// and can do so after the answer ended. Only the live feed folds, as its turn ends.
document.addEventListener("htmx:oobBeforeSwap", (event) => {
  const {target, fragment} = event.detail;
  if (!target.matches("article.message.assistant")) return;
  const shown = target.querySelector("details.feed:not(.live)");
  const drawn = fragment.querySelector("details.feed:not(.live)");
  if (!shown?.open || drawn?.id !== shown.id) return;
  drawn.open = true;
  delete drawn.dataset.count;  // this page's reader was counted when they unfolded it
});

// A page whose socket was down while a turn ended (a network cut, a server restart) must not
// stay on "Working…": on every (re)connect it names the answers it still shows as running,
// and the server sends each one as it now stands.
document.addEventListener("htmx:wsOpen", (event) => {
  const running = [...document.querySelectorAll(
    "article.message.assistant.state-streaming, article.message.assistant.state-waiting",
  )]
    .map((article) => Number(article.id.replace("m-", "")));
  if (running.length) event.detail.socketWrapper.send(JSON.stringify({resume: running}));
});

// A socket the server closed for good (logged out elsewhere: 4401; the conversation deleted
// or no longer yours: 4404) is not retried by htmx: the page says so, with the way forward,
// and leaves what was typed in the box.
document.addEventListener("htmx:wsClose", (event) => {
  const code = event.detail.event.code;
  const page = event.target.closest("section.conversation");
  const notice = document.getElementById("notice");
  // data-closed-4401-link is dataset["closed-4401Link"]: a digit after a dash stays as is.
  const text = page && page.dataset[`closed-${code}`];
  if (!text || !notice) return;
  const link = document.createElement("a");
  link.href = page.dataset[`closed-${code}Href`];
  link.textContent = page.dataset[`closed-${code}Link`];
  notice.replaceChildren(document.createTextNode(`${text} `), link);
  notice.className = "notice error";
  notice.setAttribute("role", "alert");
});

// Scrolling: a conversation opens at its latest turn; the page follows the stream while the
// reader is at the bottom, stops when they scroll up, and offers a button back to the latest.
const nearBottom = () =>
  window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
const toLatest = () => window.scrollTo({top: document.documentElement.scrollHeight});
let following = true;

document.addEventListener("DOMContentLoaded", () => {
  if (!document.getElementById("messages")) return;
  // A reload must not put the reader back where they were: the latest turn is what matters.
  history.scrollRestoration = "manual";
  if (!location.hash) toLatest();
});

window.addEventListener("scroll", () => {
  following = nearBottom();
  const button = document.getElementById("latest");
  if (button) button.hidden = following;
}, {passive: true});

document.addEventListener("htmx:wsAfterMessage", () => {
  if (following) toLatest();
});

document.addEventListener("click", (event) => {
  if (event.target.closest("#latest")) toLatest();
});

// The composer's Stop stops the running turn, through that answer's own Stop form.
document.addEventListener("click", (event) => {
  if (!event.target.closest("#composer .stop-turn")) return;
  const stop = document.querySelector(
    "article.state-streaming form.stop, article.state-waiting form.stop",
  );
  if (stop) stop.requestSubmit();
});

// A model that is thinking: its 💭 line counts the seconds since it appeared on this page.
setInterval(() => {
  for (const counter of document.querySelectorAll(".line .elapsed")) {
    counter.dataset.since ||= String(Date.now());
    const elapsed = Math.floor((Date.now() - Number(counter.dataset.since)) / 1000);
    counter.textContent = elapsed ? counter.dataset.format.replace("%(seconds)s", elapsed) : "";
  }
}, 500);

// Copy puts the answer's Markdown, as the model wrote it, on the clipboard.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.copy[data-source]");
  if (!button) return;
  const label = button.textContent;
  try {
    const response = await fetch(button.dataset.source, {credentials: "same-origin"});
    if (!response.ok) throw new Error(String(response.status));
    await navigator.clipboard.writeText(await response.text());
    button.textContent = `✓ ${button.dataset.copied}`;
  } catch {
    button.textContent = button.dataset.failed;
  }
  document.getElementById("announcer").textContent = button.textContent;
  setTimeout(() => { button.textContent = label; }, 2000);
});

// Seed 002 asks how often folded feeds are read: expanding one tells the server, once per page
// (it keeps a count and the first time, nothing else).
document.addEventListener("toggle", (event) => {
  const feed = event.target;
  if (!(feed instanceof HTMLDetailsElement) || !feed.open || !feed.dataset.count) return;
  const url = feed.dataset.count;
  delete feed.dataset.count;
  const token = document.querySelector("input[name=csrfmiddlewaretoken]");
  fetch(url, {
    method: "POST",
    credentials: "same-origin",
    keepalive: true,
    headers: token ? {"X-CSRFToken": token.value} : {},
  }).catch(() => {});
}, true);  // toggle does not bubble
