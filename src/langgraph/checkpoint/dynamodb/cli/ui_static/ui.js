// langgraph-dynamodb ui: load collapsed values on demand. The only script; no inline code (CSP).
// Values are set with textContent, never parsed as HTML: stored state is untrusted.
"use strict";
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.load[data-url]");
  if (!button) return;
  const target = document.getElementById(button.dataset.target);
  button.disabled = true;
  button.textContent = "loading…";
  try {
    const resp = await fetch(button.dataset.url, { credentials: "same-origin" });
    const text = await resp.text();
    if (!resp.ok) throw new Error(text);
    target.textContent = text;
    target.classList.remove("collapsed");
    target.dataset.loaded = "1";
    button.remove();
  } catch (err) {
    button.disabled = false;
    button.textContent = "failed: " + String(err.message || err).slice(0, 200) + " (retry)";
  }
});
