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
