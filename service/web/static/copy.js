// Copy buttons: shown only where scripts run (the text stays selectable without them).
for (const button of document.querySelectorAll("button.copy[data-copy]")) {
  button.hidden = false;
  button.addEventListener("click", async (event) => {
    event.preventDefault();
    const source = document.getElementById(button.dataset.copy);
    if (!source || !navigator.clipboard) return;
    await navigator.clipboard.writeText(source.textContent);
    button.textContent = "copied";
  });
}
