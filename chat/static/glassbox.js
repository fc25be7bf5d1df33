// Small behaviours of the conversation page, kept out of inline handlers so htmx can run
// with eval switched off.
document.addEventListener("htmx:wsAfterSend", (event) => {
  const form = event.target.closest("form#composer");
  if (form) form.reset();
});

document.addEventListener("keydown", (event) => {
  const box = event.target;
  if (box.id === "question" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    box.form.requestSubmit();
  }
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
  const feed = document.getElementById(`feed-${match[1]}`);
  if (feed) feed.open = true;
  turn.classList.add("linked");
  turn.scrollIntoView({block: "start"});
});

// A page whose socket was down while a turn ended (a network cut, a server restart) must not
// stay on "Working…": on every (re)connect it names the answers it still shows as running,
// and the server sends each one as it now stands.
document.addEventListener("htmx:wsOpen", (event) => {
  const running = [...document.querySelectorAll("article.message.assistant.state-streaming")]
    .map((article) => Number(article.id.replace("m-", "")));
  if (running.length) event.detail.socketWrapper.send(JSON.stringify({resume: running}));
});
